"""Two runs in two processes sharing one store at the same time: both finish, nothing lost or corrupt."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

SCRIPT = """
import asyncio, json, sys
from robusteval.engine import Engine, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message

async def main(url, store, start, stop):
    engine = Engine(Store(store))
    await engine.add_model("m", load_backend(parse_model_spec(f"openai:stub?base_url={url}&max_concurrency=8")))
    rs = await asyncio.gather(*(engine.chat("m", (Message("user", f"q{i}"),), GenParams(max_tokens=8))
                                for i in range(start, stop)))
    await engine.close()
    print(json.dumps({"ok": sum(r.ok for r in rs), "keys": [r.key for r in rs]}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


def test_two_processes_share_one_store(tmp_path, make_stub):
    store = tmp_path / "shared.sqlite"
    with make_stub("--latency", "0.002") as url:
        procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, url, str(store), str(a), str(b)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for a, b in ((0, 300), (150, 450))]
        outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    results = [json.loads(out) for out, _ in outs]
    assert [r["ok"] for r in results] == [300, 300]
    union = set(results[0]["keys"]) | set(results[1]["keys"])
    assert len(union) == 450
    con = sqlite3.connect(store)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = con.execute("SELECT key, text FROM responses").fetchall()
    con.close()
    assert {k for k, _ in rows} == union and all(t.startswith("Let me think.") for _, t in rows)
