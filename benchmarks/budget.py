"""Budgeted estimation (metrics/budget.py) against full grids with a known truth.

    .venv/bin/python benchmarks/budget.py [--items 1000] [--variants 10] [--repeats 20]

For each budget (2, 5, 10, 25%) and repeat: draw a Rasch grid (item abilities ~ N(0, 1.5), variant
eases spread over [-1, 1]: a known full grid, as the stub would give), ask only the chosen cells,
estimate, and compare with the full grid: mean absolute error of the per-variant accuracies, of
the 5/50/95% quantiles and of the spread, and how often the reported 95% intervals hold the full
grid's value. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse

import numpy as np

from robusteval.metrics.budget import QUANTILES, choose_cells, estimate


def grid(items: int, variants: int, rng: np.random.Generator) -> np.ndarray:
    ability = rng.normal(0, 1.5, items)
    ease = np.linspace(-1, 1, variants)
    p = 1 / (1 + np.exp(-(ability[:, None] + ease[None, :])))
    return (rng.random((items, variants)) < p).astype(float)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--variants", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--resamples", type=int, default=100)
    a = ap.parse_args()
    print(f"{a.items} items x {a.variants} variants, {a.repeats} repeats, {a.resamples} bootstrap refits")
    print("budget  acc_err  quant_err  spread_err  cover_acc  cover_quant  cover_spread")
    for budget in (0.02, 0.05, 0.10, 0.25):
        acc_err, q_err, s_err, c_acc, c_q, c_s = [], [], [], [], [], []
        for r in range(a.repeats):
            rng = np.random.default_rng(1000 + r)
            truth = grid(a.items, a.variants, rng)
            est = estimate(np.where(choose_cells(a.items, a.variants, budget, seed=r), truth, np.nan),
                           n_resamples=a.resamples, seed=r)
            true_acc = truth.mean(axis=0)
            true_q = np.quantile(true_acc, QUANTILES)
            true_spread = true_acc.max() - true_acc.min()
            acc_err += [abs(e.value - t) for e, t in zip(est.variants, true_acc)]
            q_err += [abs(e.value - t) for e, t in zip(est.quantiles, true_q)]
            s_err.append(abs(est.spread.value - true_spread))
            c_acc += [e.low <= t <= e.high for e, t in zip(est.variants, true_acc)]
            c_q += [e.low <= t <= e.high for e, t in zip(est.quantiles, true_q)]
            c_s.append(est.spread.low <= true_spread <= est.spread.high)
        print(f"{budget:5.0%}  {np.mean(acc_err):7.3f}  {np.mean(q_err):9.3f}  {np.mean(s_err):10.3f}  "
              f"{np.mean(c_acc):9.2f}  {np.mean(c_q):11.2f}  {np.mean(c_s):12.2f}")


if __name__ == "__main__":
    main()
