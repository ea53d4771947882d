"""Local models (sentence embeddings, spaCy, retrievers) called from async code, off the event loop.

A local model's call takes milliseconds to seconds of CPU; run on the event loop it stalls every
request in flight (no reply is read, no new request sent, the progress bar freezes). `LocalWork`
runs such calls in one worker thread (one at a time: they share the CPU, and a model object is
not shared between threads at once) and adds up the seconds each kind of call took, so a run's
cost summary can show them beside the model requests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# One worker for the process: local models are CPU-bound and share the machine's cores.
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="robusteval-local")


@dataclass(frozen=True)
class LocalTime:
    """Calls and seconds of one kind of local work (e.g. ``embedding``)."""

    calls: int = 0
    seconds: float = 0.0


@dataclass
class LocalWork:
    """Runs local model calls off the event loop and accounts their time by kind."""

    spent: dict[str, LocalTime] = field(default_factory=dict)

    async def run(self, kind: str, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` in the local worker thread; its own time (not its wait) counted under ``kind``."""
        def timed() -> tuple[T, float]:
            started = time.perf_counter()
            out = fn(*args)
            return out, time.perf_counter() - started

        out, seconds = await asyncio.get_running_loop().run_in_executor(_EXECUTOR, timed)
        before = self.spent.get(kind, LocalTime())
        self.spent[kind] = LocalTime(before.calls + 1, before.seconds + seconds)
        return out

    def summary(self) -> dict[str, dict[str, float]]:
        """``{kind: {"calls": n, "seconds": s}}`` for a cost summary (seconds rounded to ms)."""
        return {k: {"calls": t.calls, "seconds": round(t.seconds, 3)} for k, t in sorted(self.spent.items())}
