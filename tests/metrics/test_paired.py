"""Paired differences between two runs: interval and permutation test."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.paired import paired_mean_difference


def test_identical_runs_differ_by_nothing():
    a = np.array([1.0, 0.0, 0.5, 1.0])
    d = paired_mean_difference(a, a.copy())
    assert d.diff == 0 and d.p_value == 1.0 and d.n == 4


def test_clear_improvement_is_significant_and_pairs_drop_missing():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 0.5, 60)
    b = a + 0.3
    a[0] = np.nan  # answered in one run only: left out
    d = paired_mean_difference(a, b, seed=1)
    assert d.n == 59 and d.diff == pytest.approx(0.3)
    assert d.ci_low == pytest.approx(0.3) and d.p_value < 0.01


def test_noise_is_not_significant():
    rng = np.random.default_rng(3)
    a = rng.binomial(1, 0.5, 80).astype(float)
    b = rng.binomial(1, 0.5, 80).astype(float)
    d = paired_mean_difference(a, b, seed=2)
    assert d.ci_low <= d.diff <= d.ci_high and d.p_value > 0.05
