"""`robusteval run ... --estimate` against the real run it estimates: requests, tokens, time.

Steps, all in one fresh cache folder: (1) a warm-up run of ``--warmup`` questions (seed 1) gives the
store a history of this model; (2) ``--estimate`` for ``--questions`` other questions (seed 2)
under the same flags; (3) that real run; with ``--seeds 2,3,4`` steps 2-3 repeat for each seed, each
estimate resting on everything stored so far (as a user's store grows). Printed: estimate, actual
and relative error for requests to send, prompt tokens, completion tokens and time. The estimate's
history is this model's answers to *other* questions, as it would be for a user; a larger warm-up gives steadier
completion and time figures. Nothing here passes or fails.

    python benchmarks/estimate.py [--warmup 20] [--questions 20] [--seeds 2] [--families order]
        [--max-tokens 32] [--model SPEC] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.cli import build_parser, main as cli_main  # noqa: E402
from robusteval.cli.run import config_from_args  # noqa: E402
from robusteval.engine.loop import run  # noqa: E402
from robusteval.run import estimate_suite  # noqa: E402


def argv(args, work: Path, limit: int, seed: int, run_id: str) -> list[str]:
    out = ["run", "mcq", "--families", args.families, "--limit", str(limit), "--seed", str(seed),
           "--max-tokens", str(args.max_tokens), "--cache-dir", str(work / "cache"), "--out", str(work / "runs"),
           "--run-id", run_id, "--quiet"]
    return out + (["--model", args.model] if args.model else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=20, help="questions of the warm-up run (seed 1)")
    parser.add_argument("--questions", type=int, default=20, help="questions estimated, then run")
    parser.add_argument("--seeds", default="2",
                        help="comma-separated seeds of the estimated runs (not 1: the warm-up's)")
    parser.add_argument("--families", default="order")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--model", help="model spec (default: the embedded model)")
    parser.add_argument("--work", help="keep the cache and runs in this (new) folder, to study them afterwards")
    args = parser.parse_args()
    args.seeds = [int(x) for x in args.seeds.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        started = time.perf_counter()
        assert cli_main(argv(args, work, args.warmup, 1, "warmup")) == 0
        print(f"warm-up: {args.warmup} questions in {time.perf_counter() - started:.1f} s", flush=True)
        for seed in args.seeds:
            report(args, work, seed)


def report(args, work: Path, seed: int) -> None:
    """Estimate the run of ``--questions`` questions drawn with ``seed``, run it, print both."""
    real = argv(args, work, args.questions, seed, f"real{seed}")
    config = config_from_args(build_parser(real).parse_args(real))
    (e,) = run(estimate_suite(config))
    started = time.perf_counter()
    assert cli_main(real) == 0
    wall = time.perf_counter() - started
    usage = next(iter(json.loads((work / "runs" / f"real{seed}" / "results.json").read_text())["models"].values()))
    usage = usage["usage"]
    rows = (("requests to send", e.to_send, usage["new"]), ("prompt tokens", e.prompt_tokens, usage["prompt_tokens"]),
            ("completion tokens", e.completion_tokens, usage["completion_tokens"]),
            ("time s", e.seconds, wall))
    print(f"\nseed {seed}: estimate basis: {e.basis}")
    print(f"{'':<18} {'estimate':>10} {'actual':>10} {'error':>8}")
    for name, est, actual in rows:
        err = "n/a" if est is None or not actual else f"{(est - actual) / actual:+.1%}"
        print(f"{name:<18} {'n/a' if est is None else f'{est:.0f}':>10} {actual:>10.0f} {err:>8}", flush=True)


if __name__ == "__main__":
    main()
