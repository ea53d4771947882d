"""Accuracy, consistency rate and spread on hand-computed matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robusteval.metrics.consistency import (
    consistency_rate,
    item_consistency,
    macro_accuracy,
    micro_accuracy,
    spread,
    std_across_variants,
    variant_accuracy,
)

nan = np.nan


def test_accuracies_skip_missing_cells():
    correct = np.array([[1, 0, nan], [1, 1, 0], [0, 1, 1.0]])
    assert variant_accuracy(correct).tolist() == pytest.approx([2 / 3, 2 / 3, 0.5])
    assert micro_accuracy(correct) == pytest.approx(5 / 8)
    cats = np.array([0, 0, 1])
    assert macro_accuracy(correct, cats) == pytest.approx((3 / 5 + 2 / 3) / 2)
    assert spread(correct) == pytest.approx(2 / 3 - 0.5)
    assert std_across_variants(correct) == pytest.approx(np.std([2 / 3, 2 / 3, 0.5], ddof=1))


def test_item_consistency():
    answers = np.array([
        [0, 0, 1], [2, 2, 2], [0, -1, 0], [-1, -1, 3], [1, nan, 1], [1, nan, nan],
    ], dtype=float)
    got = item_consistency(answers)
    assert got[:5].tolist() == pytest.approx([1 / 3, 1, 1 / 3, 0, 1])
    assert math.isnan(got[5])  # fewer than two answered variants: no pair to compare
    assert consistency_rate(answers) == pytest.approx((1 / 3 + 1 + 1 / 3 + 0 + 1) / 5)


def test_pooled_and_per_question_definitions_differ_with_unequal_groups():
    from robusteval.metrics.consistency import pooled_consistency_rate

    # q1: 4 answers, all agree (6 of 6 pairs); q2: 2 answers that disagree (0 of 1 pair)
    answers = np.array([[0, 0, 0, 0], [1, 2, nan, nan]], dtype=float)
    assert consistency_rate(answers) == pytest.approx((1 + 0) / 2)
    assert pooled_consistency_rate(answers) == pytest.approx(6 / 7)
    equal = np.array([[0, 0, 1], [2, 2, 2]], dtype=float)  # same group sizes: the two agree
    assert consistency_rate(equal) == pytest.approx(pooled_consistency_rate(equal))
