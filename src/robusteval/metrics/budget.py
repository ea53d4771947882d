"""Budgeted estimation: what the full items x variants grid would show, from a fraction of its cells.

Design (`choose_cells`): every item gets ``k`` or ``k + 1`` of the variants (k = budget x variants,
at least one), assigned round-robin from a seeded shuffle, so each variant is asked of nearly the
same number of items and every item is seen. Stratified over items and variants; not adaptive.

Model (`estimate`): correctness follows a Rasch (one-parameter IRT) model, as PromptEval fits with
item and template parameters: logit P(item i right under variant j) = a_i + b_j, fitted by
L2-penalised logistic regression on the asked cells (scikit-learn). A variant's accuracy is the mean
over items of the asked cell where there is one, else the fitted probability. Reported: each
variant's accuracy, the 5/50/95% quantiles of the variants' accuracies, and the spread (best minus
worst), each with a 95% percentile interval from a bootstrap over items that refits the model on
every resample, so the interval carries the estimation's own error as well as the sampling of items.

Cells are values in [0, 1] (mean correctness over samples) or NaN (not asked, or failed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

from robusteval.metrics.stats import Estimate

QUANTILES = (0.05, 0.5, 0.95)


def choose_cells(n_items: int, n_variants: int, budget: float, seed: int = 0) -> np.ndarray:
    """A boolean items x variants mask of the cells to ask (about ``budget`` of them)."""
    if not 0 < budget <= 1:
        raise ValueError("budget must be in (0, 1]")
    rng = np.random.default_rng(seed)
    total = max(n_items, round(budget * n_items * n_variants))
    per_item = np.full(n_items, total // n_items)
    per_item[rng.permutation(n_items)[: total % n_items]] += 1
    per_item = np.minimum(per_item, n_variants)
    order = rng.permutation(n_variants)
    mask = np.zeros((n_items, n_variants), dtype=bool)
    start = 0
    for i in rng.permutation(n_items):  # round robin over a shuffled variant order: even counts per variant
        cols = order[(start + np.arange(per_item[i])) % n_variants]
        mask[i, cols] = True
        start += per_item[i]
    return mask


def fit_grid(observed: np.ndarray, *, c: float = 1.0) -> np.ndarray:
    """The full grid: asked cells as observed, the others from the fitted Rasch model."""
    n_items, n_vars = observed.shape
    rows, cols = np.nonzero(~np.isnan(observed))
    y = observed[rows, cols]
    if len(y) == 0:
        return np.full(observed.shape, np.nan)
    full = observed.copy()
    if np.all(y == y[0]) and y[0] in (0.0, 1.0):  # one class only: the model has nothing to separate
        full[np.isnan(full)] = y[0]
        return full
    x = np.zeros((len(y), n_items + n_vars))
    x[np.arange(len(y)), rows] = 1.0
    x[np.arange(len(y)), n_items + cols] = 1.0
    # fractional cells (means over samples) enter as weighted 1 and 0 rows
    xx, yy = np.vstack([x, x]), np.concatenate([np.ones(len(y)), np.zeros(len(y))])
    weight = np.concatenate([y, 1 - y])
    keep = weight > 0
    model = LogisticRegression(C=c, max_iter=500)
    model.fit(xx[keep], yy[keep], sample_weight=weight[keep])
    a, b = model.coef_[0][:n_items], model.coef_[0][n_items:]
    logits = model.intercept_[0] + a[:, None] + b[None, :]
    predicted = 1 / (1 + np.exp(-logits))
    return np.where(np.isnan(full), predicted, full)


@dataclass(frozen=True)
class BudgetEstimate:
    variants: tuple[Estimate, ...]  # each variant's estimated accuracy
    quantiles: tuple[Estimate, ...]  # of the variants' accuracies, at QUANTILES
    spread: Estimate
    asked: int  # cells asked
    cells: int  # cells in the full grid


def _summary(grid: np.ndarray) -> np.ndarray:
    acc = np.nanmean(grid, axis=0)
    return np.concatenate([acc, np.quantile(acc, QUANTILES), [acc.max() - acc.min()]])


def estimate(observed: np.ndarray, *, n_resamples: int = 200, seed: int = 0, level: float = 0.95) -> BudgetEstimate:
    """Per-variant accuracy, quantiles and spread of the full grid, from the asked cells of ``observed``."""
    n_items, n_vars = observed.shape
    point = _summary(fit_grid(observed))
    rng = np.random.default_rng(seed)
    draws = np.array([_summary(fit_grid(observed[rng.integers(0, n_items, n_items)])) for _ in range(n_resamples)])
    tail = (1 - level) / 2
    low, high = np.nanquantile(draws, tail, axis=0), np.nanquantile(draws, 1 - tail, axis=0)
    est = [Estimate(float(v), float(lo), float(hi), n_items) for v, lo, hi in zip(point, low, high)]
    return BudgetEstimate(tuple(est[:n_vars]), tuple(est[n_vars:n_vars + len(QUANTILES)]), est[-1],
                          int((~np.isnan(observed)).sum()), n_items * n_vars)
