"""Option-format and option-order variants (probes/choices.py) and the base prompt (templates.py)."""

from __future__ import annotations

import pytest

from robusteval.labels import LABEL_STYLES
from robusteval.probes.choices import format_options, gold_swaps, identity
from robusteval.probes.design import expand
from robusteval.probes.templates import BASE_TEMPLATE, render
from robusteval.types import Item

ITEM = Item(id="t1", question="Which fruit is usually yellow when ripe?",
            options=("Cherry", "Banana", "Plum", "Grape"), answer=1, category="food")
ITEM3 = Item(id="t3", question="Which of these is a liquid at room temperature?",
             options=("Iron", "Water", "Salt"), answer=2)

EXPECTED_LABELS = {
    "A:": ("A", "B", "C", "D"),
    "A)": ("A", "B", "C", "D"),
    "A.": ("A", "B", "C", "D"),
    "1.": ("1", "2", "3", "4"),
    "a:": ("a", "b", "c", "d"),
    "I:": ("I", "II", "III", "IV"),
}


def format_variants(item: Item):
    return expand(item, ["format"])


def order_variants(item: Item):
    return expand(item, ["order"])


def prompt(v) -> str:
    assert len(v.messages) == 1 and v.messages[0].role == "user"
    return v.messages[0].content


# --- format family -----------------------------------------------------------------------------


def test_format_gives_six_label_styles_in_identity_order():
    variants = format_variants(ITEM)
    assert [v.name for v in variants] == list(EXPECTED_LABELS)
    for v in variants:
        assert v.family == "format" and v.item_id == "t1"
        assert v.labels == EXPECTED_LABELS[v.name]
        assert v.order == (0, 1, 2, 3)


@pytest.mark.parametrize("name", list(EXPECTED_LABELS))
def test_format_prompt_lists_options_with_styled_labels(name):
    v = next(v for v in format_variants(ITEM) if v.name == name)
    text = prompt(v)
    sep = LABEL_STYLES[name].separator
    assert ITEM.question in text
    lines = [f"{label}{sep} {option}" for label, option in zip(v.labels, ITEM.options)]
    for line in lines:
        assert f"\n{line}" in text
    # options appear in their original order
    positions = [text.index(f"\n{line}") for line in lines]
    assert positions == sorted(positions)
    labels = v.labels
    assert f"where [label] is one of {labels[0]}, {labels[1]}, {labels[2]} or {labels[3]}." in text
    assert "The best answer is [label]" in text


def test_three_option_item_format_labels_stop_at_third():
    variants = format_variants(ITEM3)
    assert len(variants) == 6
    assert {v.name: v.labels[-1] for v in variants} == {"A:": "C", "A)": "C", "A.": "C", "1.": "3",
                                                        "a:": "c", "I:": "III"}
    for v in variants:
        assert len(v.labels) == 3
        text = prompt(v)
        assert "IV" not in text and "D." not in text and "4." not in text
        assert f"one of {v.labels[0]}, {v.labels[1]} or {v.labels[2]}." in text


# --- order family ------------------------------------------------------------------------------


@pytest.mark.parametrize("item", [ITEM, ITEM3, Item("t0", "First is gold?", ("yes", "no", "maybe", "never"), 0)])
def test_order_moves_gold_to_each_position_with_one_swap(item):
    n = len(item.options)
    variants = order_variants(item)
    assert len(variants) == n
    assert [v.name for v in variants] == [f"gold@{chr(65 + k)}" for k in range(n)]
    for k, v in enumerate(variants):
        assert v.family == "order"
        assert v.labels == tuple("ABCDEFGHIJ"[:n])
        assert v.order.index(item.answer) == k
        assert sorted(v.order) == list(range(n))  # each option exactly once
        moved = [i for i, o in enumerate(v.order) if o != i]
        assert moved == ([] if k == item.answer else sorted([k, item.answer]))
        # the prompt shows the options in the permuted order, gold under label k
        text = prompt(v)
        for pos, original in enumerate(v.order):
            assert f"\n{v.labels[pos]}. {item.options[original]}" in text
        assert f"\n{v.labels[k]}. {item.options[item.answer]}" in text
        assert v.original_index(k) == item.answer


def test_three_option_item_gives_three_order_variants():
    assert [v.order for v in order_variants(ITEM3)] == [(2, 1, 0), (0, 2, 1), (0, 1, 2)]


def test_order_variant_with_gold_in_place_equals_base_format_variant():
    base = next(v for v in format_variants(ITEM) if v.name == "A.")
    in_place = order_variants(ITEM)[ITEM.answer]
    assert in_place.messages == base.messages  # same request, so the engine asks it only once
    assert in_place.order == base.order and in_place.labels == base.labels
    others = [v for k, v in enumerate(order_variants(ITEM)) if k != ITEM.answer]
    assert all(v.messages != base.messages for v in others)


def test_gold_swaps_and_format_options_directly():
    assert identity(ITEM3) == (0, 1, 2)
    assert gold_swaps(ITEM3) == [("gold@A", (2, 1, 0)), ("gold@B", (0, 2, 1)), ("gold@C", (0, 1, 2))]
    labels, block = format_options(ITEM3, LABEL_STYLES["A)"], (1, 2, 0))
    assert labels == ("A", "B", "C")
    assert block == "A) Water\nB) Salt\nC) Iron"
    labels, block = format_options(ITEM3, LABEL_STYLES["I:"], (0, 1, 2))
    assert labels == ("I", "II", "III")
    assert block.splitlines() == ["I: Iron", "II: Water", "III: Salt"]


def test_expand_is_stable_and_in_family_order():
    variants = expand(ITEM, ["order", "format"])
    assert [v.family for v in variants] == ["order"] * 4 + ["format"] * 6
    assert variants == expand(ITEM, ["order", "format"])
    assert [v.family for v in expand(ITEM, ["format"])] == ["format"] * 6


# --- template ----------------------------------------------------------------------------------


def test_render_label_list_and_placeholders():
    text = render(BASE_TEMPLATE, question="Q?", options="A. x\nB. y", labels=("A", "B"), category=None)
    assert "one of A or B." in text
    assert text.endswith("Question: Q?\n\nA. x\nB. y")
    custom = render("{category}|{label_list}", question="", options="", labels=("1", "2", "3"), category=None)
    assert custom == "general knowledge|1, 2 or 3"
    assert render("{category}", question="", options="", labels=("a", "b"), category="law") == "law"


# --- the answer placeholder is never a label ----------------------------------------------------


def many_options(n: int) -> Item:
    return Item(id=f"n{n}", question=f"Which of {n} numbers is the largest?", options=tuple(str(k) for k in range(n)),
                answer=n - 1, category="math")


@pytest.mark.parametrize("n", [10, 16])
@pytest.mark.parametrize("style", list(LABEL_STYLES))
def test_a_parroted_placeholder_reads_as_invalid(style, n):
    """With 10 options the roman labels reach X; the instruction's placeholder must not be one of them
    (nor any label of another style the reader maps back): a model that repeats the instruction of
    any bundled template, or just its closing phrase, chose nothing."""
    from robusteval.probes.design import Design
    from robusteval.probes.templates import load_templates
    from robusteval.readers.robusteval import read_label

    item = many_options(n)
    variants = [v for v in expand(item, ["format", "prompt"], Design(load_templates())) if v.labels[0] ==
                LABEL_STYLES[style].labels[0]]
    assert variants and all(len(v.labels) == n for v in variants)
    if n >= 10 and style == "I:":
        assert "X" in variants[0].labels
    for v in variants:
        text = prompt(v)
        assert "The best answer is [label]" in text
        parrot = text[text.index("The best answer is"):]
        assert read_label(parrot, v.labels).status == "invalid", (v.name, parrot[:80])
        assert read_label("The best answer is [label].", v.labels).status == "invalid"


def test_a_template_whose_placeholder_is_a_label_is_refused(tmp_path):
    from robusteval.errors import UserError
    from robusteval.probes.design import Design, template_styles
    from robusteval.probes.template_check import check_templates
    from robusteval.probes.templates import load_templates
    from robusteval.readers import get_reader

    def check(path):
        design = Design(load_templates(str(path)))
        check_templates(template_styles(["format", "prompt"], (), design), get_reader("robusteval"), 10)
        return design

    path = tmp_path / "t.yaml"
    path.write_text("templates:\n  - name: roman\n    template: 'Q: {question}\\n{options}\\n"
                    "End with \"The best answer is X\", where X is one of {label_list}.'\n", encoding="utf-8")
    with pytest.raises(UserError) as err:
        check(path)
    assert "template 'roman'" in str(err.value) and "option 10" in str(err.value) and "[label]" in str(err.value)
    path.write_text("templates:\n  - name: word\n    template: 'Q: {question}\\n{options}\\n"
                    "End with \"The best answer is [label]\", [label] one of {label_list}.'\n", encoding="utf-8")
    assert [t.name for t in check(path).templates] == ["word"]
