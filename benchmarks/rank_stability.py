"""Ranking stability across variants and the planner, on simulated crossed grids whose truth is known
(items x variants x models), and on the real grids in benchmarks/data (issue 46). Nothing here passes
or fails; the figures are in docs/statistics.md.

Simulation: ``m`` models of abilities 0, gap, 2 gap, ... (logit scale) answer ``n`` questions (difficulty
Normal(0, 1.5), a question x model interaction Normal(0, 0.5) fixed across templates) under ``k``
templates; a template has a common effect Normal(0, 0.5) and a template x model effect Normal(0, sd)
(a template that suits one model more than another: what reorders a ranking), and each (question,
template, model) an interaction Normal(0, 0.5); a cell is right with probability sigmoid(sum).
The estimands are on the questions asked (the benchmark's items), over the population of templates:

- the share of templates under which model 0 beats model 1 (ties half): the truth is that share over
  ``--new`` fresh templates (each with its own cell draws); the printed coverage is the share of
  repeats whose interval (`metrics.rank_stability.pair_share`, Wilson over the k templates) holds it;
- the chance the top model (best mean on the k templates) is beaten under a new template: truth over
  the same fresh templates; the estimate is the leave-one-template-out share
  (`metrics.rank_stability.top_change`); printed: the mean estimate, the mean truth, the plug-in
  estimate (the share of the k templates where the top is beaten) for contrast, and the coverage of the
  estimate's Wilson interval;
- Kendall's W: its mean.

``--plan``: the planner (`metrics.sample_size`) sized from a pilot of ``--pilot-items`` x
``--pilot-variants`` of the same kind of grid (one model), then grids simulated at the planned size:
the mean width achieved against the target, and the coverage of the population mean; and how often a
pilot's plan asks enough (at least the true components' items, or out of reach where it is), with the
pilot's estimate and with ``--assurance 0.8`` (`metrics.sample_size.with_upper_variance`).

``--real``: the two SmolLM2 grids of benchmarks/data (the same model and 10 templates, answered on two
backends: a llama.cpp CPU run on 109 questions and a GPU batch run on 300, 109 shared) as two
"models" on their shared questions; k templates drawn with replacement from the 10, so the
population is the 10 and its truths are known. Two backends of one model should be a coin flip.

    python benchmarks/rank_stability.py [--reps 400] [--ks 5,10,20] [--gaps 0.1,0.3] [--sds 0.1,0.3] [--models 2,4]
    python benchmarks/rank_stability.py --plan [--targets 0.05,0.1]
    python benchmarks/rank_stability.py --real
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

from robusteval.metrics.rank_stability import RankStability, kendall_w, pair_share, rank_stability  # noqa: E402

SD_ITEM, SD_ITEM_MODEL, SD_TEMPLATE, SD_CELL = 1.5, 0.5, 0.5, 0.5


def accuracies(rng: np.random.Generator, base: np.ndarray, k: int, sd: float) -> np.ndarray:
    """models x k templates: the accuracy of each model under k fresh templates on the questions whose
    fixed part (ability + difficulty + question x model) is ``base`` (models x items)."""
    m, n = base.shape
    out = np.empty((m, k))
    step = max(1, 2_000_000 // (m * n))  # templates per chunk: bounded memory
    for s in range(0, k, step):
        c = min(step, k - s)
        logit = (base[:, :, None] + rng.normal(0, SD_TEMPLATE, (1, 1, c)) + rng.normal(0, sd, (m, 1, c))
                 + rng.normal(0, SD_CELL, (m, n, c)))
        out[:, s:s + c] = (rng.random((m, n, c)) < expit(logit)).mean(axis=1)
    return out


def beaten(scores: np.ndarray, top: int) -> np.ndarray:
    """Per template (column): whether some model scores strictly above ``top``."""
    return (scores > scores[top]).any(axis=0)


def measured(asked: np.ndarray) -> tuple[RankStability, int]:
    """`rank_stability` of a models x variants matrix, and the index of its top model."""
    rs = rank_stability(asked, [str(j) for j in range(len(asked))], [str(v) for v in range(asked.shape[1])])
    return rs, int(rs.top or 0)


def covers(rs: RankStability, truth: float) -> bool:
    """Whether the top-change interval holds ``truth``."""
    assert rs.top_change_low is not None and rs.top_change_high is not None
    return rs.top_change_low <= truth <= rs.top_change_high


def ranking_cell(reps: int, n: int, k: int, m: int, gap: float, sd: float, new: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    hits = share_width = 0.0
    est, truth, plug, top_hits, ws = [], [], [], 0, []
    for _ in range(reps):
        base = (gap * np.arange(m))[::-1, None] + rng.normal(0, SD_ITEM, (1, n)) + rng.normal(0, SD_ITEM_MODEL, (m, n))
        asked = accuracies(rng, base, k, sd)
        fresh = accuracies(rng, base, new, sd)
        true_share = float(((fresh[0] > fresh[1]) + 0.5 * (fresh[0] == fresh[1])).mean())
        rs, top = measured(asked)
        p = rs.pairs[0]  # model 0 against model 1
        hits += p.low <= true_share <= p.high
        share_width += p.high - p.low
        t = float(beaten(fresh, top).mean())
        top_hits += covers(rs, t)
        est.append(rs.top_change)
        truth.append(t)
        plug.append(float(beaten(asked, top).mean()))
        ws.append(np.nan if rs.kendall_w is None else rs.kendall_w)
    est_a, truth_a = np.array(est), np.array(truth)
    return {"share_cover": hits / reps, "share_width": share_width / reps, "top_est": est_a.mean(),
            "top_truth": truth_a.mean(), "top_plugin": float(np.mean(plug)), "top_cover": top_hits / reps,
            "top_mae": float(np.abs(est_a - truth_a).mean()), "w": float(np.nanmean(ws))}


def simulate_rankings(args) -> None:
    print(f"{args.reps} repeats per row, {args.items} questions, {args.new} fresh templates for each truth; "
          f"nominal 95%; Monte-Carlo se of a coverage near 0.95: {np.sqrt(0.95 * 0.05 / args.reps):.3f}")
    print(f"{'m':>2} {'k':>3} {'gap':>4} {'sd':>4} | {'share cover':>11} {'width':>5} | {'W':>5} | "
          f"{'P(top changes): LOO est':>23} {'truth':>6} {'plug-in':>7} {'|est-truth|':>11} {'cover':>6}")
    for m in (int(x) for x in args.models.split(",")):
        for k in (int(x) for x in args.ks.split(",")):
            for gap in (float(x) for x in args.gaps.split(",")):
                for sd in (float(x) for x in args.sds.split(",")):
                    started = time.perf_counter()
                    r = ranking_cell(args.reps, args.items, k, m, gap, sd, args.new,
                                     seed=hash((m, k, gap, sd)) % 2**32)
                    print(f"{m:>2} {k:>3} {gap:>4.2f} {sd:>4.2f} | {r['share_cover']:>11.3f} {r['share_width']:>5.2f}"
                          f" | {r['w']:>5.2f} | {r['top_est']:>23.3f} {r['top_truth']:>6.3f} {r['top_plugin']:>7.3f}"
                          f" {r['top_mae']:>11.3f} {r['top_cover']:>6.3f}  ({time.perf_counter() - started:.0f} s)",
                          flush=True)


def plan_check(args) -> None:
    """The planner sized from a simulated pilot, then checked at the planned size."""
    from robusteval.metrics.sample_size import plan, with_upper_variance
    from robusteval.metrics.two_way import components, two_way

    mu = 0.3
    print(f"pilot {args.pilot_items} x {args.pilot_variants}; {args.reps} grids at each planned size; truth: the "
          f"population mean by quadrature")
    print(f"{'sd templates':>12} {'target':>6} {'k':>3} | {'planned items (pilot median)':>28} "
          f"{'items (true components)':>23} | {'mean width at the true-components plan':>38} {'coverage':>8}")
    for sd in (float(x) for x in args.sds.split(",")):
        rng = np.random.default_rng(int(100 * sd) + 7)
        s = np.sqrt(SD_ITEM ** 2 + sd ** 2 + SD_CELL ** 2)
        x, w = np.polynomial.hermite_e.hermegauss(80)
        truth = float((w * expit(mu + s * x)).sum() / w.sum())

        def grid(n: int, k: int, sd: float = sd, rng: np.random.Generator = rng) -> np.ndarray:
            logit = mu + rng.normal(0, SD_ITEM, (n, 1)) + rng.normal(0, sd, (1, k)) + rng.normal(0, SD_CELL, (n, k))
            return (rng.random((n, k)) < expit(logit)).astype(float)

        true_c = components(grid(4000, 400))
        for target in (float(x) for x in args.targets.split(",")):
            for k in (int(x) for x in args.ks.split(",")):
                fits = [components(grid(args.pilot_items, args.pilot_variants)) for _ in range(50)]
                pilots = [plan(c, target, [k])[0].items for c in fits]
                sure = [plan(with_upper_variance(c, 0.8), target, [k])[0].items for c in fits]
                (row,) = plan(true_c, target, [k])
                planned = [p for p in pilots if p is not None]
                pilot_text = (f"{int(np.median(planned))} ({len(pilots) - len(planned)}/50 out of reach)"
                              if planned else "out of reach")
                # a plan is enough when it asks at least the true plan's items, or says out of reach
                enough = [(p is None or (row.items is not None and p >= row.items)) for p in pilots]
                enough_sure = [(p is None or (row.items is not None and p >= row.items)) for p in sure]
                pilot_text += f"; enough {np.mean(enough):.2f}, at assurance 0.8 {np.mean(enough_sure):.2f}"
                if row.items is None:
                    print(f"{sd:>12.2f} {target:>6.3f} {k:>3} | {pilot_text:>28} {'out of reach':>23} |")
                    continue
                widths, cover = [], 0
                for _ in range(args.reps):
                    tw = two_way(grid(row.items, k))
                    assert tw.low is not None and tw.high is not None
                    widths.append(tw.high - tw.low)
                    cover += tw.low <= truth <= tw.high
                print(f"{sd:>12.2f} {target:>6.3f} {k:>3} | {pilot_text:>28} {row.items:>23} | "
                      f"{np.mean(widths):>38.4f} {cover / args.reps:>8.3f}", flush=True)


def real(args) -> None:
    """Two backends of one model (benchmarks/data) as two models on their shared questions."""
    from robusteval.pilot import read_pilot

    a = read_pilot(str(ROOT / "benchmarks/data/smollm2_mmlu_prompt.csv"))[0]
    b = read_pilot(str(ROOT / "benchmarks/data/smollm2_mmlu_prompt300_gpu.csv"))[0]
    shared = [i for i in a.items if i in set(b.items)]
    ra, rb = {x: n for n, x in enumerate(a.items)}, {x: n for n, x in enumerate(b.items)}
    cb = {x: n for n, x in enumerate(b.variants)}
    ya = a.cells[[ra[i] for i in shared]]
    yb = b.cells[[rb[i] for i in shared]][:, [cb[v] for v in a.variants]]
    keep = np.isfinite(ya).all(axis=1) & np.isfinite(yb).all(axis=1)
    scores = np.vstack([ya[keep].mean(axis=0), yb[keep].mean(axis=0)])
    full = pair_share(scores[0], scores[1], a.model, b.model)
    print(f"{a.model} vs {b.model} on {int(keep.sum())} shared questions x {scores.shape[1]} templates: accuracy "
          f"{scores[0].mean():.3f} vs {scores[1].mean():.3f}; {a.model} wins {full.wins:g}/{full.variants} "
          f"templates; Kendall's W {kendall_w(scores):.3f}")
    truth_top = None
    for k in (int(x) for x in args.ks.split(",")):
        rng = np.random.default_rng(k)
        hits = top_hits = 0
        est, truths = [], []
        for _ in range(args.reps):
            cols = rng.integers(0, scores.shape[1], k)
            asked = scores[:, cols]
            rs, top = measured(asked)
            hits += rs.pairs[0].low <= full.share <= rs.pairs[0].high
            truth_top = float(beaten(scores, top).mean())
            top_hits += covers(rs, truth_top)
            est.append(rs.top_change)
            truths.append(truth_top)
        print(f"k={k:>2}: share interval covers the 10-template share {full.share:.2f} in {hits / args.reps:.3f}; "
              f"P(top changes) LOO estimate {np.mean(est):.3f} vs truth {np.mean(truths):.3f} "
              f"(interval covers {top_hits / args.reps:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--new", type=int, default=2000, help="fresh templates per truth (default: 2000)")
    parser.add_argument("--ks", default="5,10,20")
    parser.add_argument("--gaps", default="0.1,0.3", help="ability gap between neighbouring models (logit)")
    parser.add_argument("--sds", default="0.1,0.3", help="sd of the template x model effect (logit); with "
                                                         "--plan, of the template effect")
    parser.add_argument("--models", default="2,4")
    parser.add_argument("--plan", action="store_true", help="check the planner instead")
    parser.add_argument("--targets", default="0.05,0.1")
    parser.add_argument("--pilot-items", type=int, default=100)
    parser.add_argument("--pilot-variants", type=int, default=10)
    parser.add_argument("--real", action="store_true", help="the real grids of benchmarks/data instead")
    args = parser.parse_args()
    if args.plan:
        plan_check(args)
    elif args.real:
        real(args)
    else:
        simulate_rankings(args)


if __name__ == "__main__":
    main()
