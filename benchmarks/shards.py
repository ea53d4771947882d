"""4 shards as 4 processes, merged, against one process: wall time, and whether the merged results
equal the unsharded run's (they must: `robusteval merge` replays the shards' answers).

    .venv/bin/python benchmarks/shards.py [--items 2000] [--shards 4] [--latency 0.02]

The stub answers in its own process with ``--latency`` seconds per reply. Shards share one store
(SQLite in WAL mode takes writers from several processes). Prints figures; asserts nothing about time.
On a 2-core machine the processes compete for the cores the stub also needs: read the ratio with that.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from engine.conftest import stub_process, write_dataset  # noqa: E402

ROBUSTEVAL = [sys.executable, "-m", "robusteval.cli"]


def run(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([*ROBUSTEVAL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--latency", type=float, default=0.02)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, stub_process("--latency", str(a.latency)) as base_url:
        tmp_path = Path(tmp)
        data = write_dataset(tmp_path / "items.jsonl", a.items)
        common = ["run", "mcq", "--quiet", "--data", str(data), "--families", "order,format", "--all",
                  "--model", f"openai:stub?base_url={base_url}", "--out", str(tmp_path / "runs")]

        started = time.perf_counter()
        procs = [run([*common, "--cache-dir", str(tmp_path / "cache-shards"), "--run-id", f"s{i}",
                      "--shard", f"{i}/{a.shards}"]) for i in range(1, a.shards + 1)]
        codes = [p.wait() for p in procs]
        shards_s = time.perf_counter() - started
        assert codes == [0] * a.shards, [p.stderr.read()[-2000:] for p in procs if p.returncode]
        started = time.perf_counter()
        merge = run(["merge", *(str(tmp_path / "runs" / f"s{i}") for i in range(1, a.shards + 1)),
                     "--out", str(tmp_path / "runs"), "--run-id", "merged", "--quiet"])
        assert merge.wait() == 0, merge.stderr.read()[-2000:]
        merge_s = time.perf_counter() - started

        started = time.perf_counter()
        whole = run([*common, "--cache-dir", str(tmp_path / "cache-whole"), "--run-id", "whole"])
        assert whole.wait() == 0, whole.stderr.read()[-2000:]
        whole_s = time.perf_counter() - started

        def metrics(run_id: str) -> dict:
            return json.loads((tmp_path / "runs" / run_id / "results.json").read_text())["metrics"]

        requests = json.loads((tmp_path / "runs" / "whole" / "results.json").read_text())["models"]
        n = next(iter(requests.values()))["usage"]["requests"]
        print(f"{a.items} items x order,format = {n} requests, stub latency {a.latency}s")
        print(f"one process:           {whole_s:7.1f} s")
        print(f"{a.shards} shard processes:     {shards_s:7.1f} s   (+ merge {merge_s:.1f} s)")
        print(f"ratio one / (shards + merge): {whole_s / (shards_s + merge_s):.2f}")
        print(f"merged metrics equal the unsharded run's: {metrics('merged') == metrics('whole')}")


if __name__ == "__main__":
    main()
