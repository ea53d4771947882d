"""mcq suite scoring without a model: fake replies read through `_sample`, then the metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robusteval.metrics.mcq import family_metrics, matrices, metrics
from robusteval.probes.design import expand
from robusteval.suites.mcq.ask import _sample
from robusteval.types import Item, Response

ITEMS = [
    Item("q1", "Which fruit is usually yellow when ripe?", ("Cherry", "Banana", "Plum", "Grape"), 1, "food"),
    Item("q2", "Which of these animals can fly?", ("Eagle", "Horse", "Snail", "Whale"), 0, "animals"),
    Item("q3", "Which season is usually the coldest?", ("Summer", "Spring", "Autumn", "Winter"), 3, "animals"),
]
N_BOOT = 100


def as_json(result):
    """Typed family metrics as results.json holds them."""
    return {family: fm.as_dict() for family, fm in result.items()}


def reply(label: str) -> Response:
    return Response(key=f"k-{label}", text=f"Thinking... The best answer is {label}.")


def run_fake(policy, families=("order", "format"), items=ITEMS):
    """Every variant of every item answered by ``policy(item, variant) -> Response``."""
    return [_sample("fake", item, v, 0, policy(item, v)) for item in items for v in expand(item, list(families))]


def pick_content(content_of):
    """A model that always picks the same *content* (wherever it is shown, whatever its label)."""
    def policy(item, v):
        position = v.order.index(content_of(item))
        return reply(v.labels[position])
    return policy


def always(label_index: int):
    return lambda item, v: reply(v.labels[label_index])


def by_variant(result):
    return {name: d["accuracy"]["value"] for name, d in result["variants"].items()}


# --- _sample ------------------------------------------------------------------------------------


def test_sample_maps_the_shown_label_back_to_content():
    item = ITEMS[0]
    gold_at_a = expand(item, ["order"])[0]
    assert gold_at_a.order == (1, 0, 2, 3)
    s = _sample("m", item, gold_at_a, 0, reply("B"))  # B now shows Cherry
    assert (s.status, s.answer_label, s.answer_option, s.correct) == ("ok", "B", 0, False)
    assert s.gold_label == "A" and s.gold_option == 1
    s = _sample("m", item, gold_at_a, 0, reply("A"))
    assert (s.answer_option, s.correct) == (1, True)
    assert s.family == "order" and s.variant == "gold@A" and s.category == "food"
    assert s.prompt == gold_at_a.messages[-1].content and "Banana" in s.prompt


def test_sample_failed_and_invalid():
    item, v = ITEMS[0], expand(ITEMS[0], ["format"])[0]
    failed = _sample("m", item, v, 0, Response(key="k", text=None, error="HTTP 500"))
    assert (failed.status, failed.correct, failed.answer_option, failed.error) == ("failed", None, None, "HTTP 500")
    invalid = _sample("m", item, v, 0, Response(key="k", text="I am not sure."))
    assert (invalid.status, invalid.correct, invalid.answer_option) == ("invalid", False, None)


# --- matrices -----------------------------------------------------------------------------------


def test_content_consistent_model_has_constant_answers_despite_changing_labels():
    samples = run_fake(pick_content(lambda item: 2))  # always the third original option (wrong for all)
    order_labels = [s.answer_label for s in samples if s.family == "order" and s.item_id == "q1"]
    assert order_labels == ["C", "C", "B", "C"]  # labels differ (Plum moves when it is swapped with gold)...
    assert len(set(order_labels)) > 1
    m = matrices(samples, "order", [i.id for i in ITEMS])
    assert m.variants == ["gold@A", "gold@B", "gold@C", "gold@D"]
    np.testing.assert_array_equal(m.answers, np.full((3, 4), 2.0))  # ...content does not
    np.testing.assert_array_equal(m.correct, np.zeros((3, 4)))
    assert list(m.categories) == ["food", "animals", "animals"]


def test_matrices_leave_failed_cells_out_and_mark_invalid():
    def policy(item, v):
        if item.id == "q1" and v.name == "gold@B":
            return Response(key="x", text=None, error="timeout")
        if item.id == "q2" and v.name == "gold@C":
            return Response(key="y", text="no idea")
        return pick_content(lambda it: it.answer)(item, v)
    m = matrices(run_fake(policy, ("order",)), "order", [i.id for i in ITEMS])
    assert math.isnan(m.correct[0, 1]) and math.isnan(m.answers[0, 1])
    assert m.correct[1, 2] == 0.0 and m.answers[1, 2] == -1
    assert np.nansum(m.correct) == 10  # 12 cells, one failed, one invalid


def test_matrices_average_repeated_samples():
    item, v = ITEMS[0], expand(ITEMS[0], ["format"])[0]
    samples = [_sample("m", item, v, 0, reply("B")), _sample("m", item, v, 1, reply("C"))]
    m = matrices(samples, "format", ["q1"])
    assert m.correct.shape == (1, 1) and m.correct[0, 0] == 0.5
    np.testing.assert_array_equal(m.answers, [[1.0, 2.0]])  # one column per sample


# --- family_metrics / metrics -------------------------------------------------------------------


def test_same_content_is_fully_consistent_in_order_family():
    samples = run_fake(pick_content(lambda item: item.answer))
    ids = [i.id for i in ITEMS]
    order = family_metrics(samples, "order", ids, n_resamples=N_BOOT).as_dict()
    assert order["consistency_rate"]["value"] == 1.0
    assert order["accuracy"]["value"] == 1.0
    assert order["spread"]["value"] == 0.0
    assert order["invalid"] == 0 and order["failed"] == 0 and order["samples"] == 12


def test_always_answering_a_is_inconsistent_in_order_family():
    samples = run_fake(always(0))
    ids = [i.id for i in ITEMS]
    order = family_metrics(samples, "order", ids, n_resamples=N_BOOT).as_dict()
    assert by_variant(order) == {"gold@A": 1.0, "gold@B": 0.0, "gold@C": 0.0, "gold@D": 0.0}
    assert order["accuracy"]["value"] == pytest.approx(0.25)
    assert order["spread"]["value"] == 1.0
    # q1 (gold B) and q3 (gold D): "A" shows option 0 three times, the gold once -> 3/6 pairs agree;
    # q2 (gold A): "A" shows a different option in each variant -> 0 pairs agree
    assert order["consistency_rate"]["value"] == pytest.approx((0.5 + 0.0 + 0.5) / 3)
    assert order["consistency_rate"]["value"] < 1.0
    # in the format family the options never move, so "A" every time is perfectly consistent
    fmt = family_metrics(samples, "format", ids, n_resamples=N_BOOT).as_dict()
    assert fmt["consistency_rate"]["value"] == 1.0
    assert fmt["accuracy"]["value"] == pytest.approx(1 / 3)  # only q2 has gold at A


def test_failed_are_excluded_not_wrong_and_reported():
    def policy(item, v):
        if v.name in ("gold@A", "gold@B") and item.id == "q1":
            return Response(key="f", text=None, error="rate limited")
        return pick_content(lambda it: it.answer)(item, v)
    samples = run_fake(policy, ("order",))
    result = family_metrics(samples, "order", [i.id for i in ITEMS], n_resamples=N_BOOT).as_dict()
    assert result["accuracy"]["value"] == 1.0  # failures are not counted wrong
    assert result["failed"] == 2 and result["invalid"] == 0 and result["samples"] == 12
    assert result["variants"]["gold@A"]["failed"] == 1
    assert result["variants"]["gold@A"]["answered"] == 2
    assert result["variants"]["gold@C"]["failed"] == 0
    assert result["consistency_rate"]["value"] == 1.0


def test_invalid_replies_count_as_wrong_and_are_reported():
    def policy(item, v):
        if item.id == "q2":
            return Response(key="i", text="The best answer is E")  # not a shown label
        return pick_content(lambda it: it.answer)(item, v)
    samples = run_fake(policy, ("order",))
    result = family_metrics(samples, "order", [i.id for i in ITEMS], n_resamples=N_BOOT).as_dict()
    assert result["accuracy"]["value"] == pytest.approx(8 / 12)
    assert result["invalid"] == 4 and result["failed"] == 0
    assert all(d["invalid"] == 1 and d["answered"] == 3 for d in result["variants"].values())
    # q2's four invalid replies never agree with each other
    assert result["consistency_rate"]["value"] == pytest.approx((1 + 0 + 1) / 3)


def test_macro_accuracy_only_with_several_categories():
    samples = run_fake(pick_content(lambda item: item.answer if item.id == "q1" else 0))
    ids = [i.id for i in ITEMS]
    result = family_metrics(samples, "format", ids, n_resamples=N_BOOT).as_dict()
    # food: q1 right; animals: q2 right (gold 0), q3 wrong -> macro (1 + 0.5) / 2, micro 2/3
    assert result["macro_accuracy"]["value"] == pytest.approx(0.75)
    assert result["accuracy"]["value"] == pytest.approx(2 / 3)
    # per variant too (SCORE's MMLU-Pro per-prompt accuracy is the macro one)
    for v in result["variants"].values():
        assert v["accuracy"]["value"] == pytest.approx(2 / 3)
        assert v["macro_accuracy"]["value"] == pytest.approx(0.75)
        assert v["macro_accuracy"]["ci_low"] <= 0.75 <= v["macro_accuracy"]["ci_high"]

    one_category = [Item(i.id, i.question, i.options, i.answer, "general") for i in ITEMS]
    single = family_metrics(run_fake(always(0), ("format",), one_category), "format", ids, n_resamples=N_BOOT).as_dict()
    assert "macro_accuracy" not in single
    assert not any("macro_accuracy" in v for v in single["variants"].values())
    no_category = [Item(i.id, i.question, i.options, i.answer) for i in ITEMS]
    none = family_metrics(run_fake(always(0), ("format",), no_category), "format", ids, n_resamples=N_BOOT).as_dict()
    assert "macro_accuracy" not in none


def test_metrics_per_family_with_intervals():
    samples = run_fake(always(0))
    result = as_json(metrics(samples, ITEMS, ("order", "format")))
    assert set(result) == {"order", "format"}
    acc = result["order"]["accuracy"]
    assert acc["n"] == 3 and acc["ci_low"] <= acc["value"] <= acc["ci_high"]
    assert set(result["format"]["variants"]) == {"A:", "A)", "A.", "1.", "a:", "I:"}
    # only the families asked for, and only those that have samples
    assert set(metrics(samples, ITEMS, ("format",))) == {"format"}
    assert set(metrics([s for s in samples if s.family == "order"], ITEMS, ("order", "format"))) == {"order"}


def test_canonical_agreement_differs_from_naive_label_agreement():
    from robusteval.metrics.consistency import consistency_rate

    samples = run_fake(always(0), ("order",))
    ids = [i.id for i in ITEMS]
    # naive: every variant said "A", so labels agree perfectly
    labels = np.array([[0.0 for s in samples if s.item_id == it.id] for it in ITEMS])
    assert consistency_rate(labels) == 1.0
    # canonical (mapped back to content): gold not at 0 -> 3 of 6 pairs agree; gold at 0 -> none
    canonical = matrices(samples, "order", ids).answers
    assert consistency_rate(canonical) == pytest.approx(np.mean([0.5 if it.answer else 0.0 for it in ITEMS]))


def test_position_bias_and_invalid_rate():
    samples = run_fake(lambda item, v: reply("X" if v.name == "gold@D" else "A"), ("order",))
    result = family_metrics(samples, "order", [i.id for i in ITEMS], n_resamples=N_BOOT).as_dict()
    bias = result["position_bias"]
    assert bias["A"]["chosen"]["value"] == 1.0 and bias["B"]["chosen"]["value"] == 0.0
    # gold sat at each position once per item among the answered (incl. invalid) variants
    assert bias["A"]["correct"] == pytest.approx(0.25)
    assert result["variants"]["gold@D"]["invalid_rate"]["value"] == 1.0
    assert result["variants"]["gold@A"]["invalid_rate"]["value"] == 0.0


def test_a_model_right_everywhere_still_gets_intervals():
    # 3 questions all answered right in every variant: the old percentile bootstrap said [1, 1]
    # for accuracy and [0, 0] for the spread, as if 3 questions proved it
    result = metrics(run_fake(pick_content(lambda item: item.answer)), ITEMS)["order"].as_dict()
    for est in (result["accuracy"], result["variants"]["gold@A"]["accuracy"], result["consistency_rate"]):
        assert est["value"] == 1.0 and est["ci_high"] == 1.0 and 0.0 < est["ci_low"] < 0.6
    assert result["spread"]["value"] == 0.0 and result["spread"]["ci_low"] == 0.0 and result["spread"]["ci_high"] > 0.3


def test_macro_per_variant_differs_from_micro_per_variant():
    """gold@A right for both animals questions, wrong for food; gold@B the other way round:
    micro 2/3 and 1/3, macro over the two categories 1/2 for both."""
    def policy(item, v):
        right = (v.name == "gold@A") == (item.category == "animals")
        position = v.order.index(item.answer if right else (item.answer + 1) % 4)
        return reply(v.labels[position])
    samples = run_fake(policy, ("order",))
    result = family_metrics(samples, "order", [i.id for i in ITEMS], n_resamples=N_BOOT).as_dict()
    a, b = result["variants"]["gold@A"], result["variants"]["gold@B"]
    assert (a["accuracy"]["value"], b["accuracy"]["value"]) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert (a["macro_accuracy"]["value"], b["macro_accuracy"]["value"]) == (pytest.approx(0.5), pytest.approx(0.5))
