"""The progress display's counts, stages and ETA (engine/progress.py), driven without a terminal
or a clock: the numbers it shows, not how rich draws them."""

from __future__ import annotations

import asyncio
import io

import pytest
from rich.console import Console

from robusteval.engine.progress import EtaEstimate, RichProgress, format_eta
from robusteval.testing.scripted import scripted_engine
from robusteval.types import Message, Response


def _response(cached: bool = False, ok: bool = True) -> Response:
    return Response(key="k", text="x" if ok else None, error=None if ok else "boom", cached=cached,
                    prompt_tokens=3, completion_tokens=2)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(clock=None) -> RichProgress:
    console = Console(file=io.StringIO(), width=120, force_terminal=True)
    return RichProgress("mcq", console=console, enabled=True, clock=clock or Clock())


def test_the_total_counts_requests_started_without_being_announced():
    """A rewriter's requests nobody announced: the total follows what was started, never below what is
    done (the bars that read 8/0 or 31/13)."""
    p = _progress()
    p.expect(13)
    for _ in range(31):
        p.begin()
        p.record(_response())
    assert (p.current.done, p.current.total) == (31, 31)
    p.stage("judging")
    p.begin()
    assert (p.current.done, p.current.total) == (0, 1)
    assert [s.name for s in p.stages] == ["asking", "judging"] and p.total == 32


def test_stages_count_on_their_own_rows_and_an_unused_stage_leaves_none():
    p = _progress()
    p.stage("building variants")  # the default "asking" asked nothing: replaced
    p.expect(4)
    for _ in range(4):
        p.begin()
        p.record(_response(cached=True))
    p.stage("asking")
    p.expect(6)
    p.begin()
    p.record(_response(ok=False))
    assert [(s.name, s.done, s.total, s.cached, s.failed) for s in p.stages] == [
        ("building variants", 4, 4, 4, 0), ("asking", 1, 6, 0, 1)]
    p.stage("asking")  # the same stage again: the same row
    assert len(p.stages) == 2


def test_a_stage_that_announced_jobs_it_never_asked_ends_at_what_it_asked():
    """Pure perturbations are announced as jobs but ask no model: the stage ends 0/0 and leaves
    no row, not a bar stuck at 0/8."""
    p = _progress()
    p.stage("building variants")
    p.expect(8)
    p.stage("asking")
    assert [s.name for s in p.stages] == ["asking"]
    p.expect(3)
    p.begin()
    p.record(_response())
    p.stage("judging")
    assert (p.stages[0].done, p.stages[0].total) == (1, 1)


def test_eta_is_a_weighted_mean_of_new_answers_and_ignores_cached_ones():
    clock = Clock()
    p = _progress(clock)
    p.expect(10)
    assert p.detail().startswith("eta -")  # nothing answered yet
    for _ in range(3):
        p.begin()
        p.record(_response(cached=True))  # instant: not timed
    for gap in (2.0, 2.0):
        clock.now += gap
        p.begin()
        p.record(_response())
    # 5 done of 10 at 2 s per new answer (the first interval runs from the stage's start)
    assert p._eta.mean == pytest.approx(2.0)
    assert p.detail().startswith("eta 0:10 · cached 3 · new 2")
    clock.now += 12.0  # one slow answer moves the mean by its weight, not to 12 s
    p.begin()
    p.record(_response())
    assert p._eta.mean == pytest.approx(0.1 * 12 + 0.9 * 2.0)


def test_status_comes_first_while_the_run_waits_on_it():
    p = _progress()
    p.note("loading model SmolLM2.gguf")
    assert p.detail().startswith("loading model SmolLM2.gguf · cached 0")
    p.note("")
    assert p.detail().startswith("eta -")


def test_eta_estimate_and_format():
    eta = EtaEstimate(started=0.0, weight=0.5)
    assert eta.remaining(5) is None
    eta.tick(4.0)
    eta.tick(6.0)
    assert eta.mean == pytest.approx(3.0) and eta.remaining(4) == pytest.approx(12.0)
    assert (format_eta(None), format_eta(65), format_eta(3 * 3600 + 62)) == ("eta -", "eta 1:05", "eta 3:01:02")


def test_the_engine_reports_stages_starts_and_answers(tmp_path):
    """Through a real engine and store: what was asked twice counts once as new and once as cached."""
    p = _progress()

    async def go():
        engine, _ = await scripted_engine(tmp_path, lambda messages, params: "B", name="m", progress=p)
        try:
            engine.stage("asking")
            await engine.chat("m", (Message("user", "q1"),))
            engine.stage("judging")
            await engine.chat("m", (Message("user", "q1"),))  # stored: cached
            await engine.chat("m", (Message("user", "q2"),))
        finally:
            await engine.close()
            engine.store.close()

    asyncio.run(go())
    assert [(s.name, s.started, s.done, s.new, s.cached) for s in p.stages] == [
        ("asking", 1, 1, 1, 0), ("judging", 2, 2, 1, 1)]
