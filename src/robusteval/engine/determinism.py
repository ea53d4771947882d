"""Does a backend give the same reply to the same request? Ask it twice and count what differs.

robusteval reads a changed answer as the model's inconsistency. A backend that answers one greedy
request differently from one call to the next (batching, prompt caches, GPU reductions, a load
balancer over several replicas) therefore adds its own noise to every consistency figure; this
module measures that noise floor so it can be shown beside the effect being measured.

The first reply to each request is the one a run uses (from the store or freshly asked); the second
is asked again through a second engine that shares the started backend but not the store (the
stored answer is neither read nor overwritten), in the reverse order, so that batching and prompt
caches see the requests in another arrangement. Only greedy chat requests (temperature 0) are
compared: at a higher temperature a different reply is the point of sampling.
"""

from __future__ import annotations

import heapq
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from robusteval.engine.runner import Engine, ProgressSink, RetryPolicy, gather_all
from robusteval.engine.store import Store, cache_key
from robusteval.models.base import Backend
from robusteval.types import Completion, GenParams, Message, Request, Response

EXAMPLES = 3  # differing replies kept in the result, to show what the noise looks like
EXCERPT = 300  # characters of each kept reply


@dataclass(frozen=True)
class Difference:
    """One request whose two replies differed (excerpts)."""

    prompt: str
    first: str
    second: str


@dataclass(frozen=True)
class DeterminismResult:
    """``differ`` of ``asked`` requests got a different reply the second time; ``failed`` requests
    failed in either pass and are left out. The interval is Wilson's 95% interval for the share."""

    model: str
    asked: int
    differ: int
    failed: int = 0
    examples: tuple[Difference, ...] = ()

    @property
    def share(self) -> float | None:
        return self.differ / self.asked if self.asked else None

    @property
    def interval(self) -> tuple[float, float] | None:
        if not self.asked:
            return None
        from scipy.stats import binomtest

        ci = binomtest(self.differ, self.asked).proportion_ci(confidence_level=0.95, method="wilson")
        return float(ci.low), float(ci.high)

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval or (None, None)
        return {"asked": self.asked, "differ": self.differ, "share": self.share, "ci_low": low, "ci_high": high,
                "failed": self.failed,
                "examples": [{"prompt": d.prompt, "first": d.first, "second": d.second} for d in self.examples]}

    @classmethod
    def from_dict(cls, model: str, data: dict[str, Any]) -> DeterminismResult:
        return cls(model, int(data.get("asked", 0)), int(data.get("differ", 0)), int(data.get("failed", 0)),
                   tuple(Difference(e.get("prompt", ""), e.get("first", ""), e.get("second", ""))
                         for e in data.get("examples", ())))

    def summary(self) -> str:
        """One line for the terminal and the report (plain text)."""
        if not self.asked:
            return f"{self.model}: determinism not measured (no greedy request answered in both passes)"
        low, high = self.interval or (0.0, 0.0)
        failed = f"; {self.failed} failed, left out" if self.failed else ""
        return (f"{self.model}: {self.differ} of {self.asked} greedy requests got a different reply when asked "
                f"again ({self.share:.1%}, 95% CI {low:.1%}-{high:.1%}){failed}")


def is_greedy_chat(request: Request) -> bool:
    return request.continuation is None and request.params.temperature == 0


class RecordingEngine(Engine):
    """An engine that also keeps, per model, a sample of the greedy chat requests it answered and the
    reply it gave, for `measure_recorded`.

    The sample is the ``keep`` requests with the smallest cache keys (SHA-256 hashes, so a
    pseudo-random draw) and does not depend on the order in which concurrent requests finish; a
    heap holds only ``keep`` of them, whatever the size of the run."""

    def __init__(self, store: Store, *, keep: int, **kwargs: Any) -> None:  # kwargs: Engine's keywords
        super().__init__(store, **kwargs)
        self.keep = keep
        self._kept: dict[str, list[tuple[str, Request, str]]] = {}  # model -> heap of (-key, request, reply)
        self._seen: dict[str, set[str]] = {}

    async def chat(self, model: str, messages: tuple[Message, ...] | list[Message],
                   params: GenParams | None = None, sample: int = 0) -> Response:
        response = await super().chat(model, messages, params, sample)
        request = Request(tuple(messages), params or GenParams(), sample)
        if response.ok and response.text is not None and is_greedy_chat(request) and not self.dry_run:
            self._remember(model, request, response.text)
        return response

    def _remember(self, model: str, request: Request, reply: str) -> None:
        key = cache_key(self.fingerprint(model), request)
        seen = self._seen.setdefault(model, set())
        heap = self._kept.setdefault(model, [])
        if key in seen:
            return
        if len(heap) < self.keep:
            heapq.heappush(heap, (_negated(key), request, reply))
            seen.add(key)
        elif _negated(key) > heap[0][0]:  # smaller key than the largest kept
            _, old_request, _ = heapq.heapreplace(heap, (_negated(key), request, reply))
            seen.discard(cache_key(self.fingerprint(model), old_request))
            seen.add(key)

    def recorded(self, model: str) -> list[tuple[Request, str]]:
        """The kept requests and their replies, by ascending cache key."""
        return [(request, reply) for _, request, reply in sorted(self._kept.get(model, []), reverse=True)]

    def backend(self, model: str) -> Backend:
        return self._models[model].backend


def _negated(key: str) -> str:
    """A string whose order is the reverse of ``key``'s (hex digits), for a max-heap on keys."""
    return key.translate(_REVERSE_HEX)


def new_engine(store: Store, *, keep: int = 0, **kwargs: Any) -> Engine:
    """A run's engine: one that keeps ``keep`` of its greedy requests to ask again
    (``--check-determinism N``), or a plain `Engine` (``keep`` 0); kwargs: `Engine`'s keywords."""
    if keep:
        return RecordingEngine(store, keep=keep, **kwargs)
    return Engine(store, **kwargs)


async def measure_models(engine: Engine, models: list[str], *, rpm: float | None = None, tpm: float | None = None,
                         concurrency: int | None = None) -> dict[str, dict[str, Any]]:
    """``--check-determinism N`` on a run: ask the requests ``engine`` (a `new_engine` with ``keep``)
    kept of each model again, bypassing the store; results.json records the counts under ``determinism``."""
    assert isinstance(engine, RecordingEngine)
    return {model: (await measure_recorded(engine, model, rpm=rpm, tpm=tpm, concurrency=concurrency,
                                           retry=engine.retry)).as_dict() for model in models}


_REVERSE_HEX = str.maketrans("0123456789abcdef", "fedcba9876543210")


async def measure_recorded(engine: RecordingEngine, model: str, *, rpm: float | None = None, tpm: float | None = None,
                           concurrency: int | None = None, retry: RetryPolicy | None = None) -> DeterminismResult:
    """Ask the requests ``engine`` kept for ``model`` again, bypassing the store, and compare."""
    recorded = engine.recorded(model)
    engine.stage("asking again, store bypassed")
    seconds = await ask_again(engine.backend(model), [r for r, _ in recorded], rpm=rpm, tpm=tpm,
                              concurrency=concurrency, retry=retry, progress=engine.progress)
    return compare(model, recorded, seconds)


async def ask_twice(engine: RecordingEngine, model: str, requests: list[Request], *, rpm: float | None = None,
                    tpm: float | None = None, concurrency: int | None = None) -> DeterminismResult:
    """Ask ``requests`` through ``engine`` (its store and cache setting), then again bypassing the
    store in the reverse order; greedy chat requests only (others are skipped)."""
    requests = [r for r in requests if is_greedy_chat(r)]
    engine.keep = max(engine.keep, len(requests))
    engine.stage("asking")
    engine.expect(len(requests))
    firsts = await gather_all(engine.chat(model, r.messages, r.params, r.sample) for r in requests)
    result = await measure_recorded(engine, model, rpm=rpm, tpm=tpm, concurrency=concurrency, retry=engine.retry)
    return replace(result, failed=result.failed + sum(not f.ok for f in firsts))


async def ask_again(backend: Backend, requests: list[Request], *, rpm: float | None = None, tpm: float | None = None,
                    concurrency: int | None = None, retry: RetryPolicy | None = None,
                    progress: ProgressSink | None = None) -> list[str | None]:
    """The replies of an already started ``backend`` to ``requests``, asked in the reverse order
    through a throw-away engine (limits and retries as in a run; a store of its own, deleted after),
    returned in the order of ``requests``; None where a request failed. ``progress`` counts them."""
    with tempfile.TemporaryDirectory(prefix="robusteval-determinism-") as tmp:
        store = Store(Path(tmp) / "again.sqlite")
        again = Engine(store, use_cache=False, retry=retry, progress=progress)
        try:
            await again.add_model("again", _Started(backend), rpm=rpm, tpm=tpm, concurrency=concurrency)
            again.expect(len(requests))
            replies = await gather_all(again.chat("again", r.messages, r.params, r.sample) for r in reversed(requests))
        finally:
            await again.close()
            store.close()
    return [r.text if r.ok else None for r in reversed(replies)]


def compare(model: str, firsts: Sequence[tuple[Request, str | None]],
            seconds: Sequence[str | None]) -> DeterminismResult:
    """Count the requests whose two replies differ byte for byte; failures in either pass are left out."""
    asked = differ = failed = 0
    examples: list[Difference] = []
    for (request, first), second in zip(firsts, seconds, strict=True):
        if first is None or second is None:
            failed += 1
            continue
        asked += 1
        if first != second:
            differ += 1
            if len(examples) < EXAMPLES:
                prompt = request.messages[-1].content if request.messages else ""
                examples.append(Difference(prompt[-EXCERPT:], *_where_they_part(first, second)))
    return DeterminismResult(model, asked, differ, failed, tuple(examples))


def _where_they_part(first: str, second: str, before: int = 40) -> tuple[str, str]:
    """Excerpts of two different replies from a little before their first differing character
    (two replies often agree for a long while), marked with '…' where text was cut off."""
    same = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
    start = max(0, same - before)

    def cut(text: str) -> str:
        return ("…" if start else "") + text[start:start + EXCERPT] + ("…" if len(text) > start + EXCERPT else "")

    return cut(first), cut(second)


class _Started:
    """A started backend lent to a second engine: that engine may use it but neither start nor close it."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.fingerprint = backend.fingerprint
        self.max_concurrency = backend.max_concurrency

    async def start(self) -> None:
        pass

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        return await self._backend.chat(messages, params)

    async def close(self) -> None:
        pass


def summaries(determinism: dict[str, dict[str, Any]] | None, model: str | None = None) -> list[str]:
    """The determinism lines of a run (results.json's ``determinism``, by model), of every model or
    of ``model``; none if the run did not measure it."""
    return [DeterminismResult.from_dict(name, data).summary()
            for name, data in (determinism or {}).items() if model is None or name == model]


NOISE_NOTE = ("Backend noise floor (--check-determinism): the same greedy request asked twice, the second time "
              "bypassing the store in another order. Differences counted as the model's inconsistency above "
              "include this share.")


def noise_cell(measured: dict[str, Any] | None) -> str:
    """A model's measured noise (its ``determinism`` entry) as 'differ/asked (share)'; '' if not measured."""
    if not measured or not measured.get("asked"):
        return ""
    return f"{measured['differ']}/{measured['asked']} ({measured['differ'] / measured['asked']:.0%})"
