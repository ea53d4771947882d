"""Item-clustered percentile bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.stats import Estimate, bootstrap, bootstrap_sums


def mean_stat(rows: np.ndarray) -> float:
    return float(np.mean(rows))


def bernoulli(n: int, p: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def test_value_is_statistic_on_full_data_and_inside_interval():
    rows = bernoulli(100, 0.4, seed=1)
    est = bootstrap(rows, mean_stat, n_resamples=300, seed=0)
    assert est.value == pytest.approx(rows.mean())
    assert est.n == 100
    assert est.low <= est.value <= est.high
    assert est.low < est.high


def test_deterministic_for_a_seed():
    rows = bernoulli(50, 0.5, seed=2)
    a = bootstrap(rows, mean_stat, n_resamples=200, seed=7)
    b = bootstrap(rows, mean_stat, n_resamples=200, seed=7)
    c = bootstrap(rows, mean_stat, n_resamples=200, seed=8)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)


def test_more_items_narrower_interval():
    small = bootstrap(bernoulli(20, 0.5, seed=3), mean_stat, n_resamples=300)
    large = bootstrap(bernoulli(2000, 0.5, seed=3), mean_stat, n_resamples=300)
    assert (large.high - large.low) < (small.high - small.low) / 3


def test_level_widens_interval():
    rows = bernoulli(100, 0.5, seed=4)
    narrow = bootstrap(rows, mean_stat, n_resamples=300, level=0.5)
    wide = bootstrap(rows, mean_stat, n_resamples=300, level=0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high


def test_resamples_rows_as_units():
    # two columns per item that always move together: each resample keeps rows whole
    rows = np.column_stack([np.arange(10.0), np.arange(10.0)])
    seen = []
    bootstrap(rows, lambda r: seen.append(bool(np.all(r[:, 0] == r[:, 1]))) or 0.0, n_resamples=20)
    assert len(seen) == 21 and all(seen)


@pytest.mark.parametrize("rows", [np.array([1.0]), np.zeros((0,))])
def test_fewer_than_two_items_gives_no_interval(rows):
    est = bootstrap(rows, lambda r: float(np.mean(r)) if len(r) else float("nan"), n_resamples=50)
    assert est.low is None and est.high is None
    assert est.n == len(rows)


def test_non_finite_statistic_gives_no_value():
    est = bootstrap(np.arange(5.0), lambda r: float("nan"), n_resamples=50)
    assert est == Estimate(None, n=5)


def test_nan_draws_are_dropped():
    # the statistic is NaN whenever item 0 is missing from the resample; the interval uses the rest
    rows = np.arange(4.0)
    est = bootstrap(rows, lambda r: float(np.mean(r)) if 0.0 in r else float("nan"), n_resamples=200)
    assert est.value == 1.5
    assert est.low is not None and 0.0 <= est.low <= est.high <= 3.0


def test_coverage_of_a_bernoulli_mean():
    hits = 0
    for k in range(100):
        rows = bernoulli(200, 0.3, seed=1000 + k)
        est = bootstrap(rows, mean_stat, n_resamples=300, seed=k)
        hits += est.low <= 0.3 <= est.high
    assert hits >= 88  # nominal 95%


def test_estimate_formatting_and_dict():
    assert Estimate(None).fmt() == "n/a"
    assert Estimate(0.5).fmt(2) == "0.50"
    assert Estimate(0.5, 0.25, 0.75, 10).fmt(2) == "0.50 [0.25, 0.75]"
    assert Estimate(0.5, 0.25, 0.75, 10).as_dict() == {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 10}


def test_bootstrap_sums_gives_the_same_interval_as_bootstrap_for_a_ratio_of_sums():
    rng = np.random.default_rng(5)
    per_item = np.column_stack([rng.integers(0, 4, 60), rng.integers(1, 5, 60)]).astype(float)
    reference = bootstrap(per_item, lambda rows: rows[:, 0].sum() / rows[:, 1].sum(), seed=3)
    fast = bootstrap_sums(per_item, lambda sums: sums[:, 0] / sums[:, 1], seed=3)
    assert fast.value == pytest.approx(reference.value)
    assert (fast.low, fast.high) == pytest.approx((reference.low, reference.high))
    assert fast.low < fast.value < fast.high and fast.n == 60
