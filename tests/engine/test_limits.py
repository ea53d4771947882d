"""The adaptive limits after a storm of 429s (`engine.limits`): the pacer driven on simulated time (a
fake clock in place of the module's `time`), the concurrency limit by counts, and a queued request
that must not keep a start slot reserved at a storm's pace."""

from __future__ import annotations

import asyncio
import math
import time
from itertools import pairwise
from types import SimpleNamespace

import pytest

from robusteval.engine import limits
from robusteval.engine.limits import AdaptiveLimit, Pacer

CAPACITY = 10.0  # requests per second the simulated client sends when nothing holds it back


def _storm(monkeypatch, *, before_s: float, storm_s: float, after_s: float = 40.0):
    """A client that sends as fast as the pacer lets it (at most CAPACITY a second) to a server that
    accepts everything except during [before_s, before_s + storm_s), when it answers 429 without
    Retry-After. Returns [(t, ok, pace after the answer: rpm or None)]."""
    clock = SimpleNamespace(t=0.0)
    monkeypatch.setattr(limits, "time", SimpleNamespace(monotonic=lambda: clock.t))
    pacer = Pacer(None)
    events = []
    while clock.t < before_s + storm_s + after_s:
        ok = not before_s <= clock.t < before_s + storm_s
        if ok:
            pacer.on_success()
        else:
            pacer.on_rate_limited()
        events.append((clock.t, ok, pacer.rpm))
        clock.t += max(1.0 / CAPACITY, pacer.interval)
    return events


@pytest.mark.parametrize("before_s, storm_s, within_s", [
    (10.0, 10.0, 5.0),  # a storm in the middle of a run: back to 80% of the rate measured before it
    (0.0, 10.0, 5.0),  # a storm from the first request (nothing measured): back to what the client sends
    (10.0, 120.0, 12.0),  # a long storm: probes at one per 10 s at the slowest, so its end is seen soon
])
def test_the_pace_recovers_within_seconds_of_a_storm(monkeypatch, before_s, storm_s, within_s):
    events = _storm(monkeypatch, before_s=before_s, storm_s=storm_s)
    end = before_s + storm_s
    goal = 0.8 * CAPACITY * 60  # the client sent CAPACITY a second before the storm (or could have)
    recovered = next((t for t, ok, rpm in events if t >= end and ok and (rpm is None or rpm >= goal)), math.inf)
    assert recovered - end <= within_s, [(round(t, 2), ok, rpm and round(rpm)) for t, ok, rpm in events
                                         if end - 2 <= t <= recovered]
    probes = [t for t, ok, _ in events if not ok]
    assert max(b - a for a, b in pairwise(probes)) <= 10.0 + 1e-9  # one probe per 10 s
    if before_s:  # a storm in the middle of a run: a cut to 80% of the measured rate, kept as the goal
        assert events[[t for t, *_ in events].index(probes[0])][2] == pytest.approx(goal, rel=0.02)
    after = [rpm for t, ok, rpm in events if t >= recovered]
    assert all(rpm is None or rpm >= goal * 0.999 for rpm in after)  # and it stays back: no 429 after


def test_the_pace_after_a_single_429_is_unchanged_in_steady_state(monkeypatch):
    """One 429 at the server's limit (no storm): a cut to 80% of the measured rate, then +1% per success,
    as before: the fast climb is only for getting back to the goal."""
    clock = SimpleNamespace(t=0.0)
    monkeypatch.setattr(limits, "time", SimpleNamespace(monotonic=lambda: clock.t))
    pacer = Pacer(None)
    for _ in range(100):
        clock.t += 0.1
        pacer.on_success()  # 600/min measured
    pacer.on_rate_limited()
    assert pacer.rpm == pytest.approx(480)
    clock.t += 5.0
    pacer.on_success()
    assert pacer.rpm == pytest.approx(480 / 0.99)


def test_concurrency_climbs_back_to_the_first_cut_fast_then_slowly():
    limit = AdaptiveLimit(16, cooldown_s=0.0)
    for _ in range(4):  # a storm: 16 -> 8 (the goal) -> 4 -> 2 -> 1
        limit.on_rate_limited()
    assert limit.limit == 1
    successes = 0
    while limit.limit < 8:
        limit.on_success()
        successes += 1
    assert successes == 7  # one more slot per success back to the goal (additive would take 28)
    limit.on_success()
    assert limit.limit == pytest.approx(8 + 1 / 8)  # above the goal: one slot per window of successes
    limit.on_rate_limited()  # a 429 above the goal: a new push-back, a new goal of half the limit
    assert limit.limit == pytest.approx(8.125 / 2)
    limit.on_success()
    assert limit.limit == pytest.approx(8.125 / 2 + 2 / 8.125)


def test_a_queued_request_takes_the_new_pace_not_a_slot_reserved_at_the_storms():
    """Requests queued while the pace was one start per 10 s start as soon as the pace is fast again,
    not at the slots 10, 20, ... 50 s away that they would have reserved on arrival."""
    offset = SimpleNamespace(s=0.0)  # simulated time added to the real clock

    async def go():
        pacer = Pacer(None)
        pacer.on_rate_limited()
        pacer.interval = 10.0  # the pace at the end of a long storm: one start per 10 s
        await pacer.wait()  # the first start takes the slot now
        order: list[str] = []

        async def queued(i: int) -> None:
            await pacer.wait()
            order.append(f"request {i}")

        async def sentinel() -> None:
            await asyncio.sleep(2.0)  # far sooner than the first slot at the storm's pace (10 s)
            order.append("sentinel")

        waiters = [asyncio.create_task(queued(i)) for i in range(5)]
        guard = asyncio.create_task(sentinel())
        await asyncio.sleep(0.05)  # every request is queued, the first one asleep until its slot
        offset.s += 30.0  # 30 s pass without a 429 ...
        pacer.on_success()  # ... and a success: the pace doubled per second since the last 429
        await asyncio.wait([*waiters, guard], return_when=asyncio.ALL_COMPLETED, timeout=10)
        return order, pacer.rpm

    real = time.monotonic
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(limits, "time", SimpleNamespace(monotonic=lambda: real() + offset.s))
        order, rpm = asyncio.run(go())
    assert order == [f"request {i}" for i in range(5)] + ["sentinel"]
    assert rpm is None  # no goal was measured: the pace grew until pacing switched itself off


def test_a_storm_through_the_engine_costs_no_request_and_the_pace_climbs_back(tmp_path):
    """The stub answers every hit 429 without Retry-After for its first 0.5 s: every request is answered
    once, none fails, and by the time 30 requests are answered the pace is back far above its storm
    pace (growth is per second since the last 429, and requests are paced by time: the count answered
    before the pace reaches a level does not depend on the machine's load)."""
    from robusteval.engine import Engine, RetryPolicy, Store
    from robusteval.models import load_backend, parse_model_spec
    from robusteval.testing.openai_stub import StubConfig, StubServer, expected_answer
    from robusteval.types import GenParams, Message

    params = GenParams(max_tokens=16)
    questions = [(Message("user", f"Storm question {i}: which option?"),) for i in range(30)]

    async def go(base_url: str):
        engine = Engine(Store(tmp_path / "s.sqlite"), retry=RetryPolicy(timeout_s=10))
        await engine.add_model("m", load_backend(parse_model_spec(f"openai:stub-model?base_url={base_url}")))
        try:
            responses = await asyncio.gather(*(engine.chat("m", q, params) for q in questions))
        finally:
            await engine.close()
            engine.store.close()
        return responses, engine.usage["m"], engine._models["m"].pacer.rpm

    with StubServer(StubConfig(storm_s=0.5)) as stub:
        responses, usage, rpm = asyncio.run(go(stub.base_url))
        counters = stub.counters()
    assert [r.text for r in responses] == [expected_answer("stub-model", q, params) for q in questions]
    assert (usage.new, usage.failed) == (30, 0)
    assert counters["outcomes"]["429"] == usage.rate_limited > 0
    assert set(counters["requests"].values()) == {1}  # each answered once
    assert rpm is None or rpm >= 4 * 60  # the storm's pace was at most 60/min (a 429 before any success)


def test_a_success_long_after_the_last_429_switches_pacing_off(monkeypatch):
    clock = SimpleNamespace(t=0.0)
    monkeypatch.setattr(limits, "time", SimpleNamespace(monotonic=lambda: clock.t))
    pacer = Pacer(None)
    pacer.on_rate_limited()
    clock.t = 3600.0  # an hour without a 429 (2 ** 3600 would overflow a float)
    pacer.on_success()
    assert pacer.rpm is None
