"""mcq scoring: replies mapped back through each variant's permutation, failures left out."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.probes import expand
from robusteval.suites.mcq import _sample, metrics
from robusteval.types import Item, Response

ITEMS = [Item(f"i{n}", f"Question {n}?", ("w", "x", "y", "z"), answer=n % 4, category=f"c{n % 2}") for n in range(6)]


def _run(reply, families=("order", "format")):
    """Build samples as the suite would, with ``reply(item, variant)`` giving the text (None = failed)."""
    samples = []
    for item in ITEMS:
        for v in expand(item, list(families)):
            text = reply(item, v)
            response = Response(key="k", text=text, error=None if text is not None else "HTTP 500")
            samples.append(_sample("m", item, v, 0, response))
    return samples, metrics(samples, ITEMS, families, seed=0, )


def test_same_content_is_fully_consistent_across_orders():
    # always choose the original option 0, wherever it is shown
    samples, m = _run(lambda item, v: f"The best answer is {v.labels[v.order.index(0)]}")
    assert m["order"]["consistency_rate"]["value"] == 1.0
    assert m["format"]["consistency_rate"]["value"] == 1.0
    expected = sum(item.answer == 0 for item in ITEMS) / len(ITEMS)
    assert m["order"]["accuracy"]["value"] == pytest.approx(expected)
    assert all(s.answer_option == 0 for s in samples)


def test_always_a_is_position_bias():
    _, m = _run(lambda item, v: "The best answer is A", families=("order",))
    acc = {name: v["accuracy"]["value"] for name, v in m["order"]["variants"].items()}
    assert acc == {"gold@A": 1.0, "gold@B": 0.0, "gold@C": 0.0, "gold@D": 0.0}
    assert m["order"]["consistency_rate"]["value"] < 1.0
    assert m["order"]["spread"]["value"] == 1.0
    assert "macro_accuracy" in m["order"]  # two categories


def test_failed_are_excluded_and_invalid_counted_wrong():
    def reply(item, v):
        if v.name == "gold@B":
            return None
        if v.name == "gold@C":
            return "no idea"
        return f"The best answer is {v.labels[v.order.index(item.answer)]}"  # always right

    samples, m = _run(reply, families=("order",))
    order = m["order"]
    assert order["failed"] == len(ITEMS) and order["invalid"] == len(ITEMS)
    assert order["variants"]["gold@B"]["accuracy"]["value"] is None
    assert order["variants"]["gold@B"]["answered"] == 0
    assert order["variants"]["gold@C"]["accuracy"]["value"] == 0.0
    assert order["accuracy"]["value"] == pytest.approx(2 / 3)  # 2 right of 3 answered per item
    assert all(s.correct is None for s in samples if s.variant == "gold@B")


def test_single_category_has_no_macro():
    items = [Item("a", "Q?", ("p", "q"), 0), Item("b", "Q2?", ("p", "q"), 1)]
    samples = [_sample("m", it, v, 0, Response("k", "The best answer is A")) for it in items
               for v in expand(it, ["format"])]
    assert "macro_accuracy" not in metrics(samples, items, ("format",))["format"]


def test_canonical_agreement_differs_from_naive_label_agreement():
    from robusteval.metrics.consistency import consistency_rate
    from robusteval.suites.mcq import matrices

    samples, m = _run(lambda item, v: "The best answer is A", families=("order",))
    # naive: every variant said "A", so labels agree perfectly
    labels = np.array([[0.0 for s in samples if s.item_id == it.id] for it in ITEMS])
    assert consistency_rate(labels) == 1.0
    # canonical: position A shows option 0 except where a swap moved something else there. Gold not at
    # 0: gold@A shows the gold, the other three show option 0 (3 of 6 pairs agree). Gold at 0: each
    # gold@k shows option k at A, four different options (0 of 6 pairs agree).
    canonical = matrices(samples, "order", [it.id for it in ITEMS]).answers
    expected = np.mean([3 / 6 if it.answer != 0 else 0.0 for it in ITEMS])
    assert consistency_rate(canonical) == pytest.approx(expected)
    assert m["order"]["consistency_rate"]["value"] == pytest.approx(expected) and expected < 1.0


def test_position_bias_and_invalid_rate():
    _, m = _run(lambda item, v: "The best answer is " + ("A" if v.name != "gold@D" else "X"), families=("order",))
    bias = m["order"]["position_bias"]
    assert bias["A"]["chosen"]["value"] == 1.0 and bias["B"]["chosen"]["value"] == 0.0
    assert bias["A"]["correct"] == pytest.approx(0.25)
    assert m["order"]["variants"]["gold@D"]["invalid_rate"]["value"] == 1.0
    assert m["order"]["variants"]["gold@A"]["invalid_rate"]["value"] == 0.0
