"""Rerunning a finished run, as a user would: the whole `robusteval run mcq ...` process, twice.

The first run fills a fresh store from the deterministic OpenAI-compatible stub (its own process,
fixed latency); the rerun is the same command. With ``--embedded`` the stub's answers are then
copied into the store under the embedded model's fingerprint and the rerun is the default command
(no ``--model``): the user's case, where start-up hashes the GGUF file and never loads the model.
Printed: requests the stub received during the rerun
(from its hits counter) and the rerun's own accounting (`new` in results.json) — both must be 0 —,
the rerun's wall time against the 2 s target for 1,000 cached samples, and the time split (start-up
and imports, suite, results, report) from one more rerun under cProfile.

    python benchmarks/rerun.py [--limit 100] [--families order,format] [--repeats 3] [--no-profile]

Nothing here passes or fails on time; it prints what it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from engine_throughput import stub  # the stub-in-its-own-process helper

TARGET_S = 2.0
# Where the rerun's time goes: (label, function as pstats names it: file suffix, function name).
SPLIT = (
    ("suite (store lookups, readers, metrics)", ("suites/mcq/__init__.py", "execute")),
    ("results.json + samples.jsonl", ("robusteval/results.py", "write_run")),
    ("suite files (tables, plots)", ("suites/base.py", "write_files")),
    ("report (HTML, Markdown, plots)", ("report/render.py", "write_report")),
    ("run_suite in all", ("robusteval/run.py", "run_suite")),
)


def hits(path: Path) -> int:
    time.sleep(1.2)  # the stub rewrites its hits file at most every second
    return json.loads(path.read_text())["total"]


def cli(args: argparse.Namespace, base_url: str | None, cache: Path, out: Path, run_id: str) -> list[str]:
    model = [] if base_url is None else ["--model", f"openai:stub?base_url={base_url}&max_concurrency=64"]
    return ["-m", "robusteval.cli", "run", "mcq", "--quiet", "--families", args.families, "--limit", str(args.limit),
            "--seed", "1", "--cache-dir", str(cache), "--out", str(out), "--run-id", run_id, *model]


def prefill_embedded(path: Path) -> int:
    """Copy every stored answer under the embedded model's fingerprint (keys recomputed), as if that
    model had given them; returns how many."""
    from robusteval.engine.store import Store, StoreRow, cache_key
    from robusteval.models.llamacpp import LlamaCppBackend, embedded_model_path
    from robusteval.types import Completion, GenParams, Message, Request

    backend = LlamaCppBackend(embedded_model_path())
    asyncio.run(backend.start())  # hashes the file; the model is loaded only on a cache miss
    store = Store(path)
    try:
        rows = []
        for raw, text, pt, ct, finish, latency in store._db.execute(
                "SELECT request, text, prompt_tokens, completion_tokens, finish_reason, latency_s FROM responses"):
            r = json.loads(raw)
            params = GenParams(**{**r["params"], "stop": tuple(r["params"]["stop"])})
            request = Request(tuple(Message(m["role"], m["content"]) for m in r["messages"]), params, r["sample"])
            rows.append(StoreRow(cache_key(backend.fingerprint, request), backend.fingerprint, request,
                                 Completion(text, pt, ct, finish), latency))
        store.put_many(rows)
    finally:
        store.close()
        asyncio.run(backend.close())
    return len(rows)


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one process; CPU time moves less on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"robusteval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def usage_of(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    (usage,) = [m["usage"] for m in results["models"].values()]
    return usage


def print_split(profile: Path, wall_s: float) -> None:
    stats = pstats.Stats(str(profile)).stats
    total = max(v[3] for v in stats.values())  # the outermost frame's cumulative time
    print(f"\ntime split of one rerun under cProfile ({total:.2f} s profiled of {wall_s:.2f} s wall; "
          "profiling slows Python code, so read the shares, not the seconds):")
    print(f"  {'interpreter start-up and imports before main()':44s}{wall_s - total:7.2f} s (unprofiled)")
    for label, (suffix, name) in SPLIT:
        cum = sum(v[3] for (file, _, func), v in stats.items() if file.endswith(suffix) and func == name)
        print(f"  {label:44s}{cum:7.2f} s  {cum / total:6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100, help="questions (x10 variants with order,format)")
    parser.add_argument("--families", default="order,format")
    parser.add_argument("--repeats", type=int, default=3, help="reruns timed (median printed)")
    parser.add_argument("--latency", type=float, default=0.01, help="stub latency for the first run, seconds")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile'd rerun")
    parser.add_argument("--embedded", action="store_true",
                        help="rerun against the embedded llama.cpp model, from a store pre-filled with the stub's "
                             "answers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, stub("--latency", str(args.latency)) as (url, hits_file, _):
        tmp = Path(tmp)
        cache, out = tmp / "cache", tmp / "runs"
        first_s, _ = timed(cli(args, url, cache, out, "first"))
        first = usage_of(out / "first")
        if args.embedded:
            prefilled = prefill_embedded(cache / "responses.sqlite")
            print(f"store pre-filled with {prefilled} answers for the embedded model")
        rerun_url = None if args.embedded else url
        before = hits(hits_file)
        timings = [timed(cli(args, rerun_url, cache, out, f"rerun{i}")) for i in range(args.repeats)]
        sent = hits(hits_file) - before
        reruns = [usage_of(out / f"rerun{i}") for i in range(args.repeats)]
        samples = sum(1 for _ in (out / "rerun0" / "samples.jsonl").open())
        print(f"first run: {samples} samples, {first['new']} requests sent, {first_s:.2f} s wall")
        print(f"rerun x{args.repeats}: requests received by the stub {sent}; "
              f"`new` in results.json {[u['new'] for u in reruns]}, cached {reruns[0]['cached']}")
        median = statistics.median(w for w, _ in timings)
        cpu = statistics.median(c for _, c in timings)
        print(f"rerun wall s: {', '.join(f'{w:.2f}' for w, _ in timings)}; median {median:.2f} s "
              f"= {median / TARGET_S:.2f} of the {TARGET_S:g} s target ({median / samples * 1000:.2f} ms per sample); "
              f"CPU (user+sys) median {cpu:.2f} s")
        if not args.no_profile:
            profile = tmp / "rerun.prof"
            wall, _ = timed(["-m", "cProfile", "-o", str(profile), *cli(args, rerun_url, cache, out, "profiled")])
            print_split(profile, wall)


if __name__ == "__main__":
    main()
