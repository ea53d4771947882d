"""Counting a backend's noise: ask twice, compare; the in-run sample; the interval and the summary."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter

import pytest

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.engine.determinism import (
    DeterminismResult,
    RecordingEngine,
    ask_twice,
    compare,
    measure_recorded,
    noise_cell,
    summaries,
)
from robusteval.types import Completion, GenParams, Message, Request

FAST = RetryPolicy(backoff_base_s=0.001, backoff_cap_s=0.01)


def request(i: int, temperature: float = 0.0) -> Request:
    return Request((Message("user", f"question {i}"),), GenParams(temperature=temperature, max_tokens=8))


def is_noisy(content: str) -> bool:
    """A fixed, content-derived third of the requests are noisy."""
    return int(hashlib.sha256(content.encode()).hexdigest(), 16) % 3 == 0


class Noisy:
    """A backend whose reply to a noisy request changes with every call (like batch-dependent numerics);
    every other request always gets the same reply. Records the calls per request."""

    fingerprint = "noisy:v1"
    max_concurrency = 4

    def __init__(self):
        self.calls: Counter[str] = Counter()
        self.started = self.closed = 0

    async def start(self):
        self.started += 1

    async def close(self):
        self.closed += 1

    async def chat(self, messages, params):
        content = messages[-1].content
        self.calls[content] += 1
        await asyncio.sleep(0)
        suffix = f" (call {self.calls[content]})" if is_noisy(content) else ""
        return Completion(text=f"answer to {content}{suffix}", completion_tokens=3)


async def _ask_twice(tmp_path, backend, requests, use_cache=True):
    store = Store(tmp_path / "s.sqlite")
    engine = RecordingEngine(store, keep=0, use_cache=use_cache, retry=FAST)
    try:
        await engine.add_model("m", backend)
        return await ask_twice(engine, "m", requests), store.stats().responses
    finally:
        await engine.close()
        store.close()


def test_a_noisy_backend_is_counted_request_by_request(tmp_path):
    backend = Noisy()
    requests = [request(i) for i in range(40)]
    result, stored = asyncio.run(_ask_twice(tmp_path, backend, requests))
    noisy = sum(is_noisy(r.messages[-1].content) for r in requests)
    assert 0 < noisy < 40
    assert (result.asked, result.differ, result.failed) == (40, noisy, 0)
    assert result.share == pytest.approx(noisy / 40)
    assert all(n == 2 for n in backend.calls.values()) and len(backend.calls) == 40  # each asked exactly twice
    assert backend.started == 1 and backend.closed == 1  # the second pass borrows the started backend
    assert stored == 40  # the second pass neither adds to nor replaces the store's answers
    assert len(result.examples) == 3 and all("(call 1)" in d.first and "(call 2)" in d.second
                                             for d in result.examples)


def test_second_pass_bypasses_the_store(tmp_path):
    """Answers already stored are the first replies (what a resumed run would use); the second pass
    asks the backend again instead of reading them."""
    requests = [request(i) for i in range(12)]
    first_backend = Noisy()
    asyncio.run(_ask_twice(tmp_path, first_backend, requests))
    again = Noisy()  # same fingerprint: the store serves its first pass
    result, _ = asyncio.run(_ask_twice(tmp_path, again, requests))
    assert sum(again.calls.values()) == 12  # only the second pass reached the backend
    # a stored "(call 1)" against a fresh "(call 1)": the noisy replies happen to agree here
    assert result.asked == 12 and result.differ == 0


def test_only_greedy_chat_requests_are_compared(tmp_path):
    backend = Noisy()
    requests = [request(i) for i in range(6)] + [request(i, temperature=0.7) for i in range(6, 10)]
    result, _ = asyncio.run(_ask_twice(tmp_path, backend, requests))
    assert result.asked == 6 and set(backend.calls) == {f"question {i}" for i in range(6)}


def test_examples_show_where_two_replies_part():
    long = "x" * 500
    result = compare("m", [(request(0), long + " The best answer is A.")], [long + " The best answer is C."])
    (d,) = result.examples
    assert d.first == "…" + "x" * 20 + " The best answer is A."
    assert d.second == "…" + "x" * 20 + " The best answer is C."


def test_failures_in_either_pass_are_left_out():
    firsts = [(request(0), "a"), (request(1), None), (request(2), "c"), (request(3), "d")]
    result = compare("m", firsts, ["a", "b", None, "D"])
    assert (result.asked, result.differ, result.failed) == (2, 1, 2)
    assert result.examples[0].first == "d" and result.examples[0].second == "D"


async def _record(tmp_path, order, keep):
    store = Store(tmp_path / f"s{order[0]}.sqlite")
    engine = RecordingEngine(store, keep=keep, retry=FAST)
    backend = Noisy()
    try:
        await engine.add_model("m", backend)
        await asyncio.gather(*(engine.chat("m", request(i).messages, request(i).params) for i in order))
        await asyncio.gather(*(engine.chat("m", request(i).messages, request(i).params) for i in order[:5]))  # repeats
        kept = engine.recorded("m")
        result = await measure_recorded(engine, "m", retry=FAST)
        return kept, result, backend
    finally:
        await engine.close()
        store.close()


def test_the_in_run_sample_does_not_depend_on_the_order_requests_finish(tmp_path):
    forward, result, backend = asyncio.run(_record(tmp_path, list(range(30)), keep=8))
    backward, _, _ = asyncio.run(_record(tmp_path, list(range(29, -1, -1)), keep=8))
    assert [r for r, _ in forward] == [r for r, _ in backward] and len(forward) == 8
    assert result.asked == 8
    assert result.differ == sum(is_noisy(r.messages[-1].content) for r, _ in forward)
    asked_again = [c for c, n in backend.calls.items() if n == 2]
    assert sorted(asked_again) == sorted(r.messages[-1].content for r, _ in forward)


def test_the_plain_engine_is_unchanged_by_the_recording_subclass(tmp_path):
    async def go():
        store = Store(tmp_path / "p.sqlite")
        engine = Engine(store, retry=FAST)
        await engine.add_model("m", Noisy())
        r = await engine.chat("m", request(1).messages, request(1).params)
        await engine.close()
        store.close()
        return r

    assert asyncio.run(go()).text == "answer to question 1"


def test_interval_summary_and_cell():
    result = DeterminismResult("llamacpp", asked=40, differ=0)
    low, high = result.interval
    assert low == 0 and 0.08 < high < 0.09  # Wilson: 0 of 40 still allows up to ~8.8%
    assert result.summary() == ("llamacpp: 0 of 40 greedy requests got a different reply when asked again "
                                "(0.0%, 95% CI 0.0%-8.8%)")
    noisy = DeterminismResult("m", asked=100, differ=17)
    assert noisy.as_dict()["share"] == 0.17 and noisy.as_dict()["ci_low"] == pytest.approx(0.109, abs=1e-3)
    determinism = {"m": noisy.as_dict(), "llamacpp": result.as_dict()}
    assert summaries(determinism, "m") == [noisy.summary()] and len(summaries(determinism)) == 2
    assert summaries({}) == [] and summaries(None) == []
    assert noise_cell(determinism["m"]) == "17/100 (17%)" and noise_cell(None) == ""
    assert DeterminismResult.from_dict("m", noisy.as_dict()) == noisy
