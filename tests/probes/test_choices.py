"""Option format and order perturbations."""

from __future__ import annotations

from robusteval.probes import LABEL_STYLES, expand
from robusteval.types import Item

ITEM = Item("i1", "Which is heaviest?", ("feather", "brick", "leaf", "coin"), answer=1, category="physics")


def format_variants(item):
    return expand(item, ["format"])


def order_variants(item):
    return expand(item, ["order"])


def test_format_family_six_styles_same_content():
    variants = format_variants(ITEM)
    assert [v.name for v in variants] == ["A:", "A)", "A.", "1.", "a:", "I:"]
    for v, style in zip(variants, LABEL_STYLES.values()):
        assert v.order == (0, 1, 2, 3) and v.labels == style.labels[:4]
        prompt = v.messages[0].content
        assert "Which is heaviest?" in prompt
        for label, option in zip(v.labels, ITEM.options):
            assert f"{label}{style.separator} {option}" in prompt
        assert f"one of {v.labels[0]}, {v.labels[1]}, {v.labels[2]} or {v.labels[3]}" in prompt
    assert "I: feather" in variants[-1].messages[0].content and "IV: coin" in variants[-1].messages[0].content


def test_order_family_moves_gold_to_each_position():
    variants = order_variants(ITEM)
    assert [v.name for v in variants] == ["gold@A", "gold@B", "gold@C", "gold@D"]
    for k, v in enumerate(variants):
        assert v.order.index(ITEM.answer) == k
        assert sorted(v.order) == [0, 1, 2, 3]
        moved = [i for i, o in enumerate(v.order) if i != o]
        assert len(moved) in (0, 2)  # one swap, or identity when gold already sits at k


def test_fewer_options_give_fewer_variants_and_labels():
    item = Item("i2", "Pick one", ("x", "y", "z"), answer=2)
    assert len(order_variants(item)) == 3
    for v in format_variants(item):
        assert len(v.labels) == 3 and "D" not in v.labels and "IV" not in v.labels


def test_identity_order_variant_is_the_base_format_request():
    variants = expand(ITEM, ["order", "format"])
    identity = next(v for v in variants if v.family == "order" and v.order == (0, 1, 2, 3))
    base = next(v for v in variants if v.family == "format" and v.name == "A.")
    assert identity.messages == base.messages  # so the engine asks it once
