"""Budgeted estimation (metrics/budget.py) against full grids whose truth is known.

    .venv/bin/python benchmarks/budget.py [--items 1000] [--variants 10] [--repeats 40] [--resamples 100]
                                          [--interaction 1.5]
    .venv/bin/python benchmarks/budget.py --real-limit 5 --real-cache DIR   # also the embedded model's grid

Two grids, the same table for each: per budget (2, 5, 10, 25%), design (``stratified``: every cell
from `choose_cells`; ``adaptive``: what ``--budget`` does, `choose_cells` for FIRST of the budget,
then `more_cells` on those answers) and repeat (the cells chosen with another seed), ask only the
chosen cells, estimate, and compare with the full grid: mean absolute error of the per-variant
accuracies, of the 5/50/95% quantiles and of the spread, and how often the reported 95% intervals
hold the full grid's value. For the synthetic grid, ``oracle_acc`` is the per-variant accuracy error
of an estimator that is told every item's true ability and fits only the variant's ease to the same
cells: no estimator of those cells can expect to do much better, so it shows what the grid's size
allows.

- synthetic: a Rasch grid drawn anew per repeat (item abilities ~ N(0, 1.5), variant eases spread
  over [-1, 1]), the ground truth a stub-like backend would give; with ``--interaction S``, also one
  whose cells each add an N(0, S) term to the logit, so the fitted model is wrong as on real grids;
- real (``--real-limit N``): MMLU (offline) x the 10 bundled prompt templates asked of the embedded
  model (``robusteval run mcq --families prompt --max-tokens 24``) through the store in
  ``--real-cache``, so a rerun or a longer run reuses what was asked. The truth is that asked grid.
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq

from robusteval.metrics.budget import FIRST, QUANTILES, choose_cells, estimate, more_cells

BUDGETS = (0.02, 0.05, 0.10, 0.25)
DESIGNS = ("stratified", "adaptive")


def rasch_grid(items: int, variants: int, rng: np.random.Generator,
               interaction: float = 0.0) -> tuple[np.ndarray, np.ndarray | None]:
    """A drawn 0/1 grid and each item's true ability (None when the grid is not Rasch: with an
    ``interaction``, each cell's logit also gets its own N(0, interaction) term, an item that one
    template suits and another does not, which the fitted model cannot express)."""
    ability = rng.normal(0, 1.5, items)
    ease = np.linspace(-1, 1, variants)
    logit = ability[:, None] + ease[None, :]
    if interaction:
        logit = logit + rng.normal(0, interaction, logit.shape)
    grid = (rng.random((items, variants)) < 1 / (1 + np.exp(-logit))).astype(float)
    return grid, None if interaction else ability


def cells(truth: np.ndarray, budget: float, design: str, seed: int) -> np.ndarray:
    items, variants = truth.shape
    if design == "stratified":
        return choose_cells(items, variants, budget, seed=seed)
    first = choose_cells(items, variants, budget * FIRST, seed=seed)
    total = max(1, round(budget * truth.size))
    return more_cells(np.where(first, truth, np.nan), first, np.ones(truth.shape, dtype=bool), total, seed=seed + 1)


def oracle_accuracy(truth: np.ndarray, ability: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per variant: asked cells as observed, the others from the true abilities and the variant's
    ease fitted (maximum likelihood) to its asked cells."""
    acc = []
    for j in range(truth.shape[1]):
        a, y = ability[mask[:, j]], truth[mask[:, j], j]
        if 0 < y.sum() < len(y):
            ease = brentq(lambda b, a=a, y=y: float((y - 1 / (1 + np.exp(-(a + b)))).sum()), -20, 20)
        else:  # all right or all wrong: the ease is at infinity; its cells say as much
            ease = 20.0 if y.sum() else -20.0
        p = 1 / (1 + np.exp(-(ability + ease)))
        acc.append(np.where(mask[:, j], truth[:, j], p).mean())
    return np.array(acc)


def table(truth_of: Callable[[int], tuple[np.ndarray, np.ndarray | None]], repeats: int, resamples: int,
          budgets: tuple[float, ...] = BUDGETS) -> None:
    print("budget  design      acc_err  oracle_acc  quant_err  spread_err  cover_acc  cover_quant  cover_spread")
    for budget in budgets:
        for design in DESIGNS:
            row(truth_of, budget, design, repeats, resamples)


def row(truth_of: Callable[[int], tuple[np.ndarray, np.ndarray | None]], budget: float, design: str,
        repeats: int, resamples: int) -> None:
    acc_err, o_err, q_err, s_err, c_acc, c_q, c_s = [], [], [], [], [], [], []
    for r in range(repeats):
        truth, ability = truth_of(r)
        mask = cells(truth, budget, design, seed=r)
        est = estimate(np.where(mask, truth, np.nan), n_resamples=resamples, seed=r)
        true_acc = truth.mean(axis=0)
        if ability is not None:
            o_err += list(np.abs(oracle_accuracy(truth, ability, mask) - true_acc))
        true_q = np.quantile(true_acc, QUANTILES)
        true_spread = true_acc.max() - true_acc.min()
        acc, quant = list(est.variants.values()), list(est.quantiles.values())
        acc_err += [abs(e.value - t) for e, t in zip(acc, true_acc)]
        q_err += [abs(e.value - t) for e, t in zip(quant, true_q)]
        s_err.append(abs(est.spread.value - true_spread))
        c_acc += [e.low <= t <= e.high for e, t in zip(acc, true_acc)]
        c_q += [e.low <= t <= e.high for e, t in zip(quant, true_q)]
        c_s.append(est.spread.low <= true_spread <= est.spread.high)
    oracle = f"{np.mean(o_err):10.3f}" if o_err else f"{'-':>10}"
    print(f"{budget:5.0%}  {design:10}  {np.mean(acc_err):7.3f}  {oracle}  {np.mean(q_err):9.3f}  "
          f"{np.mean(s_err):10.3f}  {np.mean(c_acc):9.2f}  {np.mean(c_q):11.2f}  {np.mean(c_s):12.2f}", flush=True)


def real_grid(limit: int, cache: str, out: str, model: str | None = None) -> np.ndarray:
    """The embedded model's full MMLU x 10 templates grid (asked, or read from the store)."""
    from robusteval.configure import build_config
    from robusteval.run import run_suite

    config = build_config({}, {"suite": "mcq", "families": ("prompt",), "limit": limit, "max_tokens": 24,
                               "cache_dir": cache, "out_dir": out, "run_id": f"budget-grid-{limit}", "overwrite": True,
                               **({"models": (model,)} if model else {})})
    run_dir, _, _ = asyncio.run(run_suite(config, quiet=True))
    results = json.loads((run_dir / "results.json").read_text())
    usage = next(iter(results["models"].values()))["usage"]
    print(f"real grid: {limit} MMLU questions x 10 templates, {usage['requests']} requests "
          f"({usage['cached']} from the store, {usage['new']} asked now)")
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    items = list(dict.fromkeys(r["item_id"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    grid = np.full((len(items), len(variants)), np.nan)
    for r in rows:
        if r["correct"] is not None:
            grid[items.index(r["item_id"]), variants.index(r["variant"])] = float(r["correct"])
    keep = ~np.isnan(grid).any(axis=1)  # a question with a failed request is left out of the truth
    print(f"accuracy per template: {np.round(np.nanmean(grid[keep], axis=0), 3).tolist()}")
    return grid[keep]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--variants", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--real-limit", type=int, default=0, help="also the embedded model's grid of this many questions")
    ap.add_argument("--real-cache", default=".robusteval/budget-cache")
    ap.add_argument("--real-out", default=".robusteval/budget-runs")
    ap.add_argument("--real-model", help="the model spec (default: the embedded model; on a shared machine "
                                         "'llamacpp?n_threads=1', which gives the same replies)")
    ap.add_argument("--interaction", type=float, default=0.0,
                    help="also a synthetic grid that is not Rasch: each cell's logit gets an N(0, this) term")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--budgets", default=",".join(f"{b:g}" for b in BUDGETS), help="comma-separated shares")
    a = ap.parse_args()
    budgets = tuple(float(b) for b in a.budgets.split(","))
    if not a.skip_synthetic:
        print(f"synthetic Rasch grid: {a.items} items x {a.variants} variants, {a.repeats} repeats, "
              f"{a.resamples} bootstrap refits")
        table(lambda r: rasch_grid(a.items, a.variants, np.random.default_rng(1000 + r)), a.repeats, a.resamples,
              budgets)
        if a.interaction:
            print(f"synthetic grid with item x variant interaction N(0, {a.interaction:g}) on the logit "
                  f"(not Rasch): {a.items} items x {a.variants} variants")
            table(lambda r: rasch_grid(a.items, a.variants, np.random.default_rng(1000 + r), a.interaction),
                  a.repeats, a.resamples, budgets)
    if a.real_limit:
        truth = real_grid(a.real_limit, a.real_cache, a.real_out, a.real_model)
        print(f"real grid ({truth.shape[0]} x {truth.shape[1]}), {a.repeats} repeats of the cell choice")
        table(lambda r: (truth, None), a.repeats, a.resamples, budgets)


if __name__ == "__main__":
    main()
