"""A run killed with SIGKILL midway resumes without re-asking anything it had completed, and ends
with exactly the results of a run that was never interrupted."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

from robusteval.testing.openai_stub import request_hash

N_ITEMS = 30
TOTAL = N_ITEMS * 6  # format family: six label styles per question


def _cli(data, cache, out, run_id, base_url):
    return [sys.executable, "-m", "robusteval.cli", "run", "mcq", "--quiet", "--families", "format",
            "--data", str(data), "--limit", str(N_ITEMS), "--cache-dir", str(cache), "--out", str(out),
            "--run-id", run_id, "--model", f"openai:stub?base_url={base_url}&max_concurrency=4"]


def _stored(store) -> list[dict]:
    if not store.exists():
        return []
    con = sqlite3.connect(store, timeout=30)
    try:
        return [json.loads(r[0]) for r in con.execute("SELECT request FROM responses")]
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def _server_hash(request: dict) -> str:
    p = request["params"]
    return request_hash({"model": "stub", "messages": request["messages"], "temperature": p["temperature"],
                         "top_p": p["top_p"], "max_tokens": p["max_tokens"], "seed": p["seed"], "stop": None})


def _load(out, run_id):
    folder = out / run_id
    results = json.loads((folder / "results.json").read_text())
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    drop = ("key", "cached")  # the key includes the server URL, which differs between the two stubs
    return results, [{k: v for k, v in s.items() if k not in drop} for s in samples]


def test_sigkill_midway_then_resume(tmp_path, make_stub, make_dataset):
    data = make_dataset(tmp_path / "items.jsonl", N_ITEMS)
    hits = tmp_path / "hits.json"
    store = tmp_path / "cache" / "responses.sqlite"
    with make_stub("--latency", "0.05") as ref_url:
        reference = subprocess.run(_cli(data, tmp_path / "ref-cache", tmp_path / "runs", "ref", ref_url),
                                   capture_output=True, text=True, timeout=120)
        assert reference.returncode == 0, reference.stderr
    with make_stub("--latency", "0.05", hits_file=hits) as url:
        proc = subprocess.Popen(_cli(data, tmp_path / "cache", tmp_path / "runs", "killed", url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(_stored(store)) < TOTAL // 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        completed_before_kill = {_server_hash(r) for r in _stored(store)}
        assert TOTAL // 3 <= len(completed_before_kill) < TOTAL, "the kill must land midway"
        assert not (tmp_path / "runs" / "killed" / "results.json").exists()

        resumed = subprocess.run(_cli(data, tmp_path / "cache", tmp_path / "runs", "resumed", url),
                                 capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
    counts = json.loads(hits.read_text())["requests"]
    # Nothing completed before the kill was sent again; only requests in flight at the kill (at most
    # the concurrency of 4) may have reached the server twice.
    assert all(counts[h] == 1 for h in completed_before_kill)
    assert sum(1 for n in counts.values() if n > 1) <= 4
    assert len(counts) == TOTAL  # every request answered exactly once or (in flight) twice

    ref_results, ref_samples = _load(tmp_path / "runs", "ref")
    res_results, res_samples = _load(tmp_path / "runs", "resumed")
    assert res_samples == ref_samples
    assert res_results["metrics"]["openai:stub"] == ref_results["metrics"]["openai:stub"]
    usage = res_results["models"]["openai:stub"]["usage"]
    assert usage["cached"] >= len(completed_before_kill) and usage["failed"] == 0
