"""Budgeted estimation: what the full items x variants grid would show, from a fraction of its cells.

Designs (DESIGNS). Stratified (`choose_cells`, the whole budget): every item gets ``k`` or
``k + 1`` of the variants (k = share x variants), assigned round-robin from a seeded shuffle, so each
variant is asked of nearly the same number of items; below one cell per item (a 2% budget on 10
variants) a seeded sample of the items gets one cell each, so the budget is what is asked, and an
item never asked is predicted as an average item (its parameter stays at the penalty's zero).
Adaptive: `choose_cells` for FIRST of the budget, then (`more_cells`) the model is fitted to those
answers (the same empirical-Bayes model as the estimate) and the rest goes to the items it is
least sure of. `more_cells` also tops up a stratified
plan whose chosen cells include some that do not exist (a 3-option question's ``gold@D``).

Model (`estimate`): correctness follows a Rasch (one-parameter IRT) model, as PromptEval fits with
item and template parameters, logit P(item i right under variant j) = a_i + b_j, but with the items'
abilities and the variants' effects drawn from distributions fitted to the asked cells (empirical
Bayes, `metrics.budget_fit`) instead of a fixed L2 penalty. Each figure (each variant's accuracy,
the 5/50/95% quantiles of the variants' accuracies, the spread) is its posterior median over draws
of the whole grid, each unasked cell drawn as a 0/1 answer, and its interval the central 95% of those
draws. The median, not the mean: the errors that matter are absolute ones, which the median
minimises, and where few cells leave tau open the spread's posterior is skewed toward wide, so the
mean overstates it (docs/performance.md). The quantiles and spread of noisy point estimates are
biased outward (on PromptEval's MMLU grid at 2% of cells a spread of 0.30 against a true 0.06,
issue 29), the draws' are not.
``covariates`` (variants x features, `metrics.budget_covariates`: a crossed design's settings, the
template text's embedding, the gold's position) let a variant's effect be learned from the variants
like it; a `Grid` carries its family's, chosen by ``--budget-covariates`` when it is planned. The
adaptive design's guide to which items are unsure (`more_cells`) is the same model's fitted grid
(`fit_grid`, told the same covariates), so `run --budget` and `score --budget` stand on one estimator.

`check_grid`: ``score GRID --budget``, the same design and estimate on a grid whose every cell is
known, with the full grid's figures beside.

Cells are values in [0, 1] (mean correctness over samples) or NaN (not asked, or failed). A
family whose items have different variants (``order`` on 3- and 4-option questions) passes
``exists``: cells that are no variant of their item are neither asked nor averaged.

In a suite (`plan`, `grow`, `observed_grid`): one grid per family, its columns the family's variant
names in order of first appearance, its first stage seeded from the run's seed and the family's
name and its second stage chosen from the first stage's answers, so a rerun asks the same cells
and a run without ``--budget`` finds them cached.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from robusteval.estimate import Estimate
from robusteval.metrics.budget_covariates import DEFAULT_COVARIATES, Covariates, family_covariates
from robusteval.metrics.budget_fit import Fit
from robusteval.results.budget import BudgetEstimate

QUANTILES = (0.05, 0.5, 0.95)
# The adaptive design asks FIRST of a budget stratified, the rest where that stage's fit is least
# sure; the stratified design (the default: on benchmarks/budget.py's grids it was as accurate, and
# its intervals covered as well or better, docs/performance.md) asks all of it stratified.
DESIGNS = ("stratified", "adaptive")
FIRST = 0.7


def choose_cells(n_items: int, n_variants: int, budget: float, seed: int = 0) -> np.ndarray:
    """A boolean items x variants mask of the cells to ask (about ``budget`` of them)."""
    if not 0 < budget <= 1:
        raise ValueError("budget must be in (0, 1]")
    rng = np.random.default_rng(seed)
    total = max(1, round(budget * n_items * n_variants))
    per_item = np.full(n_items, total // n_items)
    per_item[rng.permutation(n_items)[: total % n_items]] += 1  # below one cell per item: a sample of items
    per_item = np.minimum(per_item, n_variants)
    order = rng.permutation(n_variants)
    mask = np.zeros((n_items, n_variants), dtype=bool)
    start = 0
    for i in rng.permutation(n_items):  # round robin over a shuffled variant order: even counts per variant
        cols = order[(start + np.arange(per_item[i])) % n_variants]
        mask[i, cols] = True
        start += per_item[i]
    return mask


def more_cells(observed: np.ndarray, asked: np.ndarray, exists: np.ndarray, total: int, seed: int = 0,
               covariates: np.ndarray | None = None) -> np.ndarray:
    """The adaptive stage: ``asked`` plus ``total - asked.sum()`` more cells where the fit of the
    answers so far is least sure. An unasked cell adds p(1 - p) to the variance of its variant's
    accuracy, so the items are ranked by their mean fitted p(1 - p) over their variants, and the
    most unsure items get the new cells, one per item and pass, each to the variant with the most
    left of its share (the shares even out the variants' counts, as the first stage's are even).

    Items are chosen for being unsure, not a variant's cells for being unsure within the variant:
    that asks an easy variant of weak items and a hard one of strong items, and the penalised fit,
    which pulls every item's ability toward the middle, then reads the variants as closer than they
    are (benchmarks/budget.py: the spread's error doubled at 25%)."""
    more = total - int(asked.sum())
    if more <= 0 or not (exists & ~asked).any():
        return asked.copy()
    rng = np.random.default_rng(seed)
    fitted = fit_grid(np.where(asked, observed, np.nan), exists, covariates)
    fitted = np.where(np.isnan(fitted), 0.5, fitted)  # nothing answered yet: every cell equally unsure
    unsure = np.where(exists, fitted * (1 - fitted), 0.0).sum(axis=1) / np.maximum(exists.sum(axis=1), 1)
    ranked = np.argsort(-(unsure + rng.random(len(unsure)) * 1e-9))  # ties at random
    chosen = asked.copy()
    share = _level_up(asked.sum(axis=0), (exists & ~asked).sum(axis=0), more, rng)  # new cells per variant
    while share.any():
        for i in ranked:
            cols = np.flatnonzero(exists[i] & ~chosen[i] & (share > 0))
            if len(cols):  # the variant that has the most left to take (the rarest so far)
                j = rng.choice(cols[share[cols] == share[cols].max()])
                chosen[i, j] = True
                share[j] -= 1
                if not share.any():
                    break
    return chosen


def _level_up(counts: np.ndarray, capacity: np.ndarray, more: int, rng: np.random.Generator) -> np.ndarray:
    """How many of ``more`` new cells each column takes (at most its ``capacity``) so that the columns'
    ``counts`` end as even as they can: each cell goes to a column with the fewest, ties at random."""
    share = np.zeros(len(counts), dtype=int)
    while more > 0 and (share < capacity).any():
        free = share < capacity
        level = (counts + share)[free].min()
        lowest = np.flatnonzero(free & (counts + share == level))
        if len(lowest) > more:
            lowest = rng.permutation(lowest)[:more]
        share[lowest] += 1
        more -= len(lowest)
    return share


def fit_grid(observed: np.ndarray, exists: np.ndarray | None = None,
             covariates: np.ndarray | None = None) -> np.ndarray:
    """The full grid: asked cells as observed, the others their fitted probability under the same
    empirical-Bayes model `estimate` draws from (`budget_fit.Fit`), so the adaptive stage asks
    where the estimator itself is unsure. NaN everywhere when nothing is answered."""
    exists = np.ones(observed.shape, dtype=bool) if exists is None else exists
    asked = ~np.isnan(observed) & exists
    if not asked.any():
        return np.full(observed.shape, np.nan)
    if asked.all():
        return observed.copy()
    return np.where(asked, observed, Fit(observed, exists, covariates).expected())


def _summary(acc: np.ndarray) -> np.ndarray:
    """draws x variants -> draws x (variants, quantiles, spread)."""
    if np.isnan(acc).all():
        return np.concatenate([acc, np.full((len(acc), len(QUANTILES) + 1), np.nan)], axis=1)
    spread = np.nanmax(acc, axis=1) - np.nanmin(acc, axis=1)
    return np.concatenate([acc, np.nanquantile(acc, QUANTILES, axis=1).T, spread[:, None]], axis=1)


def estimate(observed: np.ndarray, *, names: Iterable[str] | None = None, exists: np.ndarray | None = None,
             covariates: np.ndarray | None = None, budget: float = 1.0, n_draws: int = 200, seed: int = 0,
             level: float = 0.95) -> BudgetEstimate:
    """Per-variant accuracy (named by ``names``, else "0", "1", ...), quantiles and spread of the full
    grid, from the asked cells of ``observed``; ``exists`` marks the cells that are variants at all,
    ``covariates`` (variants x features) what is known of each variant before asking.

    Each figure is its posterior median under the empirical-Bayes model of `budget_fit`, and its
    interval the central ``level`` of its posterior draws: the draws complete the grid with 0/1
    answers, so they carry the unasked cells' noise, the fit's and its prior's."""
    n_items, n_vars = observed.shape
    exists = np.ones(observed.shape, dtype=bool) if exists is None else exists
    rng = np.random.default_rng(seed)
    asked = ~np.isnan(observed) & exists
    if asked.all() or not asked.any():
        # the full grid (nothing to estimate), or nothing asked (nothing to estimate from)
        acc = np.full(n_vars, np.nan) if not asked.any() else np.nanmean(np.where(asked, observed, np.nan), axis=0)
        summary = _summary(acc[None, :])
        point, low, high = summary[0], summary[0], summary[0]
    else:
        summary = _summary(Fit(observed, exists, covariates).draws(n_draws, rng))
        tail = (1 - level) / 2
        point = np.median(summary, axis=0)
        low, high = np.quantile(summary, tail, axis=0), np.quantile(summary, 1 - tail, axis=0)
    est = [Estimate(_num(v), _num(lo), _num(hi), n_items) for v, lo, hi in zip(point, low, high)]
    labels = [str(n) for n in names] if names is not None else [str(j) for j in range(n_vars)]
    per_variant = asked.sum(axis=0)
    return BudgetEstimate(variants=dict(zip(labels, est[:n_vars])),
                          quantiles={f"{q:.0%}": e for q, e in zip(QUANTILES, est[n_vars:n_vars + len(QUANTILES)])},
                          spread=est[-1], asked=int(asked.sum()), cells=int(exists.sum()), budget=budget,
                          asked_per_variant=dict(zip(labels, (int(c) for c in per_variant))))


def _num(v: float) -> float | None:
    return None if np.isnan(v) else float(v)


@dataclass(frozen=True)
class Grid:
    """One family's items x variants grid under a budget: which cells exist and which are asked."""

    family: str
    item_ids: tuple[str, ...]
    variants: tuple[str, ...]
    exists: np.ndarray
    asked: np.ndarray
    total: int  # the cells the budget buys (at most those that exist); `grow` asks up to it
    seed: int
    covariates: Covariates = field(default_factory=Covariates)  # what is known of the variants before asking

    def cells(self) -> set[tuple[str, str, str]]:
        """The asked cells as (item id, family, variant name)."""
        return {(self.item_ids[i], self.family, self.variants[j]) for i, j in np.argwhere(self.asked)}


CovariatesOf = Callable[[str, tuple[str, ...]], Covariates]  # (family, its variants) -> its covariates


def names_only(family: str, variants: tuple[str, ...]) -> Covariates:
    """The default covariates: what a crossed design's variant names say (`name_covariates`)."""
    return family_covariates(variants, DEFAULT_COVARIATES)


def plan(item_ids: list[str], cells: Iterable[tuple[str, str, str]], budget: float, seed: int = 0,
         first: float = 1.0, covariates: CovariatesOf = names_only) -> dict[str, Grid]:
    """Per family, the cells of ``cells`` (item id, family, variant name) to ask before any answer:
    `choose_cells` for ``first`` of the budget (1: stratified; FIRST: adaptive) on the family's grid,
    seeded from ``seed`` and the family's name (a stable hash, not Python's). `grow` adds the rest
    of the budget once these are answered. ``covariates``: each family's, known before asking."""
    by_family: dict[str, dict[str, None]] = {}
    present: set[tuple[str, str, str]] = set()
    for item_id, family, variant in cells:
        by_family.setdefault(family, {})[variant] = None
        present.add((item_id, family, variant))
    out = {}
    for family, names in by_family.items():
        variants = tuple(names)
        exists = np.array([[(i, family, v) in present for v in variants] for i in item_ids], dtype=bool)
        family_seed = zlib.crc32(f"{seed}:{family}".encode())
        total = min(int(exists.sum()), max(1, round(budget * exists.size)))
        chosen = choose_cells(len(item_ids), len(variants), budget * first, seed=family_seed)
        out[family] = Grid(family, tuple(item_ids), variants, exists, chosen & exists, total, family_seed,
                           covariates(family, variants))
    return out


def grow(grid: Grid, observed: np.ndarray) -> Grid:
    """The grid with its adaptive stage (`more_cells`) chosen from the first stage's answers
    (``observed``, as `observed_grid` reads them): the same answers give the same cells, so a rerun
    finds them all cached."""
    return replace(grid, asked=more_cells(observed, grid.asked, grid.exists, grid.total, seed=grid.seed + 1,
                                          covariates=grid.covariates.matrix))


def estimate_grid(grid: Grid, observed: np.ndarray, budget: float, seed: int = 0, n_draws: int = 200) -> BudgetEstimate:
    """`estimate` of ``grid`` from its ``observed`` cells, told the grid's covariates, and recording
    which were used (per kind asked, its columns)."""
    est = estimate(observed, names=grid.variants, exists=grid.exists, covariates=grid.covariates.matrix,
                   budget=budget, n_draws=n_draws, seed=seed)
    return replace(est, covariates=dict(grid.covariates.columns))


def observed_grid(grid: Grid, answers: Iterable[tuple[str, str, bool | float | None]]) -> np.ndarray:
    """The grid's cells from (item id, variant name, correct) answers: the mean over an answer's
    samples, NaN where nothing was answered (not asked, or failed)."""
    row = {item_id: i for i, item_id in enumerate(grid.item_ids)}
    col = {v: j for j, v in enumerate(grid.variants)}
    total, count = np.zeros(grid.exists.shape), np.zeros(grid.exists.shape)
    for item_id, variant, correct in answers:
        if correct is None or item_id not in row or variant not in col:
            continue
        total[row[item_id], col[variant]] += correct
        count[row[item_id], col[variant]] += 1
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def check_grid(cells: Iterable[tuple[str, str, str, float]], budget: float, seed: int = 0,
               n_draws: int = 200, covariates: CovariatesOf = names_only,
               ) -> dict[str, tuple[BudgetEstimate, BudgetEstimate]]:
    """What ``run --budget F --seed S`` would have estimated from a grid whose every cell is known:
    per family of ``cells`` (item id, family, variant name, correct in [0, 1]), the cells the same
    design (`plan`, stratified) would ask, the estimate from them, and the full grid's own figures
    (a `BudgetEstimate` without intervals, every cell asked), so each estimate sits beside its truth;
    ``covariates`` as `plan` takes them.
    A cell given twice counts as the mean of its values."""
    listed = list(cells)
    item_ids = list(dict.fromkeys(c[0] for c in listed))
    grids = plan(item_ids, ((i, f, v) for i, f, v, _ in listed), budget, seed=seed, covariates=covariates)
    out = {}
    for family, grid in grids.items():
        full = observed_grid(grid, ((i, v, y) for i, f, v, y in listed if f == family))
        truth = estimate(full, names=grid.variants, exists=grid.exists, budget=1.0, seed=seed)
        out[family] = (estimate_grid(grid, np.where(grid.asked, full, np.nan), budget, seed=seed, n_draws=n_draws),
                       replace(truth, variants={k: Estimate(e.value) for k, e in truth.variants.items()},
                               quantiles={k: Estimate(e.value) for k, e in truth.quantiles.items()},
                               spread=Estimate(truth.spread.value)))
    return out
