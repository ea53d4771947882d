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
    draws = draws[np.isfinite(draws)]
    if len(draws) == 0:
        return Estimate(value, n=n)
    alpha = (1 - level) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return Estimate(value, float(low), float(high), n)


def _finite(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None
