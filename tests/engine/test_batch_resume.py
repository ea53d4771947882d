"""`robusteval run` through the Batch API, SIGKILLed while its batch is pending, or after its answers
were downloaded and before they were committed: the rerun picks the same batch up (nothing is
submitted twice), ends with every answer, and charges half the price."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

from robusteval.testing.openai_stub import StubConfig, StubServer

N_ITEMS = 6
TOTAL = N_ITEMS * 6  # format family: six label styles per question


def _cli(data, cache, out, run_id, base_url):
    return [sys.executable, "-m", "robusteval.cli", "run", "mcq", "--quiet", "--families", "format",
            "--data", str(data), "--limit", str(N_ITEMS), "--cache-dir", str(cache), "--out", str(out),
            "--run-id", run_id, "--price-in", "1", "--price-out", "4",
            "--model", f"openai:stub?base_url={base_url}&batch=1&batch_window=0.2&batch_poll=0.1"]


def _hits(path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _pending(ledger) -> int:
    if not ledger.exists():
        return 0
    con = sqlite3.connect(ledger, timeout=30)
    try:
        # requests in a created batch (not those only marked before its creation)
        return con.execute("SELECT COUNT(*) FROM batch_requests WHERE batch_id NOT LIKE 'mark:%'").fetchone()[0]
    except sqlite3.OperationalError:  # the tables are being created
        return 0
    finally:
        con.close()


def test_sigkill_while_a_batch_is_pending_then_resume(tmp_path, make_stub, make_dataset):
    data = make_dataset(tmp_path / "items.jsonl", N_ITEMS)
    hits = tmp_path / "hits.json"
    with make_stub("--batch-delay", "4", "--hits-interval", "0", hits_file=hits) as url:
        proc = subprocess.Popen(_cli(data, tmp_path / "cache", tmp_path / "runs", "killed", url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        # killed once the batch is created and its id recorded beside the store
        while _pending(tmp_path / "cache" / "responses.batches.sqlite") == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        before = _hits(hits)
        assert (before["batches"], before["total"]) == (1, 0), "killed while its batch was pending"

        resumed = subprocess.run(_cli(data, tmp_path / "cache", tmp_path / "runs", "resumed", url),
                                 capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
    after = _hits(hits)
    assert (after["batches"], after["uploads"]) == (1, 1)  # picked up, not submitted again
    assert len(after["requests"]) == TOTAL and set(after["requests"].values()) == {1}
    results = json.loads((tmp_path / "runs" / "resumed" / "results.json").read_text())
    (model,) = results["models"].values()
    usage = model["usage"]
    assert (usage["new"], usage["failed"], usage["price_factor"]) == (TOTAL, 0, 0.5)
    listed = (usage["prompt_tokens"] * 1 + usage["completion_tokens"] * 4) / 1e6
    assert abs(usage["cost"] - round(listed / 2, 6)) < 1e-9


def test_sigkill_after_the_download_before_the_commit_pays_nothing_twice(tmp_path, make_dataset):
    data = make_dataset(tmp_path / "items.jsonl", N_ITEMS)
    ledger, store = tmp_path / "cache" / "responses.batches.sqlite", tmp_path / "cache" / "responses.sqlite"
    with StubServer(StubConfig(batch_delay_s=3600)) as stub:
        proc = subprocess.Popen(_cli(data, tmp_path / "cache", tmp_path / "runs", "killed", stub.base_url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while _pending(ledger) < TOTAL and time.monotonic() < deadline:  # the batch is created
                time.sleep(0.02)
            lock = sqlite3.connect(store, timeout=30, isolation_level=None)
            lock.execute("BEGIN IMMEDIATE")  # the run cannot commit an answer until it is killed
            stub.config.batch_delay_s = 0  # the batch completes at the next poll
            while stub.counters()["downloads"] == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            # give the download time to be read (and, before the fix, forgotten from the ledger)
            settled = time.monotonic() + 1.0
            while _pending(ledger) and time.monotonic() < settled:
                time.sleep(0.02)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        lock.rollback()
        lock.close()
        assert stub.counters()["downloads"] == 1 and _pending(ledger) == TOTAL  # nothing committed, all kept

        resumed = subprocess.run(_cli(data, tmp_path / "cache", tmp_path / "runs", "resumed", stub.base_url),
                                 capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        after = stub.counters()
    assert (after["batches"], after["uploads"]) == (1, 1)  # the paid batch's answers were used
    assert len(after["requests"]) == TOTAL and set(after["requests"].values()) == {1}
    (model,) = json.loads((tmp_path / "runs" / "resumed" / "results.json").read_text())["models"].values()
    assert (model["usage"]["new"], model["usage"]["failed"]) == (TOTAL, 0)
    assert _pending(ledger) == 0  # committed, then forgotten
