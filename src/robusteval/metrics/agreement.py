"""Agreement between judges that score the same units (item × model cells) on one scale.

ELOQUENT's organisers left judge reliability as future work; with two or more judges we report
Krippendorff's alpha (interval level: a 4 against a 5 is a small disagreement, a 0 against a 5 a
large one; missing ratings allowed), Spearman's rank correlation per pair of judges, and a simple
per-unit agreement, 1 − mean |a − b| / 5 over judge pairs.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from robusteval.judges.base import SCALE_MAX
from robusteval.metrics.stability import spearman  # over the units both judges rated


def krippendorff_alpha(ratings: np.ndarray) -> float | None:
    """Interval alpha of a judges × units matrix (NaN = missing); None when undefined."""
    import krippendorff

    ratings = np.asarray(ratings, dtype=float)
    pairable = (np.sum(~np.isnan(ratings), axis=0) >= 2).sum()
    values = ratings[~np.isnan(ratings)]
    if ratings.shape[0] < 2 or pairable < 1 or len(np.unique(values)) < 2:
        return None
    value = float(krippendorff.alpha(reliability_data=ratings, level_of_measurement="interval"))
    return value if np.isfinite(value) else None


def unit_agreement(scores: np.ndarray, scale_max: float = SCALE_MAX) -> float | None:
    """1 − mean |a − b| / scale_max over pairs of judges that rated this unit; None if < 2 ratings."""
    present = [float(s) for s in scores if not np.isnan(s)]
    if len(present) < 2:
        return None
    gaps = [abs(a - b) for a, b in itertools.combinations(present, 2)]
    return 1 - float(np.mean(gaps)) / scale_max


def agreement_report(judge_scores: dict[str, np.ndarray], unit_names: list[str]) -> dict[str, Any]:
    """Overall alpha, pairwise Spearman, and per-unit agreement for judges' aligned score vectors."""
    names = list(judge_scores)
    matrix = np.vstack([judge_scores[n] for n in names])
    return {
        "judges": names,
        "krippendorff_alpha_interval": krippendorff_alpha(matrix),
        "spearman": {f"{a}~{b}": spearman(judge_scores[a], judge_scores[b])
                     for a, b in itertools.combinations(names, 2)},
        "mean_abs_difference": {f"{a}~{b}": _mad(judge_scores[a], judge_scores[b])
                                for a, b in itertools.combinations(names, 2)},
        "per_unit": {unit: unit_agreement(matrix[:, i]) for i, unit in enumerate(unit_names)},
    }


def _mad(a: np.ndarray, b: np.ndarray) -> float | None:
    both = ~np.isnan(a) & ~np.isnan(b)
    return float(np.mean(np.abs(a[both] - b[both]))) if both.any() else None
