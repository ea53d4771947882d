"""CircularEval: the `circular` family's figures equal OpenCompass's CircularEvaluator's on the same
predictions, its rule scored by hand here (opencompass/datasets/circular.py: the dataset made by
``make_circular_items``, scored as ``CircularEvaluator.score`` does)."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.circular import circular_metrics
from robusteval.metrics.mcq import metrics
from robusteval.probes.design import expand
from robusteval.suites.mcq.ask import make_sample
from robusteval.types import Item, Response

KEYS = ["A", "B", "C", "D"]
ITEMS = [Item(f"q{i}", f"question {i}?", tuple(f"q{i} option {k}" for k in range(4)), answer=i % 4)
         for i in range(6)]


def picks(item: Item, shown: list[str]) -> int:
    """A model with habits: q0, q1 always right; q2 right unless the gold sits at D; q3 always
    picks A; q4 picks the text of option 0 wherever it is (its gold); q5 right only when the gold is at A."""
    gold = shown.index(item.options[item.answer])
    rule = int(item.id[1:])
    if rule in (0, 1):
        return gold
    if rule == 2:
        return gold if gold != 3 else 0
    if rule == 3:
        return 0
    if rule == 4:
        return shown.index(item.options[0])
    return gold if gold == 0 else (gold + 1) % 4


def opencompass_scores() -> dict[str, float]:
    """OpenCompass's rule, by hand: circular patterns are the rotations of ABCD (pattern k =
    KEYS[k:] + KEYS[:k]); an item's option under key ``pattern[i]`` is the original option ``KEYS[i]``,
    and its answer the key the gold moved to; then acc = right / all, perf = questions right under
    every pattern, more_j = questions right under at least j patterns (in percent)."""
    patterns = [tuple(KEYS[k:] + KEYS[:k]) for k in range(4)]
    right_by_qid: dict[str, list[bool]] = {}
    right_by_pattern: dict[int, int] = dict.fromkeys(range(4), 0)
    for item in ITEMS:
        for pattern in patterns:
            shown = [""] * 4
            for i, key in enumerate(KEYS):
                shown[KEYS.index(pattern[i])] = item.options[KEYS.index(key)]
            reference = pattern[item.answer]
            prediction = KEYS[picks(item, shown)]
            right_by_qid.setdefault(item.id, []).append(prediction == reference)
            right_by_pattern[patterns.index(pattern)] += prediction == reference
    counts = [sum(v) for v in right_by_qid.values()]
    out = {"acc_circular": 100 * sum(counts) / (4 * len(counts)),
           "perf_circular": 100 * sum(c >= 4 for c in counts) / len(counts)}
    out |= {f"more_{j}_circular": 100 * sum(c >= j for c in counts) / len(counts) for j in range(1, 4)}
    # accuracy under each pattern alone (OpenCompass reports pattern 0 as acc_origin)
    out |= {f"acc_pattern_{k}": 100 * right_by_pattern[k] / len(counts) for k in range(4)}
    return out


def test_circular_figures_equal_opencompass_rule():
    samples = []
    for item in ITEMS:
        for v in expand(item, ["circular"]):
            shown = [item.options[i] for i in v.order]
            reply = f"The best answer is {v.labels[picks(item, shown)]}."
            samples.append(make_sample("m", item, v, 0, Response(key=v.name, text=reply)))
    fm = metrics(samples, ITEMS, ["circular"])["circular"]
    theirs = opencompass_scores()
    assert fm.circular is not None
    assert fm.circular.accuracy.value == pytest.approx(theirs["perf_circular"] / 100)
    for j in range(1, 4):
        assert fm.circular.at_least[f"{j}/4"].value == pytest.approx(theirs[f"more_{j}_circular"] / 100)
    assert fm.accuracy.value == pytest.approx(theirs["acc_circular"] / 100)
    # rotations right per question, by the habits: 4, 4, 3, 1, 4 (q4's gold is option 0), 1
    assert {k: v for k, v in theirs.items() if "pattern" not in k} == pytest.approx(
        {"acc_circular": 100 * 17 / 24, "perf_circular": 100 * 3 / 6, "more_1_circular": 100.0,
         "more_2_circular": 100 * 4 / 6, "more_3_circular": 100 * 4 / 6})
    # per rotation: rotation k is OpenCompass's pattern k (a rotation the other way would differ here)
    assert [fm.variants[f"rot{k}"].accuracy.value for k in range(4)] == pytest.approx(
        [theirs[f"acc_pattern_{k}"] / 100 for k in range(4)])
    assert theirs["acc_pattern_1"] != theirs["acc_pattern_3"]  # the habits tell the two directions apart
    assert list(fm.variants) == ["rot0", "rot1", "rot2", "rot3"]
    assert fm.circular.questions == 6 and fm.circular.incomplete == 0
    low, high = fm.circular.accuracy.low, fm.circular.accuracy.high
    assert low is not None and high is not None and low < 3 / 6 < high


def test_rotations_move_the_gold_through_every_position():
    item = ITEMS[1]
    golds = [v.order.index(item.answer) for v in expand(item, ["circular"])]
    assert sorted(golds) == [0, 1, 2, 3]
    assert expand(item, ["circular"])[0].order == (0, 1, 2, 3)


def test_a_question_with_a_failed_rotation_is_left_out():
    correct = np.array([[1, 1, 1, 1], [1, np.nan, 1, 1], [1, 0, 1, 1]], dtype=float)
    m = circular_metrics(correct, np.array([4, 4, 4]))
    assert m.questions == 2 and m.incomplete == 1
    assert m.accuracy.value == pytest.approx(0.5)
    assert m.at_least["3/4"].value == pytest.approx(1.0)
    # each figure's n is the questions it is of (the report prints it), not every question asked
    assert m.accuracy.n == 2 and m.at_least["3/4"].n == 2


def test_questions_with_fewer_options_have_their_own_n():
    correct = np.array([[1, 1, 1, np.nan], [1, 0, 1, 1]], dtype=float)
    m = circular_metrics(correct, np.array([3, 4]))
    assert m.accuracy.value == pytest.approx(0.5)
    assert set(m.at_least) == {"1/3", "2/3", "1/4", "2/4", "3/4"}
    assert m.at_least["1/3"].n == 1 and m.at_least["1/4"].n == 1
