"""`SuiteContext.stream`: the one loop every suite asks through. The progress total grows as jobs
start (never announced up front), shrinks by what a job did not ask, the samples are written in the
jobs' order, and no more than the window of jobs is under way."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from robusteval.results.samples_file import SampleWriter
from robusteval.suites.base import SampleBase
from robusteval.testing.scripted import scripted_engine
from robusteval.types import Message


@dataclass
class Announced:
    """A progress sink that keeps what was announced and started, in order."""

    expected: int = 0
    started: int = 0
    log: list[tuple[str, int]] = field(default_factory=list)

    def expect(self, n: int) -> None:
        self.expected += n
        self.log.append(("expect", n))

    def begin(self) -> None:
        self.started += 1

    def record(self, response) -> None:
        return None


class Kept(SampleWriter):
    def __init__(self):
        super().__init__(None)
        self.kept: list = []

    def write(self, sample) -> None:
        super().write(sample)
        self.kept.append(sample)


def _stream(tmp_path, suite_context, *, short: tuple[int, ...], window: int | None = None):
    """Six jobs of up to three requests each; a job in ``short`` stops after its first request (as a
    persona whose conversation failed asks no questionnaire)."""
    async def go():
        engine, _ = await scripted_engine(tmp_path, lambda messages, params: "ok")
        progress = engine.progress = Announced()
        ctx = suite_context(engine, ["scripted"], samples=Kept())
        running, widest = 0, 0

        async def one(job: int) -> list[SampleBase]:
            nonlocal running, widest
            running += 1
            widest = max(widest, running)
            asked = 1 if job in short else 3
            for k in range(asked):
                await engine.chat("scripted", (Message("user", f"job {job} request {k}"),))
            running -= 1
            return [SampleBase(model="scripted", item_id=f"j{job}", variant=k) for k in range(asked)]

        try:
            seen = [job async for job in ctx.stream(range(6), one, requests_per_job=3, window=window)]
        finally:
            await engine.close()
            engine.store.close()
        return seen, progress, ctx.samples.kept, widest

    return asyncio.run(go())


def test_the_total_is_what_the_started_jobs_asked(tmp_path, suite_context):
    seen, progress, kept, _ = _stream(tmp_path, suite_context, short=(0, 3))
    asked = 3 * 4 + 1 * 2  # jobs 0 and 3 asked one request each
    assert progress.started == asked
    assert progress.expected == asked  # announced 3 a job, the two short jobs took back 2 each
    assert progress.log.count(("expect", 3)) == 6 and progress.log.count(("expect", -2)) == 2
    assert [len(group) for group in seen] == [1, 3, 3, 1, 3, 3]
    assert [(s.item_id, s.variant) for s in kept] == [(s.item_id, s.variant) for group in seen for s in group]


def test_jobs_are_announced_as_they_start_and_no_more_than_the_window_run(tmp_path, suite_context):
    _, progress, kept, widest = _stream(tmp_path, suite_context, short=(), window=2)
    assert widest <= 2 and len(kept) == 18 and progress.expected == progress.started == 18
    # never more announced than the jobs under way and done: the first announcement is one job's
    assert progress.log[0] == ("expect", 3)


def test_ask_all_collects_in_order_and_writes_no_samples(tmp_path, suite_context):
    async def go():
        engine, _ = await scripted_engine(tmp_path, lambda messages, params: messages[-1].content.upper())
        ctx = suite_context(engine, ["scripted"], samples=Kept())

        async def one(word: str) -> str | None:
            return (await engine.chat("scripted", (Message("user", word),))).text

        try:
            return await ctx.ask_all(["a", "b", "c"], one), ctx.samples.kept
        finally:
            await engine.close()
            engine.store.close()

    texts, kept = asyncio.run(go())
    assert texts == ["A", "B", "C"] and kept == []
