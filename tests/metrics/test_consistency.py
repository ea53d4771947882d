"""Accuracy, consistency rate and spread on small hand-computed matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robusteval.metrics.consistency import (
    agreeing_pairs,
    consistency_rate,
    item_consistency,
    macro_accuracy,
    micro_accuracy,
    pooled_consistency_rate,
    spread,
    std_across_variants,
    variant_accuracy,
)

nan = np.nan

# 3 items x 3 variants; NaN = absent/failed cell
CORRECT = np.array([
    [1.0, 1.0, 0.0],
    [1.0, 0.0, nan],
    [0.0, 0.0, 1.0],
])


def test_variant_accuracy_skips_nan():
    np.testing.assert_allclose(variant_accuracy(CORRECT), [2 / 3, 1 / 3, 1 / 2])


def test_variant_accuracy_all_nan_column_is_nan():
    acc = variant_accuracy(np.array([[1.0, nan], [0.0, nan]]))
    assert acc[0] == 0.5 and math.isnan(acc[1])


def test_micro_accuracy_over_answered_cells():
    assert micro_accuracy(CORRECT) == pytest.approx(4 / 8)


def test_macro_accuracy_weighs_categories_equally():
    correct = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    cats = np.array(["x", "x", "x", "y"], dtype=object)
    assert micro_accuracy(correct) == pytest.approx(0.75)
    assert macro_accuracy(correct, cats) == pytest.approx(0.5)  # (1.0 + 0.0) / 2
    # one category: macro == micro
    assert macro_accuracy(CORRECT, np.array(["x"] * 3, dtype=object)) == pytest.approx(micro_accuracy(CORRECT))


@pytest.mark.parametrize("row, expected", [
    ([0, 0, 1], 1 / 3),          # 1 agreeing pair of 3
    ([0, 0, 0], 1.0),
    ([0, 1, 2], 0.0),
    ([2, 2, 1, 1], 2 / 6),
    ([0, -1], 0.0),              # an invalid never agrees
    ([0, 0, -1], 1 / 3),
    ([-1, -1], 0.0),             # two invalids do not agree
    ([-1, -1, -1], 0.0),
    ([0, nan, 0], 1.0),          # NaN cells are left out
    ([0, nan, 1, nan], 0.0),
])
def test_item_consistency_hand_computed(row, expected):
    assert item_consistency(np.array([row], dtype=float))[0] == pytest.approx(expected)


@pytest.mark.parametrize("row", [[0, nan, nan], [nan, nan, nan], [-1, nan, nan]])
def test_item_consistency_needs_two_answers(row):
    assert math.isnan(item_consistency(np.array([row], dtype=float))[0])


@pytest.mark.parametrize("no_items", [np.empty((0, 4)), np.empty(0), []])
def test_no_items_have_no_agreement_rather_than_an_error(no_items):
    """B13's crash: zero questions (two runs sharing none) reshaped an empty array to (0, -1)."""
    assert item_consistency(no_items).shape == (0,)
    assert math.isnan(consistency_rate(no_items)) and math.isnan(pooled_consistency_rate(no_items))


def test_consistency_rate_is_mean_over_items_ignoring_nan_items():
    answers = np.array([[0, 0, 1], [2, 2, 2], [1, nan, nan]], dtype=float)
    assert consistency_rate(answers) == pytest.approx((1 / 3 + 1) / 2)


def test_pooled_consistency_weights_items_by_pairs():
    answers = np.array([[0, 0, 0, 0], [0, 1, nan, nan]], dtype=float)
    agree, pairs = agreeing_pairs(answers)
    np.testing.assert_array_equal(agree, [6, 0])
    np.testing.assert_array_equal(pairs, [6, 1])
    assert pooled_consistency_rate(answers) == pytest.approx(6 / 7)
    assert consistency_rate(answers) == pytest.approx(0.5)
    # same number of answers per item: pooled == per-item mean
    even = np.array([[0, 0, 1], [0, 1, 2]], dtype=float)
    assert pooled_consistency_rate(even) == pytest.approx(consistency_rate(even))
    assert math.isnan(pooled_consistency_rate(np.array([[0, nan]], dtype=float)))


def test_spread_and_std():
    acc = [2 / 3, 1 / 3, 1 / 2]
    assert spread(CORRECT) == pytest.approx(max(acc) - min(acc))
    assert std_across_variants(CORRECT) == pytest.approx(np.std(acc, ddof=1))


def test_spread_ignores_unanswered_variants_and_edge_cases():
    correct = np.array([[1.0, 0.0, nan], [1.0, 1.0, nan]])
    assert spread(correct) == pytest.approx(0.5)
    assert std_across_variants(correct) == pytest.approx(np.std([1.0, 0.5], ddof=1))
    assert spread(np.array([[1.0], [0.0]])) == 0.0
    assert math.isnan(std_across_variants(np.array([[1.0], [0.0]])))  # one variant: no std
    assert math.isnan(spread(np.array([[nan, nan]])))


def test_macro_accuracy_leaves_out_a_category_with_no_answered_cell():
    correct = np.array([[1.0, nan], [nan, nan], [0.0, 1.0], [0.0, 0.0]])
    cats = np.array(["x", "y", "z", "z"], dtype=object)
    assert macro_accuracy(correct, cats) == pytest.approx((1.0 + 0.25) / 2)
