"""Bootstrap confidence intervals clustered by item.

Variants of one question are not independent (an easy question is easy in every format), so we
resample *questions* with replacement and recompute the whole statistic; resampling individual
answers would make intervals too narrow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    """A point value with its percentile-bootstrap interval (None when it cannot be computed)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0

    def as_dict(self) -> dict:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high, "n": self.n}

    def fmt(self, digits: int = 3) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def bootstrap(rows: np.ndarray, statistic: Callable[[np.ndarray], float], *, n_resamples: int = 1000,
              level: float = 0.95, seed: int = 0) -> Estimate:
    """Percentile bootstrap of ``statistic(rows)`` resampling rows (= items) with replacement."""
    n = len(rows)
    value = _finite(statistic(rows))
    if value is None or n < 2:
        return Estimate(value, n=n)
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(rows[rng.integers(0, n, n)]) for _ in range(n_resamples)], dtype=float)
    return _interval(value, draws, n, level)


def bootstrap_sums(per_item: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], *, n_resamples: int = 1000,
                   level: float = 0.95, seed: int = 0) -> Estimate:
    """`bootstrap` for a statistic that sees the items only through their column sums.

    ``per_item`` is items x k; ``statistic`` maps sums (resamples x k) to one value per row. Ratios of
    sums (accuracy, consistency rate, shares) are such statistics. A resample is then a row of counts
    (how often each item was drawn), and all resamples are one matrix product instead of a thousand
    Python calls: a cached 1,000-sample mcq rerun spent most of its time there. The draws are the
    same as `bootstrap`'s for the same seed, so the intervals are the same.
    """
    per_item = np.asarray(per_item, dtype=float).reshape(len(per_item), -1)
    n = len(per_item)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = _finite(statistic(per_item.sum(axis=0)[None, :])[0])
    if value is None or n < 2:
        return Estimate(value, n=n)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, n, (n_resamples, n)) + n * np.arange(n_resamples)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=n_resamples * n).reshape(n_resamples, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.asarray(statistic(counts @ per_item), dtype=float)
    return _interval(value, draws, n, level)


def _interval(value: float, draws: np.ndarray, n: int, level: float) -> Estimate:
    """The percentile interval of the finite draws."""
    draws = draws[np.isfinite(draws)]
    if len(draws) == 0:
        return Estimate(value, n=n)
    alpha = (1 - level) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return Estimate(value, float(low), float(high), n)


def _finite(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None
