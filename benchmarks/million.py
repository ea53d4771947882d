"""A run of a million requests in one process: peak memory, wall time, requests/s, and its cached rerun.

    .venv/bin/python benchmarks/million.py [--items 100000] [--models 1] [--latency 0]

A synthetic set of ``--items`` arithmetic questions with four options, asked under ``order,format``
(10 variants a question: 4 orders and 6 label formats; ``gold@A`` is the ``A.`` format's request, so
9 distinct requests a question) by ``--models`` stub models (one stub process, each model its own
name, so its own cache keys): items x 10 x models samples. 100,000 items x 1 model is a million
samples (900,000 requests sent); 14,042 items x 7 models (MMLU's size) is 983,000.

`robusteval run mcq` runs as a child process against the stub in its own process; its peak resident
memory is the child's ``ru_maxrss`` (``os.wait4``). Then the same command again with a new run id:
every answer from the store. Prints figures; asserts nothing about time or memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from engine.conftest import stub_process, write_dataset  # noqa: E402


def run(args: list[str]) -> tuple[float, float, str]:
    """Run ``robusteval ARGS``; returns (wall seconds, peak RSS in MB, stderr's tail)."""
    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli", *args], stdout=subprocess.DEVNULL,
                                stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-2000:]
    if proc.returncode != 0:
        raise SystemExit(f"robusteval {' '.join(args[:2])} failed ({proc.returncode}): {tail}")
    return wall, usage.ru_maxrss / 1024, tail  # ru_maxrss is in KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--models", type=int, default=1)
    ap.add_argument("--latency", type=float, default=0.0, help="stub seconds per reply")
    ap.add_argument("--concurrency", type=int, default=64, help="max_concurrency of each model")
    ap.add_argument("--keep", help="keep the run folders and the store in this folder")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, stub_process("--latency", str(a.latency)) as base_url:
        work = Path(a.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        data = write_dataset(work / "items.jsonl", a.items)
        models = [arg for m in range(1, a.models + 1)
                  for arg in ("--model", f"openai:stub-{m}?base_url={base_url}&max_concurrency={a.concurrency}")]
        command = ["run", "mcq", "--quiet", "--data", str(data), "--families", "order,format", "--all", *models,
                   "--cache-dir", str(work / "cache"), "--out", str(work / "runs")]
        first_s, first_mb, _ = run([*command, "--run-id", "first"])
        rerun_s, rerun_mb, _ = run([*command, "--run-id", "rerun"])

        def results(run_id: str) -> dict:
            return json.loads((work / "runs" / run_id / "results.json").read_text())

        first, rerun = results("first"), results("rerun")
        usage = [m["usage"] for m in first["models"].values()]
        samples = sum(u["requests"] for u in usage)
        sent = sum(u["new"] for u in usage)
        print(f"{a.items:,} items x order,format x {a.models} model(s): {samples:,} samples, {sent:,} requests sent "
              f"(the rest asked once in the run), stub latency {a.latency} s")
        print(f"first run:  {first_s:8.1f} s wall, {samples / first_s:8.0f} samples/s, {sent / first_s:8.0f} "
              f"requests/s sent, peak RSS {first_mb:7.0f} MB")
        new_in_rerun = sum(m["usage"]["new"] for m in rerun["models"].values())
        print(f"cached rerun: {rerun_s:6.1f} s wall, {rerun_s / samples * 1000:.3f} s per 1,000 samples, "
              f"peak RSS {rerun_mb:7.0f} MB, {new_in_rerun} requests sent")
        print(f"rerun metrics equal the first run's: {first['metrics'] == rerun['metrics']}")


if __name__ == "__main__":
    main()
