"""Budgeted estimation: the design's counts, and the estimator against a known grid."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.budget import FIRST, QUANTILES, choose_cells, estimate, fit_grid, more_cells


@pytest.mark.parametrize("items, variants, budget", [(100, 10, 0.1), (37, 10, 0.25), (50, 4, 0.02), (20, 3, 1.0)])
def test_the_budget_is_asked_and_spread_evenly(items, variants, budget):
    mask = choose_cells(items, variants, budget, seed=1)
    total = min(items * variants, max(1, round(budget * items * variants)))
    assert mask.sum() == total  # the budget, never more (50 x 4 at 2%: 4 cells, not one per item)
    assert mask.any(axis=1).sum() == min(items, total)  # every item once the budget allows it
    per_item, per_variant = mask.sum(axis=1), mask.sum(axis=0)
    assert per_item.max() - per_item.min() <= 1 and per_variant.max() - per_variant.min() <= 1
    assert (choose_cells(items, variants, budget, seed=1) == mask).all()


def test_a_full_grid_is_returned_as_it_is():
    grid = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    assert (fit_grid(grid) == grid).all()
    est = estimate(grid, n_resamples=20)
    assert [v.value for v in est.variants.values()] == pytest.approx([2 / 3, 1 / 3])
    assert est.spread.value == pytest.approx(1 / 3) and est.asked == est.cells == 6


def _rasch_grid(items: int, variants: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ability = rng.normal(0, 1.5, items)
    ease = np.linspace(-1, 1, variants)
    return (rng.random((items, variants)) < 1 / (1 + np.exp(-(ability[:, None] + ease[None, :])))).astype(float)


def test_ten_percent_recovers_the_variants_accuracies_of_a_rasch_grid():
    # 10% of 10 variants is one cell per item: the error is bounded by the ~200 items asked per
    # variant (sd of a share ~0.035), which the model cannot beat; at 25% it borrows strength.
    truth = _rasch_grid(2000, 10, seed=3)
    mask = choose_cells(2000, 10, 0.1, seed=0)
    acc = fit_grid(np.where(mask, truth, np.nan)).mean(axis=0)
    true_acc = truth.mean(axis=0)
    errors = np.abs(acc - true_acc)
    assert errors.max() < 0.1 and errors.mean() < 0.03
    assert np.abs(np.quantile(acc, QUANTILES) - np.quantile(true_acc, QUANTILES)).max() < 0.05


def test_the_intervals_hold_their_values():
    truth = _rasch_grid(200, 6, seed=4)
    est = estimate(np.where(choose_cells(200, 6, 0.25, seed=0), truth, np.nan), n_resamples=20)
    assert est.asked == 300 and est.cells == 1200
    assert all(e.low <= e.value <= e.high for e in (*est.variants.values(), *est.quantiles.values(), est.spread))


def test_the_spread_interval_holds_a_small_spread_its_noisy_estimate_overstates():
    # Ten variants that are all alike: the full grid's spread is only the answers' noise (0.04-0.11),
    # and the spread of ten estimates from a quarter of the cells sits well above it. A percentile
    # interval of the refits sits higher still and held it in 0 of these 10 grids; the basic
    # (reflected) interval holds it in 9.
    held = 0
    for r in range(10):
        rng = np.random.default_rng(r)
        ability = rng.normal(0, 1.5, 300)
        truth = (rng.random((300, 10)) < 1 / (1 + np.exp(-ability[:, None]))).astype(float)
        spread = estimate(np.where(choose_cells(300, 10, 0.25, seed=r), truth, np.nan), n_resamples=50,
                          seed=r).spread
        held += spread.low <= np.ptp(truth.mean(axis=0)) <= spread.high
        assert 0 <= spread.low <= spread.value <= spread.high <= 1
    assert held >= 8


def test_the_adaptive_stage_fills_the_budget_where_the_fit_is_least_sure():
    truth = _rasch_grid(300, 6, seed=5)
    exists = np.ones(truth.shape, dtype=bool)
    exists[:50, 5] = False  # a variant some items do not have
    total = round(0.2 * exists.size)
    first = choose_cells(300, 6, 0.2 * FIRST, seed=2) & exists
    observed = np.where(first, truth, np.nan)
    chosen = more_cells(observed, first, exists, total, seed=3)
    assert chosen.sum() == total and (chosen >= first).all() and not (chosen & ~exists).any()
    per_variant = chosen.sum(axis=0)
    assert per_variant.max() - per_variant.min() <= 1  # as even as the first stage
    assert (more_cells(observed, first, exists, total, seed=3) == chosen).all()  # the same answers, the same cells
    # the new cells go to the most unsure items (the fit's mean p(1 - p)), one per item (fewer new
    # cells than items); an item whose open variants have taken their share is passed over, so
    # nearly all, not all, of them are the most unsure
    fitted = fit_grid(observed)
    unsure = np.where(exists, fitted * (1 - fitted), 0.0).sum(axis=1) / exists.sum(axis=1)
    given = (chosen & ~first).any(axis=1)
    assert 0 < given.sum() == (chosen & ~first).sum() < 300
    top = np.argsort(-unsure)[:given.sum()]
    assert given[top].mean() >= 0.9 and unsure[given].mean() > unsure[~given].mean()


def test_nothing_answered_yet_still_gives_the_budget():
    # --estimate answers nothing: the second stage is then a random draw of the same size
    exists = np.ones((40, 5), dtype=bool)
    first = choose_cells(40, 5, 0.1, seed=1)
    chosen = more_cells(np.full(exists.shape, np.nan), first, exists, 30, seed=1)
    assert chosen.sum() == 30 and (chosen >= first).all()
