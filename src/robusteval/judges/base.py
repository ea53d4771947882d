"""What a similarity judge returns for a set of answers, and the protocol every judge follows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

SCALE_MAX = 5.0  # ELOQUENT's 0 (different) .. 5 (same content)


@dataclass(frozen=True)
class Rating:
    """A judge's 0-5 score for one set of answers; ``score`` None means missing (never 0)."""

    score: float | None
    raw: float | None = None  # the judge's own quantity before mapping (cosine, entailment prob.)
    detail: str | None = None  # e.g. the oracle's reply, or why the score is missing
    attempts: int = 1


class SimilarityJudge(Protocol):
    name: str

    async def rate(self, answers: list[str], hint: str | None, languages: tuple[str, ...]) -> Rating: ...


class LocalModelClock:
    """Runs a local model's calls (embeddings, NLI) in a worker thread, one at a time, and adds up
    their time.

    Off the event loop, so the engine keeps sending requests while a model encodes; one at a time,
    because a CPU model already uses every core and two concurrent encodes only fight over them
    (and the lazy loads behind them must not race). ``seconds`` is the time spent inside the model
    calls, for results.json."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._lock: asyncio.Lock | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._lock is None:  # made on first use, inside the running loop
            self._lock = asyncio.Lock()
        async with self._lock:
            started = time.perf_counter()
            try:
                return await asyncio.to_thread(fn, *args)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1
