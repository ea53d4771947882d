"""Templates against readers before any request, and SCORE's own templates (`--templates score`)."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.probes.design import Design, expand, template_styles
from robusteval.probes.fewshot import ShotPool
from robusteval.probes.template_check import check_templates
from robusteval.probes.templates import BASE, Template, example_answer, load_template_set
from robusteval.readers import READERS, get_reader
from robusteval.types import Item

MMLU_PRO_COT = Template("mmlu-pro-cot", 'Think step by step and then output the answer in the format of "The answer is '
                                        '(X)" at the end.\n\n{question}\n{options}')


def passes(families, design, reader, n=10):
    try:
        check_templates(template_styles(families, (), design), get_reader(reader), n)
    except UserError:
        return False
    return True


@pytest.mark.parametrize("spec,data", [(None, None), ("score", "mmlu-pro"), ("score", "agieval-lsat-ar")])
def test_bundled_templates_and_every_reader(spec, data):
    templates, base = load_template_set(spec, data)
    design = Design(templates, base=base)
    for reader in READERS:
        # inspect_ai's rule reads "ANSWER: X" only: a run asking for "The best answer is X" is refused
        assert passes(["order", "prompt"], design, reader) == (reader != "inspect"), reader
        # the mmlu-pro chain reads letters only: the format family's 1., a: and I: styles are refused
        assert passes(["format"], design, reader) == (reader not in ("mmlu-pro", "inspect")), reader


def test_the_answer_is_x_needs_a_reader_that_reads_it():
    design = Design((MMLU_PRO_COT,))
    with pytest.raises(UserError) as err:
        check_templates(template_styles(["prompt"], (), design), get_reader("robusteval"), 4)
    message = str(err.value)
    assert "template 'mmlu-pro-cot'" in message and "--reader robusteval" in message
    assert "'The answer is (A).' reads as invalid" in message and "--reader mmlu-pro or lenient reads it" in message
    assert passes(["prompt"], design, "mmlu-pro", n=10)
    # with 10 options lenient would read the parroted "(X)" as option 10 (roman X): refused
    assert passes(["prompt"], design, "lenient", n=4) and not passes(["prompt"], design, "lenient", n=10)


def test_a_template_without_an_answer_phrase_is_checked_with_a_bare_label():
    bare = Template("bare", "Reply with the letter only.\n{question}\n{options}")
    assert example_answer(bare, "C") == "C"
    design = Design((bare,))
    assert [r for r in READERS if passes(["prompt"], design, r)] == ["score", "mmlu-pro", "lenient"]


def test_example_answers_in_the_templates_words():
    assert example_answer(BASE, "B") == "The best answer is B."
    assert example_answer(MMLU_PRO_COT, "B") == "The answer is (B)."
    templates, base = load_template_set("score", "mmlu-pro")
    assert example_answer(base, "J") == "The best answer is (J)."
    assert [example_answer(t, "B") for t in templates][:4] == [
        "The best answer is B.", "The best answer is (B).", "The best answer is B.", "The best answer is B."]


def test_score_templates_are_scores_own():
    templates, base = load_template_set("score", "mmlu-pro")
    assert [t.name for t in templates] == [f"p{i}" for i in range(10)]
    assert all(t.style == "A:" and t.options_lead == "\n" for t in (*templates, base))
    assert templates[0].text.startswith("{question}{options}\nExamine the question and choose the correct answer")
    assert base.text.startswith("For the multiple-choice question related to {category}, which option (A-J) is "
                                "correct?.\n\nQuestion: {question}{options}\n\nEnd the answer with the following:")
    agieval, agieval_base = load_template_set("score", "agieval-sat-math")
    assert "(A-E)" in agieval_base.text and len(agieval) == 10 and agieval[0].text != templates[0].text
    assert load_template_set("score-agieval")[0] == agieval


def test_score_prompts_render_as_score_does():
    """SCORE's doc_to_text: the question, then every option as "\\n{letter}: {option}"."""
    templates, base = load_template_set("score", "mmlu-pro")
    item = Item(id="q", question="Which is largest?", options=("1", "3", "2"), answer=1, category="math")
    design = Design(templates, base=base)
    by_name = {v.name: v for v in expand(item, ["prompt", "order"], design)}
    p0 = by_name["p0"].messages[-1].content
    assert p0.startswith("Which is largest?\nA: 1\nB: 3\nC: 2\nExamine the question")
    gold_at_a = by_name["gold@A"]
    assert gold_at_a.labels == ("A", "B", "C")
    assert gold_at_a.messages[-1].content.startswith(
        "For the multiple-choice question related to math, which option (A-J) is correct?.\n\n"
        "Question: Which is largest?\nA: 3\nB: 1\nC: 2\n\nEnd the answer with the following:\nThe best answer is ")


def test_fewshot_examples_answer_in_the_templates_words():
    item = Item(id="q", question="Q?", options=("x", "y"), answer=0)
    shot = Item(id="s", question="S?", options=("u", "v"), answer=1)
    design = Design((MMLU_PRO_COT,), shots=ShotPool((shot,), "test"), n_shots=1)
    (v,) = expand(item, ["fewshot"], design)
    assert [m.content for m in v.messages if m.role == "assistant"] == ["The answer is (B)."]


def test_a_template_file_gives_style_lead_and_order(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text('order:\n  name: mine\n  style: "1."\n  options_lead: "\\n"\n  template: "Q: {question}{options}\\n'
                    'The best answer is [label]."\ntemplates:\n  - name: a\n    template: "{question}\\n{options}\\n'
                    'The best answer is [label]."\n', encoding="utf-8")
    templates, base = load_template_set(str(path))
    assert base == Template("mine", "Q: {question}{options}\nThe best answer is [label].", "1.", "\n")
    assert templates == (Template("a", "{question}\n{options}\nThe best answer is [label]."),)
    item = Item(id="q", question="Q?", options=("x", "y"), answer=0)
    (v,) = expand(item, ["order"], Design(templates, base=base))[:1]
    assert v.messages[-1].content == "Q: Q?\n1. x\n2. y\nThe best answer is [label]." and v.labels == ("1", "2")
    path.write_text('templates:\n  - name: a\n    style: "A-"\n    template: "{question} {options}"\n',
                    encoding="utf-8")
    with pytest.raises(UserError) as err:
        load_template_set(str(path))
    assert "template 'a' has style 'A-'; one of A:, A), A., 1., a:, I:" in str(err.value)
