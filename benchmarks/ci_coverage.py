"""Coverage of robusteval's 95% intervals on simulated runs whose truth is known.

A simulated mcq run: ``n`` questions drawn from a population, each asked in 4 variants (say, four
option orders) with 4 options. Question i has a difficulty theta_i ~ Normal(mu, sigma) on the
logit scale and variant v an effect delta_v, so the variant is answered right with probability
sigmoid(theta_i + delta_v); a wrong answer picks among the 3 distractors with the question's own
preferences (Dirichlet(0.5, 0.5, 0.5)), so wrong answers agree more often than at random. The
truths are the population values (computed exactly per question and averaged over a million
questions): accuracy over all cells, one variant's accuracy, the consistency rate (mean over
questions of the share of variant pairs giving the same answer) and the spread (largest minus
smallest variant accuracy).

For each n, ``--reps`` runs are simulated and each metric's interval is computed twice: the old
way (percentile bootstrap over questions, what mcq used before) and the way mcq computes it now
(`proportion` for the shares, `spread_interval` for the spread; metrics/stats.py). Printed: the
share of intervals that hold the truth (coverage, target 0.95) and their mean width, with the
Monte-Carlo standard error of a coverage near 0.95. Nothing here passes or fails.

    python benchmarks/ci_coverage.py [--reps 1200] [--ns 10,20,50,100] [--scenarios mid,high,null]
        [--resamples 1000]
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.metrics.consistency import item_consistency, spread_of  # noqa: E402
from robusteval.metrics.stats import bootstrap_sums, proportion, spread_interval  # noqa: E402

OPTIONS = 4
METRICS = ("accuracy", "variant_accuracy", "consistency_rate", "spread")


@dataclass(frozen=True)
class Scenario:
    name: str
    mu: float  # mean question difficulty (logit)
    sigma: float  # spread of difficulties between questions (logit)
    delta: tuple[float, ...]  # variant effects (logit)
    about: str


SCENARIOS = {
    "mid": Scenario("mid", 0.5, 1.5, (0.4, 0.15, -0.15, -0.4), "accuracy ~0.59, variants differ a little"),
    "high": Scenario("high", 3.0, 1.5, (0.4, 0.15, -0.15, -0.4), "accuracy ~0.90, near the ceiling"),
    "null": Scenario("null", 0.5, 1.5, (0.0, 0.0, 0.0, 0.0), "accuracy ~0.59, variants do not matter (spread 0)"),
}


def simulate(rng: np.random.Generator, s: Scenario, n: int) -> tuple[np.ndarray, np.ndarray]:
    """One run: correct (n x variants, 0/1) and answers (n x variants, option index, 0 = gold)."""
    delta = np.array(s.delta)
    p = expit(rng.normal(s.mu, s.sigma, n)[:, None] + delta[None, :])
    preference = np.cumsum(rng.dirichlet([0.5] * (OPTIONS - 1), n), axis=1)
    correct = rng.random(p.shape) < p
    u = rng.random(p.shape)
    distractor = 1 + np.minimum((u[:, :, None] > preference[:, None, :]).sum(axis=2), OPTIONS - 2)
    return correct.astype(float), np.where(correct, 0, distractor).astype(float)


@functools.cache
def truths(s: Scenario, questions: int = 1_000_000, seed: int = 99) -> dict[str, float]:
    """Population values: each question's expected metrics in closed form, averaged."""
    rng = np.random.default_rng(seed)
    delta = np.array(s.delta)
    p = expit(rng.normal(s.mu, s.sigma, questions)[:, None] + delta[None, :])
    same_distractor = (rng.dirichlet([0.5] * (OPTIONS - 1), questions) ** 2).sum(axis=1)
    first, second = np.triu_indices(len(delta), 1)
    agree = p[:, first] * p[:, second] + (1 - p[:, first]) * (1 - p[:, second]) * same_distractor[:, None]
    by_variant = p.mean(axis=0)
    return {"accuracy": float(by_variant.mean()), "variant_accuracy": float(by_variant[0]),
            "consistency_rate": float(agree.mean()), "spread": float(by_variant.max() - by_variant.min())}


def _ratio(sums: np.ndarray) -> np.ndarray:
    return sums[:, 0] / sums[:, 1]


def intervals(correct: np.ndarray, answers: np.ndarray, *, seed: int, resamples: int) -> dict:
    """(metric, "old" | "new") -> (low, high), computed as mcq's family_metrics does."""
    n, k = correct.shape
    ones, answered = np.ones(n), np.ones_like(correct)
    by_item = item_consistency(answers)
    shares = {"accuracy": (correct.sum(axis=1), np.full(n, float(k))),
              "variant_accuracy": (correct[:, 0], ones),
              "consistency_rate": (by_item, ones)}
    out = {}
    for metric, (numerator, denominator) in shares.items():
        old = bootstrap_sums(np.column_stack([numerator, denominator]), _ratio, n_resamples=resamples, seed=seed,
                             method="percentile")
        new = proportion(numerator, denominator)
        out[metric, "old"], out[metric, "new"] = (old.low, old.high), (new.low, new.high)
    old = bootstrap_sums(np.hstack([correct, answered]), lambda s: spread_of(s[:, :k] / s[:, k:]),
                         n_resamples=resamples, seed=seed, method="percentile")
    new = spread_interval(correct, answered, n_resamples=resamples, seed=seed)
    out["spread", "old"], out["spread", "new"] = (old.low, old.high), (new.low, new.high)
    return out


def coverage(s: Scenario, n: int, reps: int, resamples: int) -> dict:
    """(metric, method) -> (coverage, mean width) over ``reps`` simulated runs of n questions."""
    truth = truths(s)
    rng = np.random.default_rng(1000 + n)
    hits: dict = {}
    widths: dict = {}
    for r in range(reps):
        correct, answers = simulate(rng, s, n)
        for key, (low, high) in intervals(correct, answers, seed=r, resamples=resamples).items():
            held = low is not None and low <= truth[key[0]] <= high
            hits[key] = hits.get(key, 0) + held
            widths[key] = widths.get(key, 0.0) + (high - low if low is not None else 0.0)
    return {key: (hits[key] / reps, widths[key] / reps) for key in hits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1200, help="simulated runs per n and scenario (default: 1200)")
    parser.add_argument("--ns", default="10,20,50,100", help="numbers of questions (default: 10,20,50,100)")
    parser.add_argument("--scenarios", default="mid,high,null", help=f"of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples per interval (default: 1000)")
    args = parser.parse_args()
    ns = [int(x) for x in args.ns.split(",")]
    se = math.sqrt(0.95 * 0.05 / args.reps)
    print(f"nominal 95% intervals; {args.reps} simulated runs per cell: Monte-Carlo standard error of a "
          f"coverage near 0.95 is {se:.4f} (a 95% band of +-{1.96 * se:.3f})")
    print("old = percentile bootstrap over questions; new = what robusteval computes now")
    for name in args.scenarios.split(","):
        s = SCENARIOS[name]
        truth = truths(s)
        print(f"\nscenario {name}: {s.about}; truths: "
              + ", ".join(f"{m} {truth[m]:.3f}" for m in METRICS))
        print(f"  {'metric':<17}{'n':>4}  {'old cover':>9}  {'new cover':>9}  {'old width':>9}  {'new width':>9}")
        for n in ns:
            started = time.perf_counter()
            result = coverage(s, n, args.reps, args.resamples)
            for metric in METRICS:
                (old_c, old_w), (new_c, new_w) = result[metric, "old"], result[metric, "new"]
                print(f"  {metric:<17}{n:>4}  {old_c:>9.3f}  {new_c:>9.3f}  {old_w:>9.3f}  {new_w:>9.3f}")
            print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
