"""`--estimate` at MMLU-Pro's full size: the 12,032-row test split x order,format, timed.

The full split is not in ../shared/realdata (a 400-row sample is), so the file is built by
resampling the sample: row i is sample row i mod 400, with its question id and text made distinct
(" (copy k)" appended to the question), so no two prompts coincide and nothing is deduplicated
away. Then ``robusteval run mcq --data FILE --all --families order,format --estimate`` runs in
this process on a fresh cache, with the embedded model (its tokenizer counts prompt tokens).
Printed: wall and CPU seconds, the estimate's figures and its basis.

``--compare-exact`` also estimates the 400-row sample twice, every prompt counted and a sample
extrapolated, and prints the difference in prompt tokens.

``--memory SRC[,SRC...]`` instead measures peak memory (the child's ``ru_maxrss``): ``robusteval run
mcq ... --estimate`` as a child process with each SRC first on the path (this checkout's ``src``,
another version's), against the deterministic stub's ``openai`` spec (no tokenizer: the figure is
the plan's, not a model's); ``--with-run`` also runs the real run against the stub, the peak the
estimate should stay under. Nothing here passes or fails.

    python benchmarks/estimate_scale.py [--rows 12032] [--families order,format] [--compare-exact]
    python benchmarks/estimate_scale.py --rows 12032 --memory src,../main/src [--with-run]
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
SAMPLE = ROOT.parent / "shared" / "realdata" / "mmlu-pro" / "test-sample-400.jsonl"

from robusteval.cli import build_parser  # noqa: E402
from robusteval.cli.run import config_from_args  # noqa: E402
from robusteval.engine import estimate as estimate_module  # noqa: E402
from robusteval.engine.loop import run  # noqa: E402
from robusteval.run import estimate_suite  # noqa: E402


def build_file(sample: Path, rows: int, out: Path) -> Path:
    """``rows`` rows cycling through the sample, each with a distinct id and question text."""
    source = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    with open(out, "w", encoding="utf-8") as f:
        for i in range(rows):
            row, copy = dict(source[i % len(source)]), i // len(source)
            row["question_id"] = 1_000_000 * copy + int(row["question_id"])
            if copy:
                row["question"] = f"{row['question']} (copy {copy})"
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


def timed_estimate(data: Path, families: str, cache: Path) -> tuple[float, float, list]:
    args = build_parser(["run", "mcq"]).parse_args(
        ["run", "mcq", "--data", str(data), "--all", "--families", families, "--cache-dir", str(cache), "--quiet"])
    config = config_from_args(args)
    wall, cpu = time.perf_counter(), time.process_time()
    estimates = run(estimate_suite(config))
    return time.perf_counter() - wall, time.process_time() - cpu, estimates


def peak_memory(data: Path, families: str, sources: list[Path], with_run: bool, work: Path) -> None:
    """Peak RSS of the estimate under each source tree, and of the run it estimates."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "tests"))
    from engine.conftest import stub_process
    from memory import run as child

    with stub_process("--latency", "0.001") as url:
        model = f"openai:bench?base_url={url}&max_concurrency=32"
        common = ["run", "mcq", "--data", str(data), "--all", "--families", families, "--model", model,
                  "--out", str(work / "runs"), "--quiet"]
        for i, src in enumerate(sources):
            wall, mb = child([*common, "--cache-dir", str(work / f"estimate-{i}"), "--estimate"], src.resolve())
            print(f"--estimate with {src}: peak {mb:.0f} MB, {wall:.1f} s wall", flush=True)
        if with_run:
            wall, mb = child([*common, "--cache-dir", str(work / "run")], sources[0].resolve())
            print(f"the run itself with {sources[0]}: peak {mb:.0f} MB, {wall:.1f} s wall", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12032,
                        help="rows of the built file (default: the test split's 12,032)")
    parser.add_argument("--families", default="order,format")
    parser.add_argument("--sample", default=str(SAMPLE), help="the 400-row MMLU-Pro sample to resample")
    parser.add_argument("--compare-exact", action="store_true", help="also: the 400-row sample, exact vs extrapolated")
    parser.add_argument("--memory", help="comma-separated src folders: peak memory of the estimate under each")
    parser.add_argument("--with-run", action="store_true", help="with --memory: also the run's peak")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = build_file(Path(args.sample), args.rows, Path(tmp) / "mmlu-pro-test-resampled.jsonl")
        if args.memory:
            sources = [Path(s) for s in args.memory.split(",")]
            return peak_memory(data, args.families, sources, args.with_run, Path(tmp))
        wall, cpu, estimates = timed_estimate(data, args.families, Path(tmp) / "cache")
        for e in estimates:
            print(f"{args.rows} rows x {args.families}: {e.requests} requests, {e.to_send} to send, "
                  f"{e.prompt_tokens} prompt tokens, {e.completion_tokens} completion tokens")
            print(f"  basis: {e.basis}")
        print(f"--estimate took {wall:.1f} s wall, {cpu:.1f} s CPU (this process, all threads)", flush=True)
        if args.compare_exact:
            sample = Path(args.sample)
            limit = estimate_module.EXACT_PROMPTS
            estimate_module.EXACT_PROMPTS = 10**9  # every prompt counted
            try:
                wall_x, _, exact = timed_estimate(sample, args.families, Path(tmp) / "cache-exact")
            finally:
                estimate_module.EXACT_PROMPTS = limit
            wall_s, _, sampled = timed_estimate(sample, args.families, Path(tmp) / "cache-sampled")
            x, s = exact[0].prompt_tokens, sampled[0].prompt_tokens
            print(f"400-row sample x {args.families}: every prompt counted {x} tokens ({wall_x:.1f} s); "
                  f"a sample of {limit} extrapolated {s} ({wall_s:.1f} s), {100 * (s - x) / x:+.2f}%")


if __name__ == "__main__":
    main()
