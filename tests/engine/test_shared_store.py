"""Two runs in two OS processes write one SQLite store at the same time: both finish, the store holds
exactly the union of their answers, every row reads back as the stub's answer, and SQLite finds the
file intact."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time

from robusteval.engine import Store
from robusteval.testing.openai_stub import expected_answer
from robusteval.types import GenParams, Message

# One run: waits for the go-file (so both runs really write at the same time), asks questions
# [start, stop) at concurrency 8, prints its keys, usage and the time window it was writing in.
RUN = """
import asyncio, json, os, sys, time
from robusteval.engine import Engine, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message

url, store, start, stop, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

async def main():
    engine = Engine(Store(store))
    await engine.add_model("m", load_backend(parse_model_spec(f"openai:stub?base_url={url}&max_concurrency=8")))
    print("ready", flush=True)
    while not os.path.exists(go):
        await asyncio.sleep(0.005)
    began = time.time()
    rs = await asyncio.gather(*(engine.chat("m", (Message("user", f"q{i}"),), GenParams(max_tokens=8))
                                for i in range(start, stop)))
    ended = time.time()
    await engine.close()
    engine.store.close()
    u = engine.usage["m"]
    print(json.dumps({"ok": sum(r.ok for r in rs), "keys": [r.key for r in rs], "texts": [r.text for r in rs],
                      "new": u.new, "cached": u.cached, "failed": u.failed, "window": [began, ended]}))

asyncio.run(main())
"""

RANGES = ((0, 300), (150, 450))  # 150 questions in common, 150 of each run's own
PARAMS = GenParams(max_tokens=8)


def test_two_processes_share_one_store(tmp_path, make_stub):
    store = tmp_path / "shared.sqlite"
    go = tmp_path / "go"
    hits = tmp_path / "hits.json"
    with make_stub("--latency", "0.002", hits_file=hits) as url:
        procs = [subprocess.Popen([sys.executable, "-c", RUN, url, str(store), str(a), str(b), str(go)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for a, b in RANGES]
        try:
            for p in procs:
                assert p.stdout.readline().strip() == "ready", p.communicate(timeout=60)[1][-3000:]
            go.touch()
            outs = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    results = [json.loads(out) for out, _ in outs]
    counts = json.loads(hits.read_text())

    # both runs answered everything, each answer is the stub's
    for r, (a, b) in zip(results, RANGES):
        assert r["ok"] == b - a and r["failed"] == 0 and r["new"] + r["cached"] == b - a
        assert r["texts"] == [expected_answer("stub", (Message("user", f"q{i}"),), PARAMS) for i in range(a, b)]
    (a0, a1), (b0, b1) = results[0]["window"], results[1]["window"]
    assert a0 < b1 and b0 < a1, "the two runs did not write at the same time"

    # the store holds exactly the union, and each shared question was stored under one key
    union = set(results[0]["keys"]) | set(results[1]["keys"])
    assert len(union) == 450
    con = sqlite3.connect(store)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = con.execute("SELECT key, request, text FROM responses").fetchall()
        assert con.execute("SELECT COUNT(*) FROM failures").fetchone()[0] == 0
    finally:
        con.close()
    assert len(rows) == 450 and {k for k, _, _ in rows} == union

    # every row reads back, through the store's own reader, as the answer to the request it records
    reader = Store(store)
    try:
        for key, request, text in rows:
            req = json.loads(request)
            messages = tuple(Message(m["role"], m["content"]) for m in req["messages"])
            params = GenParams(**{**req["params"], "stop": tuple(req["params"]["stop"])})
            stored = reader.get(key)
            assert stored is not None and stored.completion.text == text
            assert text == expected_answer("stub", messages, params)
            assert stored.completion.prompt_tokens > 0 and stored.completion.finish_reason == "stop"
    finally:
        reader.close()

    # the server answered each question once or (shared, asked by both runs before either stored it)
    # twice, and never anything else
    assert len(counts["requests"]) == 450 and max(counts["requests"].values()) <= 2
    assert sum(counts["requests"].values()) == results[0]["new"] + results[1]["new"]
    assert counts["outcomes"] == {"ok": results[0]["new"] + results[1]["new"]}


def test_a_reader_process_sees_answers_while_a_writer_commits(tmp_path):
    """WAL: this process reads the store while another one is mid-run; no 'database is locked'."""
    store = tmp_path / "s.sqlite"
    writer_script = """
import sys, time
from robusteval.engine import Store
from robusteval.types import Completion, Message, Request
s = Store(sys.argv[1])
for i in range(300):
    s.put(f"k{i}", "fp", Request((Message("user", str(i)),)), Completion(text=f"t{i}"), 0.0)
    time.sleep(0.002)
s.close()
"""
    writer = subprocess.Popen([sys.executable, "-c", writer_script, str(store)], stderr=subprocess.PIPE, text=True)
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline:
        if store.exists():
            reader = Store(store)
            seen.append(reader.stats().responses)
            got = [reader.get(f"k{i}") for i in range(seen[-1])]
            reader.close()
            assert all(g is not None and g.completion.text == f"t{i}" for i, g in enumerate(got))
        time.sleep(0.01)
    assert writer.wait(60) == 0, writer.stderr.read()
    final = Store(store)
    assert final.stats().responses == 300
    final.close()
    assert seen == sorted(seen)  # committed rows never disappear
    assert any(0 < n < 300 for n in seen), seen  # it did read mid-run
