"""Rank-order stability of simulated personas, and the leaderboard's aggregation across models.

- Rank-order stability between two contexts: for each value, Spearman's correlation of the
  personas' scores in one context with their scores in the other; averaged over values. A model's
  stability is the mean over all context pairs (the upper triangle of the context x context matrix).
- Aggregation: a *game* is one column of a models x games table (one context pair's stability, or
  one validity metric in one context), oriented so higher is better. Cardinal score: a model's mean
  over games. Win rate: in each game, the share of the other models it beats strictly; averaged.
- Benchmark meta-metrics: diversity = 1 - Kendall's W of the games' rankings of the models (low
  when every game ranks the models the same way); sensitivity = the largest change of any model's
  rank when the games of one context are left out.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.stats import rankdata, spearmanr

# Values are rounded to a fixed number of decimals before they are ranked or compared. Rounding to
# significant digits (as before) kept -1.8e-16 apart from 0.0: a value that is 0 in exact
# arithmetic (a value's items averaging the respondent's mean) split from the exact zeros beside it.
# 10 decimals: far below any real difference between scores (stabilities, win rates and fit indices
# lie within [-1, 1], centred value scores within [-5, 5]), far above float64 noise at those sizes
# (1e-15 at 5). Values more than ~1e5 in size would need fewer.
RANK_DECIMALS = 10


def tie_safe(x: np.ndarray, decimals: int = RANK_DECIMALS) -> np.ndarray:
    """``x`` rounded to ``decimals`` decimal places (NaN and infinities kept; -0.0 made 0.0), so that
    values equal in exact arithmetic compare equal before they are ranked or compared."""
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), np.round(x, decimals) + 0.0, x)


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rho over the rows where both are finite (NaN or an infinity is a missing value),
    ranked after `tie_safe` (values equal in exact arithmetic tie); None when it is undefined: fewer
    than 3 such rows, or a constant side. The one copy: judges' agreement and personas' stability
    use it; None (not NaN) because the value goes to results.json, where NaN is not JSON."""
    x, y = tie_safe(x), tie_safe(y)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return None
    return float(spearmanr(x[ok], y[ok]).statistic)


def rank_order_stability(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over values (columns) of Spearman's rho of the personas (rows) between two contexts;
    values whose correlation is undefined are left out (NaN if none is defined)."""
    rhos = [r for v in range(a.shape[1]) if (r := spearman(a[:, v], b[:, v])) is not None]
    return float(np.mean(rhos)) if rhos else float("nan")


def stability_matrix(scores: list[np.ndarray]) -> np.ndarray:
    """Contexts x contexts matrix of rank-order stability (diagonal 1)."""
    c = len(scores)
    m = np.eye(c)
    for i in range(c):
        for j in range(i + 1, c):
            m[i, j] = m[j, i] = rank_order_stability(scores[i], scores[j])
    return m


def mean_pairwise(matrix: np.ndarray) -> float:
    """Mean of the defined off-diagonal cells (each pair once)."""
    iu = np.triu_indices(len(matrix), 1)
    cells = matrix[iu]
    cells = cells[np.isfinite(cells)]
    return float(cells.mean()) if len(cells) else float("nan")


def mean_stability(flat: np.ndarray, n_contexts: int) -> float:
    """Mean pairwise stability from personas x (contexts*values) (contexts side by side): the form
    the persona bootstrap resamples."""
    return mean_pairwise(stability_matrix(np.split(np.asarray(flat, dtype=float), n_contexts, axis=1)))


def cardinal_scores(table: np.ndarray) -> np.ndarray:
    """Each model's mean over its defined games (table: models x games, higher is better)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanmean(np.asarray(table, dtype=float), axis=1))


def win_rate_table(table: np.ndarray) -> np.ndarray:
    """Per game, the share of the other models (with a value in that game) a model beats strictly;
    NaN where the model has no value or plays nobody."""
    t = tie_safe(table)
    out = np.full(t.shape, np.nan)
    for g in range(t.shape[1]):
        col = t[:, g]
        present = np.isfinite(col)
        if present.sum() < 2:
            continue
        for m in np.flatnonzero(present):
            out[m, g] = np.sum(col[present] < col[m]) / (present.sum() - 1)
    return out


def win_rates(table: np.ndarray) -> np.ndarray:
    """Ordinal score: each model's mean win rate over the games."""
    return cardinal_scores(win_rate_table(table))


def kendalls_w(table: np.ndarray) -> float:
    """Kendall's coefficient of concordance of the games (columns) ranking the models (rows), with
    the correction for ties; games with a missing value are left out. NaN below 2 models or games."""
    t = tie_safe(table)
    t = t[:, np.isfinite(t).all(axis=0)]
    n, m = t.shape
    if n < 2 or m < 2:
        return float("nan")
    ranks = np.column_stack([rankdata(t[:, g]) for g in range(m)])
    totals = ranks.sum(axis=1)
    s = float(((totals - totals.mean()) ** 2).sum())
    ties = 0.0
    for g in range(m):
        _, counts = np.unique(t[:, g], return_counts=True)
        ties += float((counts ** 3 - counts).sum())
    denom = m ** 2 * (n ** 3 - n) - m * ties
    return s * 12 / denom if denom > 0 else float("nan")


def ranking(scores: np.ndarray) -> np.ndarray:
    """Rank of each model, 1 = best (ties share the better rank)."""
    s = tie_safe(scores)
    return np.asarray(rankdata(-np.where(np.isfinite(s), s, -np.inf), method="min").astype(int))


def max_rank_change(table: np.ndarray, groups: list[list[int]],
                    score: Callable[[np.ndarray], np.ndarray] = win_rates) -> int | None:
    """Largest |rank change| of any model when the games in one group (e.g. the games involving one
    context) are removed and the models are scored again. None below 2 models or groups."""
    t = np.asarray(table, dtype=float)
    if t.shape[0] < 2 or len(groups) < 2:
        return None
    full = ranking(score(t))
    worst = 0
    for group in groups:
        keep = [g for g in range(t.shape[1]) if g not in set(group)]
        if keep:
            worst = max(worst, int(np.abs(ranking(score(t[:, keep])) - full).max()))
    return worst


__all__ = ["cardinal_scores", "kendalls_w", "max_rank_change", "mean_pairwise", "mean_stability",
           "rank_order_stability", "ranking", "spearman", "stability_matrix", "tie_safe", "win_rate_table", "win_rates"]
