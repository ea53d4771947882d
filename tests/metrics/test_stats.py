"""Bootstrap intervals clustered by item."""

from __future__ import annotations

import numpy as np

from robusteval.metrics.stats import bootstrap


def _mean(rows):
    return float(rows.mean())


def test_value_interval_and_determinism():
    rows = np.random.default_rng(0).binomial(1, 0.4, size=(100, 1)).astype(float)
    a, b = bootstrap(rows, _mean, seed=3), bootstrap(rows, _mean, seed=3)
    assert a == b and a.value == rows.mean() and a.low <= a.value <= a.high and a.n == 100


def test_more_items_narrower():
    rng = np.random.default_rng(1)
    small = bootstrap(rng.binomial(1, 0.3, (20, 1)).astype(float), _mean)
    large = bootstrap(rng.binomial(1, 0.3, (2000, 1)).astype(float), _mean)
    assert (large.high - large.low) < (small.high - small.low) / 5


def test_single_item_has_no_interval():
    est = bootstrap(np.array([[1.0]]), _mean)
    assert est.value == 1.0 and est.low is None


def test_coverage():
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(100):
        est = bootstrap(rng.binomial(1, 0.3, (200, 1)).astype(float), _mean, n_resamples=300,
                        seed=int(rng.integers(1 << 30)))
        hits += est.low <= 0.3 <= est.high
    assert hits >= 88
