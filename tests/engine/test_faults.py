"""Fault injection over real HTTP: the stub answers 429 with Retry-After, 500, past the timeout and with
malformed JSON at random. The run completes, every request is accounted for as an answer or as a
reported failure, and every answer is the stub's deterministic one."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.testing.openai_stub import StubConfig, StubServer, expected_answer
from robusteval.types import GenParams, Message

N = 200
DUPLICATES = 20  # the first 20 questions asked a second time, concurrently
CONCURRENCY = 16
PARAMS = GenParams(max_tokens=16)
FAULT_KINDS = ("429", "500", "slow", "malformed")
FAULTS = StubConfig(p_429=0.1, p_500=0.1, p_slow=0.1, p_malformed=0.1, slow_s=2.5, retry_after_s=0.05, seed=3)
# The timeout is well below a slow reply (2.5 s) and well above a normal one (~1 ms), so only the
# injected slow replies time out, even on a busy machine.
RETRYING = RetryPolicy(max_retries=12, timeout_s=1.0, backoff_base_s=0.01, backoff_cap_s=0.1)
NO_RETRIES = RetryPolicy(max_retries=0, rate_limit_retries=0, timeout_s=1.0)


def _questions(n: int = N) -> list[tuple[Message, ...]]:
    return [(Message("user", f"Question {i}: which option is right?"),) for i in range(n)]


async def _ask_all(base_url: str, store_path, retry: RetryPolicy, questions):
    engine = Engine(Store(store_path), retry=retry)
    spec = parse_model_spec(f"openai:stub?base_url={base_url}&max_concurrency={CONCURRENCY}&timeout=30")
    await engine.add_model("stub", load_backend(spec))
    try:
        responses = await asyncio.gather(*(engine.chat("stub", m, PARAMS) for m in questions))
    finally:
        await engine.close()
        engine.store.close()
    return engine.usage["stub"], responses


def _accounted(usage, responses) -> None:
    assert usage.requests == len(responses)
    assert usage.new + usage.failed + usage.cached == usage.requests
    assert sum(r.ok and not r.cached for r in responses) == usage.new
    assert sum(not r.ok for r in responses) == usage.failed
    assert sum(r.ok and r.cached for r in responses) == usage.cached
    for r in responses:
        assert (r.text is not None and r.error is None) if r.ok else (r.text is None and r.error)


def test_every_request_completes_through_random_faults(tmp_path):
    questions = _questions()
    asked = questions + questions[:DUPLICATES]
    with StubServer(FAULTS) as stub:
        usage, responses = asyncio.run(_ask_all(stub.base_url, tmp_path / "s.sqlite", RETRYING, asked))
        first = stub.counters()
        # the same run again on the same store: everything from the cache, nothing reaches the server
        usage2, responses2 = asyncio.run(_ask_all(stub.base_url, tmp_path / "s.sqlite", RETRYING, asked))
        second = stub.counters()

    assert all(r.ok for r in responses), [r.error for r in responses if not r.ok][:3]
    assert [r.text for r in responses] == [expected_answer("stub", m, PARAMS) for m in asked]
    _accounted(usage, responses)
    assert (usage.new, usage.cached, usage.failed) == (N, DUPLICATES, 0)

    outcomes = first["outcomes"]
    assert all(outcomes.get(k, 0) > 0 for k in FAULT_KINDS), outcomes  # every fault kind really happened
    faults = sum(outcomes[k] for k in FAULT_KINDS)
    assert first["total"] == outcomes["ok"] + faults
    assert usage.retries == faults  # each fault cost exactly one retry, and nothing else did
    assert usage.rate_limited == outcomes["429"]
    # Each request was answered by the server exactly once: no completed request was sent twice,
    # the duplicates never reached it, and every retry was of a request that had not been answered.
    assert len(first["requests"]) == N and set(first["requests"].values()) == {1}
    assert outcomes["ok"] == N
    assert sum(first["hits"].values()) == first["total"]

    _accounted(usage2, responses2)
    assert (usage2.cached, usage2.new, usage2.failed) == (N + DUPLICATES, 0, 0)
    assert [r.text for r in responses2] == [r.text for r in responses]
    assert second["total"] == first["total"]


def test_without_retries_failures_are_reported_not_dropped_and_retried_by_a_rerun(tmp_path):
    questions = _questions()
    store_path = tmp_path / "s.sqlite"
    with StubServer(FAULTS) as stub:
        usage, responses = asyncio.run(_ask_all(stub.base_url, store_path, NO_RETRIES, questions))
        first = stub.counters()
        store = Store(store_path)
        stats = store.stats()
        store.close()
        usage2, responses2 = asyncio.run(_ask_all(stub.base_url, store_path, RETRYING, questions))
        second = stub.counters()

    failed = [r for r in responses if not r.ok]
    outcomes = first["outcomes"]
    assert len(responses) == N and first["total"] == N  # one attempt each
    _accounted(usage, responses)
    assert len(failed) == usage.failed == N - outcomes["ok"] > 0
    assert usage.new == outcomes["ok"] and usage.retries == 0
    assert all(r.attempts == 1 for r in responses)
    # each kind of fault surfaces as its own clear error
    errors = [r.error for r in failed]
    assert sum(e.startswith("429 rate limited") for e in errors) == outcomes["429"]
    assert sum(e.startswith("HTTP 500") for e in errors) == outcomes["500"]
    assert sum(e.startswith("timed out after 1 s") for e in errors) == outcomes["slow"]
    assert sum("bad response: invalid JSON" in e for e in errors) == outcomes["malformed"]
    for r, m in zip(responses, questions):
        if r.ok:
            assert r.text == expected_answer("stub", m, PARAMS)

    assert stats.responses == outcomes["ok"] and stats.failures == len(failed)  # failures never cached

    # a rerun (now with retries) asks only what failed, and then everything is answered
    assert all(r.ok for r in responses2)
    assert [r.text for r in responses2] == [expected_answer("stub", m, PARAMS) for m in questions]
    assert (usage2.cached, usage2.new, usage2.failed) == (N - len(failed), len(failed), 0)
    assert second["outcomes"]["ok"] - outcomes["ok"] == len(failed)
    assert len(second["requests"]) == N and set(second["requests"].values()) == {1}


def test_an_rpm_limit_the_engine_was_not_told_is_learned(tmp_path):
    """The server enforces 1,200/min; the engine has no --rpm. On the first 429s it paces itself at
    the rate that succeeded, so every request completes instead of burning its retries in bursts."""
    questions = [(Message("user", f"Question {i}: what is {i} + {i}?"),) for i in range(200)]
    default = RetryPolicy(timeout_s=5.0)  # the CLI's retry allowances
    with StubServer(StubConfig(latency_s=0.01, rpm=1200, retry_after_s=0.05, seed=1)) as stub:
        engine_usage, responses = asyncio.run(_ask_all(stub.base_url, tmp_path / "s.sqlite", default, questions))
        counters = stub.counters()
    assert all(r.ok for r in responses), [r.error for r in responses if not r.ok][:3]
    assert engine_usage.failed == 0 and engine_usage.new == 200
    assert counters["outcomes"]["429"] == engine_usage.rate_limited > 0  # it did hit the limit, and learned
    assert counters["outcomes"]["429"] < 200  # far fewer push-backs than requests


def test_adaptive_pacer_cuts_to_the_measured_rate_and_recovers():
    from robusteval.engine.limits import Pacer

    told = Pacer(rpm=600)
    told.on_rate_limited()
    assert told.rpm == 600  # a rate the user gave is never changed
    pacer = Pacer(rpm=None)
    assert pacer.rpm is None
    pacer.on_rate_limited()  # a 429 before any success: one per second to start
    assert pacer.rpm == 60
    pacer._last_cut -= 10
    pacer._started -= 10
    for _ in range(100):  # 100 successes in the last 10 s = 600/min measured
        pacer.on_success()
    pacer.on_rate_limited()
    # 0.8 x min(current pace, the same 60/min: it grows with the time since the last 429, and none
    # passed; the measured 600/min), with 80% of the measured rate as the goal it climbs back to
    assert pacer.rpm == pytest.approx(0.8 * 60, rel=1e-3)
    assert pacer._goal == pytest.approx(0.8 * 600)
    grown = Pacer(rpm=None)
    grown._started -= 10
    for _ in range(50):
        grown.on_success()  # 300/min measured while unpaced
    grown.on_rate_limited()
    assert grown.rpm == pytest.approx(0.8 * 300, rel=0.05)
    before = grown.interval
    grown.on_success()
    assert grown.interval == pytest.approx(before * 0.99)
