"""Results of many jobs in the jobs' order, with a bounded number of them under way.

`gather_all` starts every job at once: a task, a coroutine frame and the job's request per job, and
every result kept until the last one is in. For a million requests that is gigabytes, though the
backends never serve more than their concurrency at a time. `in_order` starts jobs as earlier ones
finish, at most ``window`` at a time, and hands each result on as soon as it and every earlier one
are done: memory depends on the window, not on the number of jobs, and the results come in the
same order as from `gather_all` (a consumer writing them to a file writes the same file).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import TypeVar

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")

# Jobs under way at once. Far above any backend's concurrency (each job waits in the engine's limits
# for its turn), so the backends stay as busy as with every job started; a deferred backend (a Batch
# API) gets a larger window from `Engine.window`, since a batch holds what has been asked so far.
WINDOW = 4096


async def in_order(jobs: Iterable[JobT], one: Callable[[JobT], Awaitable[ResultT]],
                   window: int = WINDOW) -> AsyncIterator[ResultT]:
    """``await one(job)`` for every job, yielded in the jobs' order; ``jobs`` is read lazily, at most
    ``window`` jobs run at once. The first failure cancels the jobs under way (and waits for them)
    and is raised, as `gather_all` does; so does closing the iterator early."""
    pending: deque[asyncio.Task[ResultT]] = deque()
    source = iter(jobs)
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < window:
                job = next(source, _END)
                if job is _END:
                    exhausted = True
                else:
                    pending.append(asyncio.ensure_future(one(job)))  # type: ignore[arg-type]
            if not pending:
                return
            head = pending.popleft()
            yield await head
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


_END = object()

# The request counters of the jobs a request is asked within (`counted`): `Engine._ask` adds one to
# each. A context variable, since a job's requests run in tasks it starts (which copy its context);
# a tuple, since a job may run jobs of its own (a tree's nodes within a model's run).
_COUNTERS: ContextVar[tuple[list[int], ...]] = ContextVar("job_request_counters", default=())


def count_request() -> None:
    """One request was started: counted for every job it is asked within (`counted`)."""
    for counter in _COUNTERS.get():
        counter[0] += 1


async def counted(job: Awaitable[ResultT]) -> tuple[ResultT, int]:
    """``await job``, and how many requests it started through the engine (cached ones included):
    what the progress total is corrected by when a job asks fewer than it announced (a persona's
    conversation that failed at its first turn asks none of its questionnaire)."""
    counter = [0]
    token = _COUNTERS.set((*_COUNTERS.get(), counter))
    try:
        result = await job
    finally:
        _COUNTERS.reset(token)
    return result, counter[0]
