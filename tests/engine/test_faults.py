"""Fault injection: 429 with Retry-After, 500, replies past the timeout and malformed JSON at random.
The run completes and every request is accounted for, as an answer or as a reported failure."""

from __future__ import annotations

import asyncio

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.testing.stub_server import StubConfig, StubServer, answer_for
from robusteval.types import GenParams, Message

N = 200
FAULTS = StubConfig(p_429=0.1, p_500=0.1, p_slow=0.1, p_malformed=0.1, slow_s=2.0, retry_after_s=0.05, seed=3)


async def _ask_all(base_url: str, store_path, retry: RetryPolicy):
    engine = Engine(Store(store_path), retry=retry)
    await engine.add_model("stub", load_backend(parse_model_spec(f"openai:stub?base_url={base_url}&max_concurrency=16")))
    params = GenParams(max_tokens=16)
    messages = [(Message("user", f"question {i}"),) for i in range(N)]
    try:
        responses = await asyncio.gather(*(engine.chat("stub", m, params) for m in messages))
    finally:
        await engine.close()
    return engine, messages, responses


def _expected(m) -> str:
    return answer_for({"model": "stub", "messages": [{"role": "user", "content": m[0].content}], "temperature": 0.0,
                       "top_p": 1.0, "max_tokens": 16, "seed": 0, "stop": None})


def test_every_request_completes_through_random_faults(tmp_path):
    retry = RetryPolicy(max_retries=12, timeout_s=0.5, backoff_base_s=0.01, backoff_cap_s=0.1)
    with StubServer(FAULTS) as stub:
        engine, messages, responses = asyncio.run(_ask_all(stub.base_url, tmp_path / "s.sqlite", retry))
        outcomes = dict(stub.state.outcomes)
    assert all(r.ok for r in responses), [r.error for r in responses if not r.ok][:3]
    assert [r.text for r in responses] == [_expected(m) for m in messages]
    usage = engine.usage["stub"]
    assert usage.new == N and usage.failed == 0 and usage.requests == N
    # every fault kind really happened, and each one cost a retry
    assert all(outcomes.get(k, 0) > 0 for k in ("429", "500", "slow", "malformed"))
    faults = sum(outcomes[k] for k in ("429", "500", "slow", "malformed"))
    assert usage.retries == faults
    assert usage.rate_limited == outcomes["429"]


def test_without_retries_failures_are_reported_not_dropped(tmp_path):
    retry = RetryPolicy(max_retries=0, timeout_s=0.5)
    with StubServer(FAULTS) as stub:
        engine, messages, responses = asyncio.run(_ask_all(stub.base_url, tmp_path / "s.sqlite", retry))
        outcomes = dict(stub.state.outcomes)
    failed = [r for r in responses if not r.ok]
    usage = engine.usage["stub"]
    assert len(responses) == N and usage.new + usage.failed == N
    assert len(failed) == usage.failed == N - outcomes["ok"] > 0
    assert all(r.text is None and r.error for r in failed)
    kinds = {r.error.split(":")[0].split(" ")[0] for r in failed}
    assert {"429", "HTTP", "timed", "bad"} <= kinds, kinds
    store = Store(tmp_path / "s.sqlite")
    stats = store.stats()
    store.close()
    assert stats.responses == outcomes["ok"] and stats.failures == len(failed)  # failures never cached
