"""engine/stream.py: results in the jobs' order, at most ``window`` jobs under way, jobs read lazily."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.engine.stream import in_order


def test_results_come_in_job_order_with_at_most_window_under_way():
    started: list[int] = []
    running = peak = 0

    def jobs():
        for n in range(50):
            started.append(n)
            yield n

    async def one(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001 * ((7 * n) % 5))  # later jobs often finish first
        running -= 1
        return n * n

    async def consume() -> list[int]:
        out = []
        async for result in in_order(jobs(), one, window=4):
            assert len(started) <= len(out) + 1 + 4  # the jobs are read as the window frees, not all at once
            out.append(result)
        return out

    assert asyncio.run(consume()) == [n * n for n in range(50)]
    assert peak == 4


def test_a_failure_cancels_the_jobs_under_way_and_is_raised():
    cancelled: list[int] = []

    async def one(n: int) -> int:
        if n == 2:
            raise ValueError("job 2")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return n

    async def consume() -> None:
        async for _ in in_order(range(2, 10), one, window=3):
            pass

    with pytest.raises(ValueError, match="job 2"):
        asyncio.run(consume())
    assert sorted(cancelled) == [3, 4]  # the two started beside it; the rest never started
