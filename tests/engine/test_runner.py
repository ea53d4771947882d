"""The engine on a scripted backend: dedupe, cache keys, concurrency bound, retries, limits."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from robusteval.engine import Engine, RetryPolicy, Store, cache_key
from robusteval.engine.limits import AdaptiveLimit, Pacer, TokenBudget
from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message, Request

HI = (Message("user", "hi"),)


class Scripted:
    """A backend that answers from a script and records what it was asked."""

    def __init__(self, fingerprint="scripted:v1", delay=0.0, failures=None, max_concurrency=4):
        self.fingerprint = fingerprint
        self.max_concurrency = max_concurrency
        self.delay = delay
        self.failures = list(failures or [])  # exceptions to raise on the first calls, in order
        self.calls: list[tuple] = []
        self.in_flight = self.peak = 0

    async def start(self):
        pass

    async def close(self):
        pass

    async def chat(self, messages, params):
        self.calls.append((messages, params))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if self.failures:
                failure = self.failures.pop(0)
                if isinstance(failure, float):
                    await asyncio.sleep(failure)  # a slow reply
                else:
                    raise failure
            return Completion(text=f"echo {messages[-1].content} t={params.temperature}", prompt_tokens=3,
                              completion_tokens=2)
        finally:
            self.in_flight -= 1


async def _engine(tmp_path, backend, **kw):
    engine = Engine(Store(tmp_path / "store.sqlite"), retry=kw.pop("retry", RetryPolicy(backoff_base_s=0.001)),
                    use_cache=kw.pop("use_cache", True))
    await engine.add_model("m", backend, **kw)
    return engine


def test_identical_concurrent_requests_are_sent_once(tmp_path):
    async def go():
        backend = Scripted(delay=0.05)
        engine = await _engine(tmp_path, backend)
        a, b = await asyncio.gather(engine.chat("m", HI), engine.chat("m", HI))
        return backend, engine, a, b

    backend, engine, a, b = asyncio.run(go())
    assert len(backend.calls) == 1 and a.text == b.text
    assert (engine.usage["m"].new, engine.usage["m"].cached) == (1, 1)


def test_cache_key_covers_everything_that_changes_the_answer():
    base = Request(HI, GenParams())
    k = cache_key("fp", base)
    assert k == cache_key("fp", Request(HI, GenParams()))
    variants = [
        cache_key("fp2", base),
        cache_key("fp", Request((Message("user", "hi!"),), GenParams())),
        cache_key("fp", Request((Message("system", "hi"),), GenParams())),
        cache_key("fp", replace(base, sample=1)),
    ] + [cache_key("fp", Request(HI, replace(GenParams(), **{f: v}))) for f, v in (
        ("temperature", 0.7), ("top_p", 0.9), ("max_tokens", 12), ("seed", 1), ("stop", ("\n",)),
        ("logprobs", True), ("top_logprobs", 3))]
    assert len(set(variants) | {k}) == len(variants) + 1


def test_sampled_repeats_never_collapse_and_rerun_is_fully_cached(tmp_path):
    params = GenParams(temperature=0.8)

    async def go(backend):
        engine = await _engine(tmp_path, backend)
        rs = await asyncio.gather(*(engine.chat("m", HI, params, sample=k) for k in range(5)))
        engine.store.close()
        return engine, rs

    first = Scripted()
    engine, rs = asyncio.run(go(first))
    assert len(first.calls) == 5 and len({r.key for r in rs}) == 5
    again = Scripted()
    engine, rs2 = asyncio.run(go(again))
    assert again.calls == [] and engine.usage["m"].cached == 5 and all(r.cached for r in rs2)
    assert [r.text for r in rs2] == [r.text for r in rs]


def test_no_cache_asks_again(tmp_path):
    async def go(backend, use_cache):
        engine = await _engine(tmp_path, backend, use_cache=use_cache)
        await engine.chat("m", HI)
        engine.store.close()

    asyncio.run(go(Scripted(), True))
    backend = Scripted()
    asyncio.run(go(backend, False))
    assert len(backend.calls) == 1


@pytest.mark.parametrize("bound", [1, 3, 8])
def test_concurrency_bound(tmp_path, bound):
    async def go():
        backend = Scripted(delay=0.01, max_concurrency=bound)
        engine = await _engine(tmp_path, backend)
        await asyncio.gather(*(engine.chat("m", (Message("user", str(i)),)) for i in range(40)))
        return backend

    assert asyncio.run(go()).peak == bound


def test_non_retryable_failure_is_reported_and_retried_on_next_run(tmp_path):
    async def go(backend):
        engine = await _engine(tmp_path, backend)
        r = await engine.chat("m", HI)
        engine.store.close()
        return engine, r

    bad = Scripted(failures=[BackendError("HTTP 400: bad request", retryable=False)])
    engine, r = asyncio.run(go(bad))
    assert not r.ok and r.text is None and "400" in r.error and len(bad.calls) == 1
    assert engine.usage["m"].failed == 1 and engine.usage["m"].new == 0
    good = Scripted()
    engine, r = asyncio.run(go(good))
    assert r.ok and len(good.calls) == 1  # the failure was not cached


def test_retryable_errors_and_timeouts_are_retried(tmp_path):
    async def go():
        backend = Scripted(failures=[BackendError("HTTP 500"), 1.0, BackendError("bad response")])
        engine = await _engine(tmp_path, backend, retry=RetryPolicy(timeout_s=0.1, backoff_base_s=0.001))
        return backend, engine, await engine.chat("m", HI)

    backend, engine, r = asyncio.run(go())
    assert r.ok and r.attempts == 4 and len(backend.calls) == 4
    assert engine.usage["m"].retries == 3


def test_retry_after_is_honoured_and_capped(tmp_path):
    async def go(retry_after, cap):
        backend = Scripted(failures=[BackendError("429", rate_limited=True, retry_after=retry_after)])
        engine = await _engine(tmp_path / str(cap), backend,
                               retry=RetryPolicy(backoff_base_s=0.001, retry_after_cap_s=cap))
        t = time.monotonic()
        r = await engine.chat("m", HI)
        return r, time.monotonic() - t, engine

    r, elapsed, engine = asyncio.run(go(0.3, 5.0))
    assert r.ok and elapsed >= 0.3 and engine.usage["m"].rate_limited == 1
    r, elapsed, _ = asyncio.run(go(30.0, 0.2))
    assert r.ok and 0.2 <= elapsed < 5


def test_adaptive_limit_halves_on_429_and_recovers():
    async def go():
        limit = AdaptiveLimit(16, cooldown_s=0.0)
        limit.on_rate_limited()
        assert limit.limit == 8
        limit.on_rate_limited()
        assert limit.limit == 4
        for _ in range(200):
            limit.on_success()
        assert limit.limit == 16
        for _ in range(10):
            limit.on_rate_limited()
        assert limit.limit == 1

    asyncio.run(go())


def test_pacer_spaces_requests():
    async def go():
        pacer = Pacer(rpm=600)  # one per 0.1 s
        starts = []
        for _ in range(5):
            await pacer.wait()
            starts.append(time.monotonic())
        return starts

    starts = asyncio.run(go())
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(g >= 0.095 for g in gaps)


def test_token_budget_waits_when_spent():
    async def go():
        budget = TokenBudget(tpm=6000)  # 100 tokens/s, bucket of 1000
        t = time.monotonic()
        await budget.take(1000)
        await budget.take(200)
        return time.monotonic() - t

    assert asyncio.run(go()) >= 1.9


def test_two_store_handles_on_one_file(tmp_path):
    a, b = Store(tmp_path / "s.sqlite"), Store(tmp_path / "s.sqlite")
    a.put("k1", "fp", Request(HI), Completion(text="one"), 0.1)
    b.put("k2", "fp", Request(HI), Completion(text="two"), 0.1)
    assert a.get("k2").completion.text == "two" and b.get("k1").completion.text == "one"
    assert a.get("missing") is None
    a.close()
    b.close()


def test_params_dict_names_every_field():
    from dataclasses import fields

    # the cache key is built from as_dict: a new GenParams field must appear there too
    assert set(GenParams().as_dict()) == {f.name for f in fields(GenParams)}


def test_adaptive_limit_survives_cancelled_waiters():
    async def go():
        limit = AdaptiveLimit(2)
        await limit.acquire()
        await limit.acquire()
        waiters = [asyncio.create_task(limit.acquire()) for _ in range(6)]
        await asyncio.sleep(0)
        for t in waiters[:3]:
            t.cancel()
        await limit.release()  # each release wakes one live waiter, skipping cancelled ones
        await limit.release()
        await asyncio.sleep(0)
        first = [t.done() for t in waiters[3:]]
        await limit.release()
        await asyncio.gather(*waiters, return_exceptions=True)
        for _ in range(2):  # the two slots still held
            await limit.release()
        return first, limit.in_flight, len(limit._waiters)

    assert asyncio.run(go()) == ([True, True, False], 0, 0)
