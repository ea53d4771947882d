"""Classification scores and agreement between classifiers (detectors, judges, raters).

Labels are integer codes 0..K-1; ``-1`` is an invalid prediction (no label, or a label outside the
classes): it is always wrong and belongs to no class, so it lowers recall and accuracy but adds no
false positive. ``NaN`` is a missing prediction (a failed request) and is left out.

`scores` counts the confusion matrix with NumPy because the bootstrap calls it thousands of times
(scikit-learn's validation costs about a millisecond a call); the tests pin it to
``sklearn.metrics.precision_recall_fscore_support(average="macro")``. Agreement statistics are
computed once per pair, so they call scikit-learn directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score, matthews_corrcoef

INVALID = -1


def _valid(gold: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    gold, pred = np.asarray(gold, dtype=float).ravel(), np.asarray(pred, dtype=float).ravel()
    keep = ~np.isnan(gold) & ~np.isnan(pred)
    return gold[keep], pred[keep]


def scores(gold: Any, pred: Any) -> dict[str, float]:
    """Accuracy and macro-averaged precision, recall and F1 over the classes that occur (in the
    gold labels or the valid predictions), as scikit-learn computes them with ``zero_division=0``.
    NaN for every score when nothing is left to score."""
    gold, pred = _valid(gold, pred)
    if len(gold) == 0:
        return dict.fromkeys(("accuracy", "precision", "recall", "f1"), float("nan"))
    gold_i, pred_i = gold.astype(int), pred.astype(int)
    k = int(max(gold_i.max(), pred_i.max())) + 1
    right = gold_i == pred_i
    tp = np.bincount(gold_i[right], minlength=k).astype(float)
    in_gold = np.bincount(gold_i, minlength=k).astype(float)
    in_pred = np.bincount(pred_i[pred_i != INVALID], minlength=k).astype(float)
    present = (in_gold + in_pred) > 0  # the classes that occur
    tp, in_gold, in_pred = tp[present], in_gold[present], in_pred[present]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(in_pred > 0, tp / in_pred, 0.0)
        recall = np.where(in_gold > 0, tp / in_gold, 0.0)
        f1 = np.where(tp > 0, 2 * tp / (in_gold + in_pred), 0.0)
    return {"accuracy": float(right.mean()), "precision": float(precision.mean()),
            "recall": float(recall.mean()), "f1": float(f1.mean())}


def _paired(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[list[Any], list[Any]]:
    """The positions both raters answered (None = missing), as strings for scikit-learn."""
    kept = [(str(x), str(y)) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return [x for x, _ in kept], [y for _, y in kept]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters over the items both rated; NaN when undefined (one category only)."""
    x, y = _paired(a, b)
    if not x or len(set(x) | set(y)) < 2:
        return float("nan")
    return float(cohen_kappa_score(x, y))


def matthews(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Matthews correlation of two raters over the items both rated (multiclass form); NaN when undefined."""
    x, y = _paired(a, b)
    if not x or len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(matthews_corrcoef(x, y))


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa: ``ratings[i]`` holds the categories the raters gave item i (each item rated
    by the same number of raters, two or more). NaN when chance agreement is already perfect.

    P_i = (Σ_j n_ij² − n) / (n(n − 1)); P̄ = mean P_i; p_j = Σ_i n_ij / (N n); P_e = Σ p_j²;
    κ = (P̄ − P_e) / (1 − P_e).
    """
    rows = [list(r) for r in ratings]
    if not rows:
        return float("nan")
    n = len(rows[0])
    if n < 2 or any(len(r) != n for r in rows):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings for every item")
    categories = sorted({str(x) for r in rows for x in r})
    counts = np.array([[Counter(str(x) for x in r)[c] for c in categories] for r in rows], dtype=float)
    p_item = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_cat = counts.sum(axis=0) / (len(rows) * n)
    p_e = float((p_cat ** 2).sum())
    if p_e >= 1:
        return float("nan")
    return float((p_item.mean() - p_e) / (1 - p_e))


TIE_BREAKS = ("invalid", "hyp1", "hyp2", "first")


def majority_vote(votes: Sequence[str | None], tie_break: str = "invalid") -> str | None:
    """The label most valid votes chose (None = invalid vote, an abstention); None when there is
    no valid vote. A tie between the most chosen labels goes by ``tie_break``: ``invalid`` (None:
    no majority), a label (``hyp1``, ``hyp2``: that one where it is among the tied), or ``first``
    (the tied label the first member voted for)."""
    counted = Counter(v for v in votes if v is not None).most_common()
    if not counted:
        return None
    tied = [label for label, n in counted if n == counted[0][1]]
    if len(tied) == 1:
        return tied[0]
    if tie_break == "first":
        return next(v for v in votes if v in tied)
    return tie_break if tie_break in tied else None


__all__ = ["INVALID", "TIE_BREAKS", "cohen_kappa", "fleiss_kappa", "majority_vote", "matthews", "scores"]
