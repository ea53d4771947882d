"""The embedded default model gives byte-identical greedy replies whatever the order, the process
and the state of llama.cpp's caches: the same 16 mcq requests asked fresh, and in the reverse order
by a run killed with SIGKILL half-way and resumed against the same store.

Each run is its own process (``python THIS_FILE STORE REQUESTS ORDER``), through the engine and the
default ``llamacpp`` backend, exactly as ``robusteval run`` sends requests; only ``n_threads`` is
set, to 1, which keeps the test quick on a machine shared with other processes (llama.cpp's thread
count does not change its replies: docs/performance.md, "Determinism").

Sized to finish on a busy machine: 40 requests of 64 tokens (about 80 asked in all) ran past the
600 s timeout at load 12-17 on 2 cores, where one request took 5-9 s. Now 16 requests of 48
tokens (32 asked, plus what the kill loses), and every wait is a per-request budget times the
requests it covers (PER_REQUEST_S, 30 s: 3-6 times the slowest request seen under that load)."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

N = 16
MAX_TOKENS = 48  # long enough for SmolLM2 to begin reasoning before "The best answer is X", short enough for CI
PER_REQUEST_S = 30  # the budget of one request on a loaded machine (5-9 s measured at load 12-17)
SPEC = "llamacpp?n_threads=1"


def _requests_file(tmp_path: Path) -> Path:
    from robusteval.check_determinism import plan_requests
    from robusteval.configure import build_config

    config = build_config({}, {"suite": "mcq", "limit": 5, "families": ("order", "format"),
                               "max_tokens": MAX_TOKENS, "cache_dir": str(tmp_path / "plan")})
    requests = asyncio.run(plan_requests(config, "llamacpp"))[:N]
    assert len(requests) == N
    path = tmp_path / "requests.json"
    path.write_text(json.dumps([[[m.role, m.content] for m in r.messages] for r in requests]))
    return path


def _ask(store: Path, requests: Path, order: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, str(store), str(requests), order],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _replies(store: Path, requests: Path) -> list[str | None]:
    from robusteval.engine import Store, cache_key

    key = _fingerprint()
    db = Store(store)
    try:
        return [None if (hit := db.get(cache_key(key, r))) is None else hit.completion.text
                for r in _load(requests)]
    finally:
        db.close()


@functools.cache
def _fingerprint() -> str:
    """The default backend's fingerprint (hashes the weights once; loads no model)."""
    from robusteval.models import parse_model_spec
    from robusteval.models.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend.from_spec(parse_model_spec(SPEC))

    async def started() -> str:
        await backend.start()
        await backend.close()
        return backend.fingerprint

    return asyncio.run(started())


def _load(requests: Path):
    from robusteval.types import GenParams, Message, Request

    return [Request(tuple(Message(role, content) for role, content in r), GenParams(max_tokens=MAX_TOKENS))
            for r in json.loads(requests.read_text())]


def _finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=(N + 2) * PER_REQUEST_S)  # the model's load counts as two requests
    assert proc.returncode == 0, err[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(3 * (N + 2) * PER_REQUEST_S)  # three runs' budgets, whatever the default timeout
def test_same_replies_fresh_and_reordered_and_resumed_after_sigkill(tmp_path):
    """The second run asks in the reverse order and is killed half-way, then resumed: its first half
    was asked in another order than the fresh run's, its second half after a restart."""
    requests = _requests_file(tmp_path)
    fresh, other = tmp_path / "fresh.sqlite", tmp_path / "reordered-resumed.sqlite"

    _finish(_ask(fresh, requests, "forward"))
    killed = _ask(other, requests, "reverse")
    deadline = time.monotonic() + (N // 2 + 2) * PER_REQUEST_S
    while sum(r is not None for r in _replies(other, requests)) < N // 2:  # half answered and stored
        assert killed.poll() is None and time.monotonic() < deadline, killed.stderr.read()[-3000:]
        time.sleep(0.5)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    before = sum(r is not None for r in _replies(other, requests))
    assert N // 2 <= before < N  # killed mid-run
    _finish(_ask(other, requests, "reverse"))  # the resume asks only what the store lacks

    reference, replies = _replies(fresh, requests), _replies(other, requests)
    assert None not in reference and None not in replies
    differ = [i for i, (a, b) in enumerate(zip(reference, replies)) if a != b]
    assert differ == [], f"{len(differ)} of {N} replies differ, e.g. {reference[differ[0]]!r} vs {replies[differ[0]]!r}"


async def _main(store: str, requests: str, order: str) -> None:
    from robusteval.engine import Engine, Store, gather_all
    from robusteval.models import load_backend, parse_model_spec

    asked = _load(Path(requests))
    if order == "reverse":
        asked.reverse()
    db = Store(store)
    engine = Engine(db)
    try:
        await engine.add_model("llamacpp", load_backend(parse_model_spec(SPEC)))
        await gather_all(engine.chat("llamacpp", r.messages, r.params) for r in asked)
    finally:
        await engine.close()
        db.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(_main(*sys.argv[1:4]))
