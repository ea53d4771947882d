"""Coverage of the two-way (items x variants) 95% interval for the population mean accuracy, on
simulated crossed grids whose truth is known (issue 46).

A simulated grid: ``n`` questions and ``k`` variants (templates), both drawn from populations.
Question i has a difficulty a_i ~ Normal(0, 1.5) on the logit scale, variant v an effect
b_v ~ Normal(0, sigma_v), and each (question, variant) pair an interaction c_iv ~ Normal(0, 0.5)
(a template that suits some questions, not others); the cell is right with probability
sigmoid(mu + a_i + b_v + c_iv). The truth is the population mean accuracy,
E sigmoid(mu + Normal(0, 1.5^2 + sigma_v^2 + 0.5^2)), by Gauss-Hermite quadrature: the accuracy
over all questions and all templates one could have drawn.

For each k and sigma_v, ``--reps`` grids are simulated and the share of intervals that hold the
truth is printed for the two-way interval (`metrics.two_way`) and, beside it, for the item-only
interval robusteval prints as the family's accuracy (`stats.proportion`, clustered by question),
with their mean widths. Nothing here passes or fails.

With ``--grid FILE`` (a real correctness grid, e.g. benchmarks/data/smollm2_mmlu_prompt300_gpu.csv:
one model's questions x 10 templates), the population is that grid instead: each repeat draws
``--items`` questions and k templates from it with replacement (independent draws from the grid's
own questions and templates, so the population mean is the full grid's mean) and asks whether the
interval holds the full grid's mean. No model is assumed, only the grid's exchangeability.

    python benchmarks/two_way.py [--reps 2000] [--items 100] [--ks 5,10,20] [--sigmas 0,0.25,0.5,1]
    python benchmarks/two_way.py --grid benchmarks/data/smollm2_mmlu_prompt300_gpu.csv [--ks 5,10,20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.metrics.stats import proportion  # noqa: E402
from robusteval.metrics.two_way import two_way  # noqa: E402

MU, SIGMA_ITEM, SIGMA_INTERACTION = 0.5, 1.5, 0.5


def truth(sigma_v: float) -> float:
    """E sigmoid(MU + Normal(0, s^2)), s^2 the three variances summed (Gauss-Hermite, 80 nodes)."""
    s = np.sqrt(SIGMA_ITEM ** 2 + sigma_v ** 2 + SIGMA_INTERACTION ** 2)
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float((w * expit(MU + s * x)).sum() / w.sum())


def grid(rng: np.random.Generator, n: int, k: int, sigma_v: float) -> np.ndarray:
    logit = (MU + rng.normal(0, SIGMA_ITEM, (n, 1)) + rng.normal(0, sigma_v, (1, k))
             + rng.normal(0, SIGMA_INTERACTION, (n, k)))
    return (rng.random((n, k)) < expit(logit)).astype(float)


def real_grid(path: str) -> np.ndarray:
    """The file's first model and family as an items x variants 0/1 matrix (items with every variant),
    read as benchmarks/budget.py reads real grids."""
    from budget import read_grids  # benchmarks/ is on sys.path when this file runs

    return next(iter(read_grids(path).values()))[0]


def cell(reps: int, n: int, k: int, sigma_v: float, seed: int,
         population: np.ndarray | None = None) -> tuple[float, float, float, float, float]:
    """Coverage and mean width of the two-way and the item-only interval, and the mean variant share."""
    rng = np.random.default_rng(seed)
    target = truth(sigma_v) if population is None else float(population.mean())
    hits = np.zeros(2)
    widths = np.zeros(2)
    share = 0.0
    for _ in range(reps):
        if population is None:
            y = grid(rng, n, k, sigma_v)
        else:
            rows = rng.integers(0, len(population), n)
            y = population[rows][:, rng.integers(0, population.shape[1], k)]
        tw = two_way(y)
        item = proportion(y.sum(axis=1), np.full(n, k))
        for j, (low, high) in enumerate(((tw.low, tw.high), (item.low, item.high))):
            assert low is not None and high is not None
            hits[j] += low <= target <= high
            widths[j] += high - low
        share += tw.shares.variants if tw.shares else 0.0
    return hits[0] / reps, hits[1] / reps, widths[0] / reps, widths[1] / reps, share / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="simulated grids per cell (default: 2000)")
    parser.add_argument("--items", type=int, default=100, help="questions per grid (default: 100)")
    parser.add_argument("--ks", default="5,10,20", help="numbers of variants (default: 5,10,20)")
    parser.add_argument("--sigmas", default="0,0.25,0.5,1", help="sd of the variant effects, logit scale")
    parser.add_argument("--grid", help="a real correctness grid to draw from instead of the simulation")
    args = parser.parse_args()
    population = real_grid(args.grid) if args.grid else None
    if population is not None:
        print(f"{args.grid}: {population.shape[0]} questions x {population.shape[1]} variants, mean "
              f"{population.mean():.4f}, variance shares {two_way(population).shares}")
    se = np.sqrt(0.95 * 0.05 / args.reps)
    print(f"nominal 95%; {args.reps} grids per row, {args.items} questions; Monte-Carlo se of a coverage "
          f"near 0.95: {se:.3f}")
    print(f"{'k':>3} {'sd variants':>11} {'variant share':>13} {'two-way cover':>13} {'item-only cover':>15} "
          f"{'two-way width':>13} {'item width':>10}")
    for k in (int(x) for x in args.ks.split(",")):
        for sigma in (float(x) for x in args.sigmas.split(",")) if population is None else [0.0]:
            started = time.perf_counter()
            tw_c, it_c, tw_w, it_w, share = cell(args.reps, args.items, k, sigma, 1000 * k + int(100 * sigma),
                                                 population)
            sd = f"{sigma:>11.2f}" if population is None else f"{'(grid)':>11}"
            print(f"{k:>3} {sd} {share:>13.3f} {tw_c:>13.3f} {it_c:>15.3f} {tw_w:>13.3f} {it_w:>10.3f}"
                  f"  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
