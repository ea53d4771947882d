"""The engine on a scripted backend: dedupe, cache keys, resume, concurrency bound, failures, retries,
timeouts, Retry-After, AIMD, RPM and TPM limits, and one store file shared by two handles."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import fields, replace
from itertools import pairwise

import pytest

from robusteval.engine import Engine, RetryPolicy, Store, cache_key
from robusteval.engine.limits import AdaptiveLimit, Pacer, TokenBudget
from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message, Request

HI = (Message("user", "hi"),)
FAST = RetryPolicy(backoff_base_s=0.001, backoff_cap_s=0.01)


def q(i) -> tuple[Message, ...]:
    return (Message("user", f"question {i}"),)


class Scripted:
    """A backend that answers from a script and records what it was asked, when, and how many at once.

    ``failures`` are consumed one per call, in order: an exception is raised, a float is a reply that
    takes that many seconds (to go past the engine's timeout).
    """

    def __init__(self, fingerprint="scripted:v1", delay=0.0, failures=(), max_concurrency=4, tag="echo"):
        self.fingerprint = fingerprint
        self.max_concurrency = max_concurrency
        self.delay = delay
        self.failures = list(failures)
        self.tag = tag
        self.calls: list[tuple[tuple[Message, ...], GenParams]] = []
        self.started_at: list[float] = []
        self.in_flight = self.peak = self.completed = 0
        self.started = self.closed = False

    async def start(self):
        self.started = True

    async def close(self):
        self.closed = True

    async def chat(self, messages, params):
        self.calls.append((messages, params))
        self.started_at.append(time.monotonic())
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.failures:
                failure = self.failures.pop(0)
                if isinstance(failure, float):
                    await asyncio.sleep(failure)
                else:
                    await asyncio.sleep(self.delay)  # a real backend fails after a round trip, not at once
                    raise failure
            await asyncio.sleep(self.delay)
            self.completed += 1
            return Completion(text=f"{self.tag} {messages[-1].content} t={params.temperature}", prompt_tokens=3,
                              completion_tokens=2, finish_reason="stop")
        finally:
            self.in_flight -= 1


async def _engine(path, backend, *, retry=FAST, use_cache=True, **limits) -> Engine:
    engine = Engine(Store(path), retry=retry, use_cache=use_cache)
    await engine.add_model("m", backend, **limits)
    return engine


async def _finish(engine: Engine) -> None:
    await engine.close()
    engine.store.close()


def _rows(path, table="responses") -> int:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


# --- dedupe and cache keys ---------------------------------------------------------------------------

def test_identical_concurrent_requests_are_sent_once(tmp_path):
    async def go():
        backend = Scripted(delay=0.05)
        engine = await _engine(tmp_path / "s.sqlite", backend)
        a, b = await asyncio.gather(engine.chat("m", HI), engine.chat("m", list(HI)))
        await _finish(engine)
        return backend, engine, a, b

    backend, engine, a, b = asyncio.run(go())
    assert backend.started and backend.closed
    assert len(backend.calls) == 1
    assert a.ok and b.ok and a.text == b.text == "echo hi t=0.0" and a.key == b.key
    assert sorted([a.cached, b.cached]) == [False, True]  # the one that waited is marked as shared
    u = engine.usage["m"]
    assert (u.requests, u.new, u.cached, u.failed) == (2, 1, 1, 0)
    assert (u.prompt_tokens, u.completion_tokens) == (3, 2)  # tokens counted once
    assert _rows(tmp_path / "s.sqlite") == 1


def test_a_request_repeated_later_in_the_run_is_not_sent_again(tmp_path):
    async def go():
        backend = Scripted()
        engine = await _engine(tmp_path / "s.sqlite", backend, use_cache=False)  # in-run dedupe even so
        first = await engine.chat("m", HI)
        again = await engine.chat("m", HI)
        await _finish(engine)
        return backend, engine, first, again

    backend, engine, first, again = asyncio.run(go())
    assert len(backend.calls) == 1 and again.text == first.text and again.cached and not first.cached
    assert (engine.usage["m"].new, engine.usage["m"].cached) == (1, 1)


def test_cache_key_covers_everything_that_changes_the_answer():
    base = Request(HI, GenParams())
    k = cache_key("fp", base)
    # equal inputs built separately give the same key
    assert k == cache_key("fp", Request((Message("user", "hi"),), GenParams(), 0))
    stop = GenParams(stop=("a", "b"))
    assert cache_key("fp", Request(HI, stop)) == cache_key("fp", Request(HI, GenParams(stop=("a", "b"))))
    variants = {
        "fingerprint": cache_key("fp2", base),
        "message text": cache_key("fp", Request((Message("user", "hi!"),), GenParams())),
        "message role": cache_key("fp", Request((Message("system", "hi"),), GenParams())),
        "extra turn": cache_key("fp", Request((*HI, Message("assistant", "")), GenParams())),
        "sample": cache_key("fp", replace(base, sample=1)),
        "continuation": cache_key("fp", replace(base, continuation=" A")),
    } | {f: cache_key("fp", Request(HI, replace(GenParams(), **{f: v}))) for f, v in (
        ("temperature", 0.7), ("top_p", 0.9), ("max_tokens", 12), ("seed", 1), ("stop", ("\n",)),
        ("logprobs", True), ("top_logprobs", 3))}
    assert k not in variants.values()
    assert len(set(variants.values())) == len(variants), "two different requests share a key"
    assert cache_key("fp", Request(HI, GenParams(seed=None))) != k
    # the key is built from as_dict: a new GenParams field must appear there too
    assert set(GenParams().as_dict()) == {f.name for f in fields(GenParams)}


def test_sampled_repeats_are_separate_calls_and_a_rerun_is_fully_cached(tmp_path):
    params = GenParams(temperature=0.8)
    store = tmp_path / "s.sqlite"

    async def go(backend):
        engine = await _engine(store, backend)
        rs = await asyncio.gather(*(engine.chat("m", HI, params, sample=k) for k in range(5)),
                                  *(engine.chat("m", q(i)) for i in range(3)))
        await _finish(engine)
        return engine, rs

    first = Scripted()
    engine, rs = asyncio.run(go(first))
    assert len(first.calls) == 8 and len({r.key for r in rs}) == 8 and not any(r.cached for r in rs)
    assert engine.usage["m"].new == 8 and _rows(store) == 8

    again = Scripted(tag="different")  # a different answer would show if anything were asked again
    engine, rs2 = asyncio.run(go(again))
    assert again.calls == []
    assert all(r.cached and r.attempts == 0 for r in rs2)
    assert [r.text for r in rs2] == [r.text for r in rs] and [r.key for r in rs2] == [r.key for r in rs]
    u = engine.usage["m"]
    assert (u.requests, u.cached, u.new, u.prompt_tokens) == (8, 8, 0, 0)


def test_each_sample_is_sent_with_its_own_seed_and_keyed_by_its_index(tmp_path):
    """--samples K must be K draws: a backend that honours the seed (llama.cpp, vLLM) answers one seed
    with one reply, so sample k goes out with seed + k, as the seeds family's draws always did."""
    params = GenParams(temperature=0.8, seed=5)

    async def go(backend, p):
        engine = await _engine(tmp_path / "s.sqlite", backend)
        rs = await asyncio.gather(*(engine.chat("m", HI, p, sample=k) for k in range(4)))
        await _finish(engine)
        return rs

    backend = Scripted()
    rs = asyncio.run(go(backend, params))
    assert sorted(p.seed for _, p in backend.calls) == [5, 6, 7, 8]
    assert [r.key for r in rs] == [cache_key("scripted:v1", Request(HI, replace(params, seed=5 + k), k))
                                   for k in range(4)]
    unseeded = Scripted()  # no seed is seed 0 for the draws after the first (as the seeds family counts)
    asyncio.run(go(unseeded, GenParams(temperature=0.8, seed=None)))
    assert sorted((p.seed for _, p in unseeded.calls), key=lambda seed: -1 if seed is None else seed) == [None, 1, 2, 3]


def test_a_draws_seed_wraps_within_32_bits():
    last = GenParams(seed=2**32 - 1)
    assert last.for_sample(0) is last and last.for_sample(1).seed == 0 and last.for_sample(3).seed == 2


@pytest.mark.slow
def test_samples_of_the_embedded_model_at_temperature_are_real_draws(tmp_path):
    """The real llama.cpp model at temperature 1.2: three samples of one request are not one reply
    three times (seeds 1, 2, 3, which tests/models/test_llamacpp.py shows differ)."""
    from robusteval.models import load_backend, parse_model_spec

    async def go():
        engine = await _engine(tmp_path / "s.sqlite", load_backend(parse_model_spec("llamacpp")))
        params = GenParams(temperature=1.2, max_tokens=12, seed=1)
        rs = await asyncio.gather(*(engine.chat("m", (Message("user", "Name three colours."),), params, sample=k)
                                    for k in range(3)))
        await _finish(engine)
        return rs

    rs = asyncio.run(go())
    assert all(r.ok for r in rs) and len({r.text for r in rs}) >= 2


def test_a_new_fingerprint_is_not_served_from_the_old_models_cache(tmp_path):
    async def go(backend):
        engine = await _engine(tmp_path / "s.sqlite", backend)
        r = await engine.chat("m", HI)
        await _finish(engine)
        return r

    asyncio.run(go(Scripted(fingerprint="model-a")))
    other = Scripted(fingerprint="model-b", tag="b")
    assert asyncio.run(go(other)).text == "b hi t=0.0" and len(other.calls) == 1


def test_no_cache_asks_again_and_overwrites(tmp_path):
    store = tmp_path / "s.sqlite"

    async def go(backend, use_cache):
        engine = await _engine(store, backend, use_cache=use_cache)
        r = await engine.chat("m", HI)
        await _finish(engine)
        return r

    assert asyncio.run(go(Scripted(tag="old"), True)).text == "old hi t=0.0"
    backend = Scripted(tag="new")
    r = asyncio.run(go(backend, False))
    assert len(backend.calls) == 1 and r.text == "new hi t=0.0" and not r.cached
    cached = Scripted(tag="never")
    assert asyncio.run(go(cached, True)).text == "new hi t=0.0" and cached.calls == []
    assert _rows(store) == 1


# --- concurrency ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bound", [1, 3, 8])
def test_concurrency_is_bounded_by_the_backend(tmp_path, bound):
    async def go():
        backend = Scripted(delay=0.01, max_concurrency=bound)
        engine = await _engine(tmp_path / "s.sqlite", backend)
        rs = await asyncio.gather(*(engine.chat("m", q(i)) for i in range(40)))
        await _finish(engine)
        return backend, rs

    backend, rs = asyncio.run(go())
    assert all(r.ok for r in rs) and len(backend.calls) == 40
    assert backend.peak == bound  # reached, never exceeded


def test_concurrency_argument_overrides_the_backend(tmp_path):
    async def go():
        backend = Scripted(delay=0.01, max_concurrency=16)
        engine = await _engine(tmp_path / "s.sqlite", backend, concurrency=5)
        await asyncio.gather(*(engine.chat("m", q(i)) for i in range(40)))
        await _finish(engine)
        return backend

    assert asyncio.run(go()).peak == 5


# --- failures, retries, timeouts ---------------------------------------------------------------------

def test_non_retryable_failure_is_reported_not_cached_and_retried_on_the_next_run(tmp_path):
    store = tmp_path / "s.sqlite"

    async def go(backend, n_callers=1):
        engine = await _engine(store, backend)
        rs = await asyncio.gather(*(engine.chat("m", HI) for _ in range(n_callers)))
        await _finish(engine)
        return engine, rs

    bad = Scripted(delay=0.02, failures=[BackendError("HTTP 400: bad request", retryable=False)])
    engine, rs = asyncio.run(go(bad, n_callers=2))
    assert len(bad.calls) == 1  # not retried, and the duplicate caller shared the outcome
    for r in rs:
        assert not r.ok and r.text is None and "400" in r.error and r.attempts == 1 and not r.cached
    u = engine.usage["m"]
    assert (u.requests, u.failed, u.new, u.cached, u.retries) == (2, 2, 0, 0, 0)
    assert _rows(store) == 0 and _rows(store, "failures") == 1
    check = Store(store)
    assert check.get(rs[0].key) is None
    check.close()

    good = Scripted()
    engine, rs = asyncio.run(go(good))
    assert rs[0].ok and len(good.calls) == 1 and engine.usage["m"].new == 1  # the failure was not cached


def test_retryable_errors_are_retried_until_success(tmp_path):
    async def go():
        backend = Scripted(failures=[BackendError("HTTP 500"), RuntimeError("backend bug"),
                                     BackendError("bad response: invalid JSON")])
        engine = await _engine(tmp_path / "s.sqlite", backend)
        r = await engine.chat("m", HI)
        await _finish(engine)
        return backend, engine, r

    backend, engine, r = asyncio.run(go())
    assert r.ok and r.text == "echo hi t=0.0" and r.attempts == 4 and len(backend.calls) == 4
    u = engine.usage["m"]
    assert (u.retries, u.new, u.failed, u.rate_limited) == (3, 1, 0, 0)


def test_retries_run_out_into_a_reported_failure(tmp_path):
    async def go():
        backend = Scripted(failures=[BackendError(f"HTTP 503 #{i}") for i in range(10)])
        engine = await _engine(tmp_path / "s.sqlite", backend,
                               retry=RetryPolicy(max_retries=2, backoff_base_s=0.001))
        r = await engine.chat("m", HI)
        await _finish(engine)
        return backend, engine, r

    backend, engine, r = asyncio.run(go())
    assert not r.ok and r.attempts == 3 and len(backend.calls) == 3 and r.error == "HTTP 503 #2"
    assert (engine.usage["m"].retries, engine.usage["m"].failed) == (2, 1)


def test_a_reply_past_the_timeout_is_abandoned_and_retried(tmp_path):
    async def go():
        backend = Scripted(failures=[5.0, 5.0])  # two replies that would take 5 s
        engine = await _engine(tmp_path / "s.sqlite", backend,
                               retry=RetryPolicy(timeout_s=0.1, backoff_base_s=0.001))
        t = time.monotonic()
        r = await engine.chat("m", HI)
        elapsed = time.monotonic() - t
        await _finish(engine)
        return backend, r, elapsed

    backend, r, elapsed = asyncio.run(go())
    assert r.ok and r.attempts == 3 and len(backend.calls) == 3
    assert elapsed >= 0.2  # two timeouts of 0.1 s each were waited out
    assert backend.completed == 1  # the two 5 s replies were abandoned, not awaited: only the third answered
    assert backend.in_flight == 0  # the abandoned calls were cancelled, not left running


def test_timeouts_without_retries_fail_with_a_clear_error(tmp_path):
    async def go():
        backend = Scripted(delay=5.0)
        engine = await _engine(tmp_path / "s.sqlite", backend, retry=RetryPolicy(max_retries=1, timeout_s=0.05,
                                                                                  backoff_base_s=0.001))
        r = await engine.chat("m", HI)
        await _finish(engine)
        return engine, r

    engine, r = asyncio.run(go())
    assert not r.ok and r.error == "timed out after 0.05 s" and r.attempts == 2
    assert engine.usage["m"].failed == 1


# --- rate limits --------------------------------------------------------------------------------------

def test_retry_after_is_honoured_and_capped(tmp_path):
    async def go(retry_after, cap):
        backend = Scripted(failures=[BackendError("429", rate_limited=True, retry_after=retry_after)])
        engine = await _engine(tmp_path / f"{cap}.sqlite", backend,
                               retry=RetryPolicy(backoff_base_s=0.001, retry_after_cap_s=cap))
        t = time.monotonic()
        r = await engine.chat("m", HI)
        elapsed = time.monotonic() - t
        await _finish(engine)
        return r, elapsed, engine, backend

    r, elapsed, engine, backend = asyncio.run(go(0.3, 5.0))
    assert r.ok and r.attempts == 2 and elapsed >= 0.3
    assert backend.started_at[1] - backend.started_at[0] >= 0.3
    assert (engine.usage["m"].rate_limited, engine.usage["m"].retries) == (1, 1)
    r, elapsed, _, _ = asyncio.run(go(30.0, 0.2))  # the server asks for 30 s; the cap says 0.2 s
    assert r.ok and r.attempts == 2 and 0.2 <= elapsed < 30  # answered, without waiting the 30 s asked for


def test_retry_after_holds_back_other_requests_too(tmp_path):
    """A 429 is about the account, not one request: nobody starts before the server said to come back."""
    async def go():
        backend = Scripted(max_concurrency=4,
                           failures=[BackendError("429", rate_limited=True, retry_after=0.4)])
        engine = await _engine(tmp_path / "s.sqlite", backend)
        first = asyncio.create_task(engine.chat("m", q(0)))
        await asyncio.sleep(0.05)  # the first request has had its 429
        others = await asyncio.gather(*(engine.chat("m", q(i)) for i in range(1, 4)))
        await first
        await _finish(engine)
        return backend, others

    backend, others = asyncio.run(go())
    assert all(r.ok for r in others)
    t429 = backend.started_at[0]
    assert all(t - t429 >= 0.38 for t in backend.started_at[1:]), [t - t429 for t in backend.started_at]


def test_aimd_limit_halves_on_429_and_recovers(tmp_path):
    async def go():
        backend = Scripted(max_concurrency=8, failures=[BackendError("429", rate_limited=True)])
        engine = await _engine(tmp_path / "s.sqlite", backend)
        limit = engine._models["m"].limit
        await engine.chat("m", q(0))  # 429, then success on retry
        after_429 = limit.limit
        await asyncio.gather(*(engine.chat("m", q(i)) for i in range(1, 60)))
        await _finish(engine)
        return after_429, limit.limit, engine

    after_429, recovered, engine = asyncio.run(go())
    assert 4.0 <= after_429 < 4.5  # halved from 8 (then +1/limit for the successful retry)
    assert recovered == 8.0 and engine.usage["m"].rate_limited == 1


def test_adaptive_limit_arithmetic():
    limit = AdaptiveLimit(16, cooldown_s=0.0)
    limit.on_rate_limited()
    assert limit.limit == 8
    limit.on_rate_limited()
    assert limit.limit == 4
    for _ in range(200):
        limit.on_success()
    assert limit.limit == 16  # grows back, never above the maximum
    for _ in range(10):
        limit.on_rate_limited()
    assert limit.limit == 1  # never below one
    slow = AdaptiveLimit(16, cooldown_s=60.0)
    for _ in range(5):  # a burst of 429s from one overload is one cut
        slow.on_rate_limited()
    assert slow.limit == 8


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


def test_rpm_spaces_request_starts(tmp_path):
    async def go():
        backend = Scripted(max_concurrency=8, delay=0.3)
        engine = await _engine(tmp_path / "s.sqlite", backend, rpm=600)  # one start per 0.1 s
        await asyncio.gather(*(engine.chat("m", q(i)) for i in range(6)))
        await _finish(engine)
        return sorted(backend.started_at), backend.peak

    starts, peak = asyncio.run(go())
    gaps = [b - a for a, b in pairwise(starts)]
    # The pacer sets each start's slot 0.1 s after the last one; a start can land late on a loaded
    # machine, which shortens the next gap but never the total span (unpaced, it would be ~0).
    assert len(starts) == 6 and starts[-1] - starts[0] >= 5 * 0.1 - 0.005, gaps
    assert peak >= 2  # spaced, not serialised: a start does not wait for the previous reply (0.3 s)


def test_pacer_unit():
    async def go():
        pacer = Pacer(rpm=600)
        starts = []
        for _ in range(4):
            await pacer.wait()
            starts.append(time.monotonic())
        unpaced = Pacer(None)
        other_ran = asyncio.Event()
        asyncio.get_running_loop().call_soon(other_ran.set)
        for _ in range(100):
            await unpaced.wait()
        return starts, other_ran.is_set()

    starts, unpaced_yielded = asyncio.run(go())
    assert starts[-1] - starts[0] >= 3 * 0.1 - 0.005  # the span only: a late start shortens the gap after it
    assert not unpaced_yielded  # 100 unpaced waits never suspended: no sleep, not even a zero one


def test_tpm_budget_holds_requests_until_tokens_are_available(tmp_path):
    async def go():
        backend = Scripted(max_concurrency=8, delay=0.2)
        # 1000 tokens/s, a bucket of 10 000; each request is estimated at its 3 500 max_tokens
        engine = await _engine(tmp_path / "s.sqlite", backend, tpm=60_000)
        t = time.monotonic()
        await asyncio.gather(*(engine.chat("m", q(i), GenParams(max_tokens=3500)) for i in range(3)))
        await _finish(engine)
        return [s - t for s in sorted(backend.started_at)], backend.peak

    starts, peak = asyncio.run(go())
    assert peak == 2  # two fit in the bucket at once (both in flight together), the third did not
    assert starts[2] >= 0.45  # the third waits for the missing 500 tokens (0.5 s)


def test_token_budget_unit():
    async def go():
        budget = TokenBudget(tpm=60_000)  # 1000 tokens/s, bucket of 10 000
        t = time.monotonic()
        await budget.take(10_000)
        await budget.take(300)  # empty bucket: 0.3 s
        waited = time.monotonic() - t
        budget.settle(estimated=5000, actual=10)  # the real usage was small: credit comes back
        other_ran = asyncio.Event()
        asyncio.get_running_loop().call_soon(other_ran.set)
        await budget.take(4000)
        return waited, other_ran.is_set()

    waited, waited_after_credit = asyncio.run(go())
    assert waited >= 0.28 and not waited_after_credit  # the credit covered 4 000 tokens: no wait at all


# --- the store ----------------------------------------------------------------------------------------

def test_two_store_handles_on_one_file(tmp_path):
    path = tmp_path / "s.sqlite"
    a, b = Store(path), Store(path)
    a.put("k1", "fp", Request(HI), Completion(text="one", prompt_tokens=1), 0.1)
    b.put("k2", "fp", Request(q(2), GenParams(temperature=0.5)), Completion(text="two"), 0.2)
    assert a.get("k2").completion.text == "two" and b.get("k1").completion.text == "one"
    assert a.get("k1").completion.prompt_tokens == 1 and b.get("k2").latency_s == 0.2
    assert a.get("missing") is None
    a.close()
    assert b.stats().responses == 2
    b.close()


def test_an_engine_on_a_second_handle_sees_the_first_ones_answers(tmp_path):
    path = tmp_path / "s.sqlite"

    async def go():
        first = await _engine(path, Scripted(tag="first"))
        second_backend = Scripted(tag="second")
        second = await _engine(path, second_backend)
        r1 = await first.chat("m", HI)
        r2 = await second.chat("m", HI)  # written through by the first engine before it returned
        await _finish(first)
        await _finish(second)
        return r1, r2, second_backend

    r1, r2, second_backend = asyncio.run(go())
    assert r2.cached and r2.text == r1.text == "first hi t=0.0" and second_backend.calls == []


def test_a_resumed_run_reports_what_its_reused_answers_cost(tmp_path):
    """B18: the answers a run reuses from the store (its own earlier, interrupted attempt) are not
    free: their tokens, as stored, priced as new ones, are its ``cached_cost``; ``cost`` stays what
    this run paid."""
    path = tmp_path / "s.sqlite"

    async def go(n):
        engine = Engine(Store(path), retry=FAST)
        await engine.add_model("m", Scripted(), price_in_per_mtok=1e6, price_out_per_mtok=2e6)  # 1 and 2 a token
        await asyncio.gather(*(engine.chat("m", q(i), GenParams()) for i in range(n)))
        usage = engine.usage["m"].as_dict()
        await _finish(engine)
        return usage

    first = asyncio.run(go(2))  # the attempt interrupted after 2 of 5 answers
    resumed = asyncio.run(go(5))
    assert first["cost"] == pytest.approx(2 * (3 + 4)) and first["cached_cost"] == 0
    assert (resumed["new"], resumed["cached"]) == (3, 2)
    assert resumed["cost"] == pytest.approx(3 * (3 + 4))  # what the resumption paid
    assert resumed["cached_cost"] == pytest.approx(first["cost"])  # what the first attempt paid for the rest
    assert (resumed["cached_prompt_tokens"], resumed["cached_completion_tokens"]) == (6, 4)
