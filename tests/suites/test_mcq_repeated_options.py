"""The mcq suite on real AGIEval rows that repeat an option's text (aqua-rat row 118: "8.75" at A and
at C, the gold): no two prompts of one question scored against different golds, and a reply that
chooses the gold's text is right wherever that text is shown."""

from __future__ import annotations

from collections import defaultdict

import pytest

from robusteval.data.mcq import load_items
from robusteval.metrics.mcq import family_metrics
from robusteval.probes.design import expand
from robusteval.suites.mcq.ask import _sample
from robusteval.types import Response


@pytest.fixture(scope="module")
def aqua(realdata):
    return load_items(str(realdata / "agieval" / "aqua-rat.jsonl"))


def reply(label: str) -> Response:
    return Response(key=f"k-{label}", text=f"The best answer is {label}")


def test_row_118_is_the_repeated_gold(aqua):
    item = aqua[117]
    assert item.options == ("8.75", "8.79", "8.75", "8.71", "8.72") and item.answer == 2


@pytest.mark.parametrize("families", [["order"], ["order", "format"]])
def test_no_prompt_is_scored_against_two_golds(aqua, families):
    """Over the whole file: one prompt text, one gold label (and in the order family, one variant)."""
    for item in aqua:
        variants = expand(item, families)
        golds = defaultdict(set)
        for v in variants:
            golds[v.messages[-1].content].add(v.labels[v.order.index(item.answer)])
        assert all(len(g) == 1 for g in golds.values()), item.source
        order = [v for v in variants if v.family == "order"]
        assert len({v.messages[-1].content for v in order}) == len(order), item.source


def test_row_118_order_variants_and_scoring(aqua):
    item = aqua[117]
    order = expand(item, ["order"])
    # gold@A would show the same texts as the published order (8.75 at A and C): asked once, as gold@C
    assert [v.name for v in order] == ["gold@B", "gold@C", "gold@D", "gold@E"]
    published = next(v for v in order if v.name == "gold@C")
    for label, correct in (("A", True), ("C", True), ("B", False)):
        s = _sample("m", item, published, 0, reply(label))
        assert s.correct is correct, label
    a, c = (_sample("m", item, published, 0, reply(x)) for x in "AC")
    assert a.answer_option == c.answer_option == a.gold_option == 0  # one answer, whichever copy
    # a model that always picks the text 8.75 is right and consistent in every variant
    samples = [_sample("m", item, v, 0, reply(v.labels[v.order.index(0)])) for v in order]
    assert all(s.correct for s in samples)
    fm = family_metrics(samples, "order", [item.id], n_resamples=10).as_dict()
    assert fm["accuracy"]["value"] == 1.0 and fm["consistency_rate"]["value"] == 1.0
