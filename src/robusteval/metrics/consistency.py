"""Accuracy, consistency rate and spread over an items x variants matrix.

Matrices hold NaN where a variant is absent for an item (fewer options) or its request failed:
those cells are left out, never counted as wrong. In ``answers``, -1 marks an invalid reply; two
invalid replies do not count as agreeing (the model said nothing comparable).
"""

from __future__ import annotations

import warnings

import numpy as np


def _nanmean(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices give NaN, which we want
        return np.asarray(np.nanmean(x, axis=axis))


def variant_accuracy(correct: np.ndarray) -> np.ndarray:
    """Accuracy of each variant (column), over the items where it was answered."""
    return _nanmean(correct, axis=0)


def micro_accuracy(correct: np.ndarray) -> float:
    """Accuracy over every answered (item, variant) cell."""
    return float(_nanmean(correct))


def macro_accuracy(correct: np.ndarray, categories: np.ndarray) -> float:
    """Mean over categories of each category's accuracy (every category weighs the same)."""
    return float(macro_of_sums(category_sums(correct, categories).sum(axis=0))[0])


def category_sums(correct: np.ndarray, categories: np.ndarray) -> np.ndarray:
    """Per item: its answered cells' correctness sum and count, in its category's columns
    (items x 2·categories), so that column sums give every category's accuracy."""
    c = np.asarray(correct, dtype=float).reshape(len(correct), -1)
    codes = np.unique(categories, return_inverse=True)[1].ravel()
    onehot = codes[:, None] == np.arange(codes.max() + 1 if len(codes) else 0)[None, :]
    answered = ~np.isnan(c)
    return np.hstack([onehot * np.where(answered, c, 0.0).sum(axis=1)[:, None],
                      onehot * answered.sum(axis=1)[:, None]])


def macro_of_sums(sums: np.ndarray) -> np.ndarray:
    """Macro accuracy per row of `category_sums` column sums; a category with no answered cell is
    left out. Vectorised over rows: bootstraps evaluate a thousand resamples at once."""
    sums = np.atleast_2d(sums)
    k = sums.shape[1] // 2
    with np.errstate(invalid="ignore", divide="ignore"):
        per = sums[:, :k] / sums[:, k:]
    return _nanmean(per, axis=1)


def agreeing_pairs(answers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item: (number of variant pairs that chose the same original option, number of pairs)."""
    # Vectorised over items (bootstraps call this thousands of times): compare every column pair at
    # once; NaN never equals anything, and invalid (-1) answers are masked out.
    a = np.asarray(answers, dtype=float)
    a = a.reshape(len(a), -1) if a.size else a.reshape(len(a), a.shape[-1] if a.ndim > 1 else 0)  # no items: none
    same = (a[:, :, None] == a[:, None, :]) & (a[:, :, None] >= 0)
    upper = np.triu(np.ones((a.shape[1], a.shape[1]), dtype=bool), k=1)
    agree = (same & upper).sum(axis=(1, 2)).astype(float)
    k = (~np.isnan(a)).sum(axis=1).astype(float)
    return agree, k * (k - 1) / 2


def item_consistency(answers: np.ndarray) -> np.ndarray:
    """Per item: the share of its variant pairs that agree (NaN with fewer than two answers)."""
    agree, pairs = agreeing_pairs(answers)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, agree / np.maximum(pairs, 1), np.nan)


def consistency_rate(answers: np.ndarray) -> float:
    """Mean over questions of each question's pairwise agreement: every question weighs the same."""
    return float(_nanmean(item_consistency(answers)))


def pooled_consistency_rate(answers: np.ndarray) -> float:
    """All agreeing pairs over all pairs, pooled across questions, as lm-evaluation-harness's SCORE
    tasks compute it: a question with more answered variants weighs more. Equal to
    `consistency_rate` when every question has the same number of answered variants."""
    agree, pairs = agreeing_pairs(answers)
    return float(agree.sum() / pairs.sum()) if pairs.sum() else float("nan")


def spread(correct: np.ndarray) -> float:
    """Largest minus smallest variant accuracy: how much the choice of variant moves the score."""
    return float(spread_of(variant_accuracy(correct)[None, :])[0])


def std_across_variants(correct: np.ndarray) -> float:
    return float(std_of(variant_accuracy(correct)[None, :])[0])


def spread_of(accuracies: np.ndarray) -> np.ndarray:
    """`spread` per row of a resamples x variants accuracy matrix (NaN = variant not answered)."""
    finite = np.isfinite(accuracies)
    high = np.where(finite, accuracies, -np.inf).max(axis=1)
    low = np.where(finite, accuracies, np.inf).min(axis=1)
    return np.where(finite.any(axis=1), high - low, np.nan)


def std_of(accuracies: np.ndarray) -> np.ndarray:
    """`std_across_variants` per row (sample standard deviation; NaN below two answered variants)."""
    finite = np.isfinite(accuracies)
    k = finite.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite, accuracies, 0.0).sum(axis=1) / k
        sq = np.where(finite, (accuracies - mean[:, None]) ** 2, 0.0).sum(axis=1)
        return np.where(k > 1, np.sqrt(sq / (k - 1)), np.nan)
