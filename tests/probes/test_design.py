"""The prompt and fewshot families, their templates, and crossed designs."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.probes.design import Design, expand
from robusteval.probes.fewshot import ShotPool
from robusteval.probes.templates import BASE_TEMPLATE, load_templates
from robusteval.types import Item

ITEM = Item("i1", "Which is heaviest?", ("feather", "brick", "leaf", "coin"), answer=1, category="physics")
POOL = ShotPool(tuple(Item(f"d{n}", f"Dev question {n}?", ("w", "x", "y", "z"), answer=n % 4,
                           category="physics" if n < 3 else "history") for n in range(8)), "test pool")


def test_bundled_templates():
    templates = load_templates()
    assert len(templates) == 10 and len({t.name for t in templates}) == 10
    assert templates[0].text == BASE_TEMPLATE  # shared with format/order: asked once
    texts = [t.text for t in templates]
    assert all("The best answer is [label]" in t for t in texts)
    assert any("{category}" in t for t in texts) and any("{category}" not in t for t in texts)
    assert any("step by step" in t for t in texts)
    assert any(t.index("{question}") < t.index("Answer") for t in texts if "Answer" in t)


def test_prompt_family_one_variant_per_template():
    variants = expand(ITEM, ["prompt"], Design(load_templates()))
    assert [v.name for v in variants] == [t.name for t in load_templates()]
    assert len({v.messages for v in variants}) == 10
    assert all(v.order == (0, 1, 2, 3) and v.labels == ("A", "B", "C", "D") for v in variants)
    assert "physics" in next(v for v in variants if v.name == "with-subject").messages[0].content


@pytest.mark.parametrize("body, message", [
    ("templates: []", "expected 'templates:'"),
    ("templates:\n  - name: x\n    template: 'no question here {options}'", r"lacks \['question'\]"),
    ("templates:\n  - name: x\n    template: '{question} {options} {colour}'", "unknown placeholder"),
    ("templates: [unclosed", "malformed YAML"),
])
def test_bad_template_files(tmp_path, body, message):
    f = tmp_path / "t.yaml"
    f.write_text(body)
    with pytest.raises(UserError, match=message):
        load_templates(str(f))


def test_fewshot_multiturn_and_single_prompt():
    design = Design(load_templates()[:2], POOL, n_shots=3, multiturn=True)
    v = expand(ITEM, ["fewshot"], design)[0]
    roles = [m.role for m in v.messages]
    assert roles == ["user", "assistant"] * 3 + ["user"] and v.name == "base+3shot"
    assert all(m.content.startswith("The best answer is ") for m in v.messages[1::2])
    shots = [m.content for m in v.messages[:-1:2]]
    assert all("Dev question" in s for s in shots) and "Which is heaviest?" in v.messages[-1].content
    # same category first: the three physics dev questions
    assert ({s.split("Question: ")[1].split("?")[0] for s in shots}
            == {"Dev question 0", "Dev question 1", "Dev question 2"})
    single = expand(ITEM, ["fewshot"], Design(load_templates()[:1], POOL, n_shots=3, multiturn=False))[0]
    assert len(single.messages) == 1 and single.messages[0].content.count("The best answer is") >= 4
    again = expand(ITEM, ["fewshot"], design)[0]
    assert again.messages == v.messages  # seeded: the same shots every time


def test_shots_never_include_the_question_and_fill_from_other_categories():
    pool = ShotPool((ITEM, *POOL.items), "pool")
    picked = pool.pick(ITEM, 5)
    assert ITEM not in picked and len(picked) == 5
    assert sum(s.category == "physics" for s in picked) == 3


def test_cross_format_order_is_the_full_design():
    variants = expand(ITEM, [], Design(), cross=("format", "order"))
    assert len(variants) == 6 * 4 and {v.family for v in variants} == {"format×order"}
    names = {v.name for v in variants}
    assert "1.|gold@C" in names and "A:|gold@A" in names
    v = next(v for v in variants if v.name == "I:|gold@D")
    assert v.labels == ("I", "II", "III", "IV") and v.order.index(ITEM.answer) == 3
    # the crossed A.|gold@B (identity) is the same request as the A. format variant
    base = expand(ITEM, ["format"])[2]
    assert next(v for v in variants if v.name == "A.|gold@B").messages == base.messages
