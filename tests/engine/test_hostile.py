"""A hostile server: the real openai backend, engine and store against the stub's hostile mode, which
answers each request's first hit with a reply that is valid JSON (or a well-formed HTTP error) but
not a valid chat completion, or an error that echoes the Authorization header.

Asserted: no such reply is ever stored or served as an answer, the run retries them, a rerun serves
only valid answers, and the API key appears in no stored or written byte."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.engine.loop import run
from robusteval.engine.runner import gather_all
from robusteval.models import load_backend, parse_model_spec
from robusteval.testing.openai_stub import HOSTILE_SHAPES, TOLERATED_SHAPES, StubConfig, StubServer, expected_answer
from robusteval.types import GenParams, Message

KEY = "sk-hostile-test-0123456789abcdefXYZ"
PER_SHAPE = 2
N = PER_SHAPE * len(HOSTILE_SHAPES)
PARAMS = GenParams(max_tokens=16)
RATE_LIMITED = {s for s in HOSTILE_SHAPES if s.startswith("retry-after-")}  # 429s: retried on their own allowance
REFUSED = set(HOSTILE_SHAPES) - RATE_LIMITED - set(TOLERATED_SHAPES)
VALID = re.compile(r"Let me think\. The best answer is [ABCD]\.")


def _questions() -> list[tuple[Message, ...]]:
    return [(Message("user", f"Hostile question {i}: which option?"),) for i in range(N)]


def _ask_all(base_url: str, store_path: Path, retry: RetryPolicy) -> tuple[list, dict]:
    async def main():
        store = Store(store_path)
        engine = Engine(store, retry=retry)
        spec = parse_model_spec(f"openai:stub-model?base_url={base_url}&api_key_env=HOSTILE_KEY")
        await engine.add_model("m", load_backend(spec), rpm=1e6)  # a set pace: no rate learning from the 429s
        try:
            return await gather_all(engine.chat("m", q, PARAMS) for q in _questions()), engine.usage["m"]
        finally:
            await engine.close()
            store.close()

    return run(main())  # uvloop where installed: a NaN sleep crashed it


def _store_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.glob("responses.sqlite*"))


def _stored_texts(path: Path) -> list:
    con = sqlite3.connect(path)
    try:
        return [r[0] for r in con.execute("SELECT text FROM responses")]
    finally:
        con.close()


def test_hostile_replies_are_failed_attempts_never_answers_and_a_rerun_serves_only_valid_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTILE_KEY", KEY)
    store = tmp_path / "responses.sqlite"
    expected = [expected_answer("stub-model", q, PARAMS) for q in _questions()]
    no_retries = RetryPolicy(max_retries=0, backoff_base_s=0.001)

    with StubServer(StubConfig(hostile=HOSTILE_SHAPES, hostile_hits=1)) as stub:
        # 1. No retries: every refused shape is a failed request; nothing it said is stored.
        responses, usage = _ask_all(stub.base_url, store, no_retries)
        outcomes = stub.counters()["outcomes"]
        assert {s: outcomes.get(f"hostile:{s}") for s in HOSTILE_SHAPES} == dict.fromkeys(HOSTILE_SHAPES, PER_SHAPE)
        failed = [r for r in responses if not r.ok]
        assert len(failed) == usage.failed == PER_SHAPE * len(REFUSED)
        assert usage.rate_limited == PER_SHAPE * len(RATE_LIMITED)  # waited (backoff), then answered
        for r, want in zip(responses, expected):
            assert (r.text == want) if r.ok else (r.text is None and r.error)
        assert sorted(_stored_texts(store)) == sorted(r.text for r in responses if r.ok)
        assert all(isinstance(t, str) and VALID.fullmatch(t) for t in _stored_texts(store))
        echoed = [r.error for r in failed if "Authorization" in r.error]
        assert len(echoed) == PER_SHAPE and all("Bearer [redacted]" in e for e in echoed)
        assert all(KEY not in r.error for r in failed)
        assert KEY.encode() not in _store_bytes(tmp_path)  # failures table included

        # 2. The rerun asks only what failed, and gets the good answers (the stub's later hits).
        before = stub.counters()["total"]
        responses, usage = _ask_all(stub.base_url, store, no_retries)
        assert [r.text for r in responses] == expected
        assert usage.new == len(failed) and usage.cached == N - len(failed) and usage.failed == 0
        assert stub.counters()["total"] - before == len(failed)

        # 3. A third run asks nothing and serves exactly the valid answers.
        before = stub.counters()["total"]
        responses, usage = _ask_all(stub.base_url, store, no_retries)
        assert [r.text for r in responses] == expected and usage.cached == N
        assert stub.counters()["total"] == before
    assert KEY.encode() not in _store_bytes(tmp_path)


def test_with_retries_every_hostile_reply_is_retried_within_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTILE_KEY", KEY)
    store = tmp_path / "responses.sqlite"
    with StubServer(StubConfig(hostile=HOSTILE_SHAPES, hostile_hits=2)) as stub:
        responses, usage = _ask_all(stub.base_url, store, RetryPolicy(max_retries=3, backoff_base_s=0.001))
        hits = stub.counters()
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in _questions()]
    assert usage.failed == 0
    tolerated_first = sum(1 for r in responses if r.attempts == 1)
    assert tolerated_first == PER_SHAPE * len(TOLERATED_SHAPES)  # answered at the first hit, 0 tokens
    # every other request was answered on a later attempt, after the hostile ones were refused
    assert usage.retries == sum(r.attempts - 1 for r in responses) and usage.retries >= N - tolerated_first
    tolerated_served = sum(hits["outcomes"].get(f"hostile:{s}", 0) for s in TOLERATED_SHAPES)
    assert sum(hits["requests"].values()) + tolerated_served == N  # each request took exactly one answer
    assert all(VALID.fullmatch(t) for t in _stored_texts(store))


def _cli(data: Path, cache: Path, out: Path, run_id: str, base_url: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "robusteval.cli", "run", "mcq", "--quiet", "--families", "format",
           "--data", str(data), "--cache-dir", str(cache), "--out", str(out), "--run-id", run_id,
           "--rpm", "1000000", "--model", f"openai:stub?base_url={base_url}&api_key_env=HOSTILE_KEY", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**os.environ, "HOSTILE_KEY": KEY})


def test_a_cli_run_against_a_hostile_server_writes_no_bad_answer_and_no_key(tmp_path, make_stub, mcq_file):
    cache, out = tmp_path / "cache", tmp_path / "runs"
    hits_file = tmp_path / "hits.json"
    with make_stub("--hostile", "all", "--hits-interval", "0", hits_file=hits_file) as url:
        first = _cli(mcq_file, cache, out, "first", url, "--max-retries", "0")
        assert "Traceback" not in first.stderr and (out / "first" / "results.json").exists(), first.stderr
        second = _cli(mcq_file, cache, out, "second", url)
        assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
        hits = json.loads(hits_file.read_text())["total"]
        third = _cli(mcq_file, cache, out, "third", url)
        assert third.returncode == 0, third.stderr
        assert json.loads(hits_file.read_text())["total"] == hits  # the third run asked nothing

    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert KEY.encode() not in written and b"0123456789abcdefXYZ" not in written
    assert KEY not in first.stderr + first.stdout + second.stderr + second.stdout

    first_samples = [json.loads(x) for x in (out / "first" / "samples.jsonl").read_text().splitlines()]
    assert any(s["status"] == "failed" for s in first_samples)
    for run_id in ("first", "second", "third"):
        samples = [json.loads(x) for x in (out / run_id / "samples.jsonl").read_text().splitlines()]
        answered = [s for s in samples if s["status"] != "failed"]
        assert all(VALID.fullmatch(s["response"]) for s in answered), run_id
        if run_id != "first":
            assert len(answered) == len(samples) == 30
    second_usage = json.loads((out / "second" / "results.json").read_text())["models"]["openai:stub"]["usage"]
    third_usage = json.loads((out / "third" / "results.json").read_text())["models"]["openai:stub"]["usage"]
    assert second_usage["failed"] == 0 and third_usage["new"] == 0 and third_usage["cached"] == 30
