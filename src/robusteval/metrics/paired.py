"""Paired comparison of two runs on the same questions.

Both runs answered the same questions, so the per-question differences carry the signal; we
resample questions for the interval (bootstrap) and flip the sign of each question's difference
for the test (a paired permutation test, exact in spirit and valid with variants clustered within
questions, unlike a McNemar test over individual answers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from robusteval.metrics.stats import bootstrap


@dataclass(frozen=True)
class PairedDifference:
    a: float
    b: float
    diff: float  # b - a
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n: int

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def paired_mean_difference(a: np.ndarray, b: np.ndarray, *, seed: int = 0, n_resamples: int = 2000) -> PairedDifference:
    """Mean of b - a over questions answered in both (the mean of per-question differences, not a
    difference of pooled ratios), with a 95% CI and a two-sided p-value."""
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = len(a)
    if n == 0:
        return PairedDifference(float("nan"), float("nan"), float("nan"), None, None, None, 0)
    d = b - a
    est = bootstrap(d[:, None], lambda r: float(r.mean()), n_resamples=n_resamples, seed=seed)
    p = None
    if n >= 2 and np.any(d != 0):
        res = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=n_resamples,
                                     alternative="two-sided", random_state=seed)
        p = float(res.pvalue)
    elif n >= 2:
        p = 1.0
    return PairedDifference(float(a.mean()), float(b.mean()), float(d.mean()), est.low, est.high, p, n)
