"""The engine: every model call in a run goes through `Engine.chat`.

Suites are plain async code (``await engine.chat(model, messages, params)``); the engine makes the
calls of all concurrent coroutines share one schedule: identical in-flight requests are sent once,
cached answers are served from the store, new ones run under the backend's concurrency, RPM and TPM
limits, with retries, and are committed to the store before the caller sees them.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

from robusteval.engine.group_commit import GroupCommit
from robusteval.engine.limits import AdaptiveLimit, Pacer, TokenBudget
from robusteval.engine.plan import Plan
from robusteval.engine.store import Store, StoreRow, cache_key
from robusteval.engine.stream import count_request
from robusteval.errors import BackendError, UserError
from robusteval.models.base import Backend, DeferredBackend, LoglikBackend, completion_problem
from robusteval.redact import has_secret, redact
from robusteval.types import Completion, GenParams, Message, Request, Response, TokenLogprob

T = TypeVar("T")

DRY_RUN = "not sent: --estimate"
# The reply a dry run with ``stand_in`` gives every new request (see `Engine`): plain words that no
# reader takes for an answer, a rating or a label, so a suite goes on to its later stages and
# re-asks what it re-asks of an unusable reply, as it would with a model that wrote prose. Each
# request's own (its key's start): two different requests never get the same reply, or the
# requests built from replies (an oracle's on a pair of answers) would merge as they never would.
STAND_IN = "(estimate: a stand-in for reply {key})"


def is_stand_in(text: str | None) -> bool:
    """Whether ``text`` is (or is built from) a dry run's stand-in reply: an estimate plans it as
    accepted (a paraphrase kept), where a run would check a real reply."""
    return text is not None and STAND_IN.split("{", 1)[0].strip("( ") in text


class ProgressSink(Protocol):
    def expect(self, n: int) -> None: ...

    def record(self, response: Response) -> None: ...


@dataclass
class Usage:
    """Per-model accounting, reported in the results."""

    requests: int = 0
    cached: int = 0
    new: int = 0
    failed: int = 0
    retries: int = 0
    rate_limited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    store_rejected: int = 0  # stored answers whose bytes no longer matched their checksum: asked again
    price_factor: float = 1.0  # share of the listed prices charged (0.5 through a Batch API)
    cached_prompt_tokens: int = 0  # the tokens of the cached answers, as the store recorded them
    cached_completion_tokens: int = 0

    @property
    def cost(self) -> float:
        """Cost of the new (non-cached) tokens at the configured prices (times `price_factor`):
        what this command paid."""
        return self._priced(self.prompt_tokens, self.completion_tokens)

    @property
    def cached_cost(self) -> float:
        """What the cached answers cost when they were asked, at the same prices: a resumed run's
        earlier attempt is here (docs/results.md, "Usage and cost")."""
        return self._priced(self.cached_prompt_tokens, self.cached_completion_tokens)

    def _priced(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.price_in_per_mtok
                + completion_tokens * self.price_out_per_mtok) * self.price_factor / 1e6

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "requests", "cached", "new", "failed", "retries", "rate_limited", "prompt_tokens",
            "completion_tokens", "price_in_per_mtok", "price_out_per_mtok", "price_factor", "store_rejected",
            "cached_prompt_tokens", "cached_completion_tokens")} | {
            "cost": round(self.cost, 6), "cached_cost": round(self.cached_cost, 6)}


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    rate_limit_retries: int = 20  # 429s retried on top of max_retries (paced, so they do not pile up)
    timeout_s: float = 300.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 60.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential backoff with full jitter (spreads retries of many requests apart)."""
        return rng.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2**attempt))


@dataclass
class _Model:
    name: str
    backend: Backend
    limit: AdaptiveLimit
    pacer: Pacer
    budget: TokenBudget
    usage: Usage = field(default_factory=Usage)
    timeout_s: float | None = None  # per attempt; None for a deferred backend (its answers come in bulk, later)
    deferred: bool = False


class Engine:
    """Schedules, dedupes, caches and accounts for model calls.

    ``use_cache=False`` ignores stored answers (they are asked again and overwritten); requests are
    still deduplicated within the run, so nothing is ever asked twice in one run.
    """

    def __init__(self, store: Store, *, use_cache: bool = True, retry: RetryPolicy | None = None,
                 progress: ProgressSink | None = None, seed: int = 0, dry_run: bool = False,
                 stand_in: bool | Callable[[str, Request], int] = False, keep_requests: bool = True,
                 plan_sample: int = 1000):
        self.store = store
        self._writer = GroupCommit(store, replace=not use_cache)
        # dry_run: nothing is sent; each new request is recorded in `planned` and answered as failed,
        # so a suite runs through to the end and `--estimate` can count what a real run would ask.
        # stand_in (with dry_run): answered instead with `STAND_IN`, as a delivered reply, so the
        # stages that follow an answer (the next conversation turn, the questionnaire after it, the
        # oracle's rating of the answers, the judge of a generated pair) are planned and counted too.
        # A callable gives the stand-in's length in characters for (model, request): the length a
        # real reply is expected to have, so prompts built on replies (a conversation's later turns,
        # the questionnaire after it) are counted at about their real size.
        self.dry_run = dry_run
        self.stand_in = stand_in
        # What a dry run plans, per model (`Plan`): the requests themselves only with keep_requests
        # (an export writes them all); an estimate needs their lengths and a sample of plan_sample.
        self.planned: dict[str, Plan] = {}
        self._keep_requests, self._plan_sample = keep_requests, plan_sample
        self.use_cache = use_cache
        self.retry = retry or RetryPolicy()
        self.progress = progress
        self._models: dict[str, _Model] = {}
        self._inflight: dict[str, asyncio.Future[Response]] = {}
        # Keys answered in this run while the store's answers are ignored (``use_cache=False``): a repeat
        # is served from the store, where its answer was written. With the cache on, the store alone
        # dedupes, and the engine holds nothing per request (a run's memory does not grow with its size).
        self._answered: set[str] = set()
        self._rng = random.Random(seed)

    async def add_model(self, name: str, backend: Backend, *, rpm: float | None = None,
                        tpm: float | None = None, concurrency: int | None = None,
                        price_in_per_mtok: float = 0.0, price_out_per_mtok: float = 0.0) -> None:
        """Start a backend and register it under ``name`` (the name suites pass to `chat`).

        A deferred backend (`models.base.DeferredBackend`: the Batch API) learns where the store is, so
        its pending batches outlive the process, and its requests have no per-attempt timeout."""
        deferred = bool(getattr(backend, "deferred", False))
        if deferred:
            cast(DeferredBackend, backend).attach_store(self.store.path)
        if hasattr(backend, "status"):
            backend.status = self.note  # a backend that loads its model says so while it does
        await backend.start()
        self._models[name] = _Model(
            name, backend, AdaptiveLimit(concurrency or backend.max_concurrency), Pacer(rpm),
            TokenBudget(tpm), Usage(price_in_per_mtok=price_in_per_mtok, price_out_per_mtok=price_out_per_mtok,
                                    price_factor=float(getattr(backend, "price_factor", 1.0))),
            timeout_s=None if deferred else self.retry.timeout_s, deferred=deferred,
        )

    def fingerprint(self, name: str) -> str:
        return self._models[name].backend.fingerprint

    def window(self) -> int:
        """How many jobs a suite keeps under way at once (`engine.stream.in_order`): enough to keep
        every backend busy; for a deferred backend (a Batch API) as many as its backend takes at once,
        since a batch holds the requests asked before it is submitted."""
        from robusteval.engine.stream import WINDOW

        deferred = [m.backend.max_concurrency for m in self._models.values() if m.deferred]
        return max([WINDOW, *deferred])

    @property
    def usage(self) -> dict[str, Usage]:
        return {name: m.usage for name, m in self._models.items()}

    def expect(self, n: int) -> None:
        """Tell the progress display how many more calls are coming."""
        if self.progress:
            self.progress.expect(n)

    def stage(self, name: str) -> None:
        """Name what the run does now ("building variants", "asking", "judging"): the progress
        display counts each stage on its own row."""
        if (stage := getattr(self.progress, "stage", None)) is not None:
            stage(name)

    def note(self, status: str) -> None:
        """What the run waits on right now ("loading model ..."; "" when done), for the display."""
        if (note := getattr(self.progress, "note", None)) is not None:
            note(status)

    async def chat(self, model: str, messages: tuple[Message, ...] | list[Message],
                   params: GenParams | None = None, sample: int = 0) -> Response:
        """The reply to ``messages``; ``sample`` k > 0 is the k-th draw of the same request, sent with
        the seed ``params.seed + k`` (`GenParams.for_sample`) and stored under its own key."""
        return await self._ask(model, Request(tuple(messages), (params or GenParams()).for_sample(sample), sample))

    async def loglik(self, model: str, messages: tuple[Message, ...], continuation: str, prefix: str = "") -> Response:
        """log P(continuation | messages, reply so far = prefix); cached and scheduled like chat."""
        backend = self._models[model].backend
        if not hasattr(backend, "loglikelihood"):
            raise UserError(f"model {model} cannot score log-likelihoods; use --scoring generate")
        return await self._ask(model, Request(tuple(messages), GenParams(max_tokens=0), 0, continuation, prefix))

    def supports_text_loglik(self, model: str) -> bool:
        """Whether the backend scores multi-token continuations (option texts), not only labels."""
        return getattr(self._models[model].backend, "loglik_text", False)

    async def _ask(self, model: str, request: Request) -> Response:
        m = self._models[model]
        key = cache_key(m.backend.fingerprint, request)
        m.usage.requests += 1
        if (begin := getattr(self.progress, "begin", None)) is not None:
            begin()  # the display's total counts what was started, announced or not
        count_request()  # and so does the job it is asked within (`stream.counted`)
        if key in self._inflight:  # identical request already on its way: share its answer
            return self._count(m, await asyncio.shield(self._inflight[key]), from_store=True)
        if self.use_cache or key in self._answered:  # stored before, or asked before in this run
            rejected = self.store.rejected
            if (hit := self.store.get(key)) is not None:
                response = _response(key, hit.completion, cached=True, attempts=0, latency_s=hit.latency_s)
                return self._count(m, response, from_store=True)
            if self.store.rejected != rejected:  # stored, but its bytes changed: asked again below
                m.usage.store_rejected += 1
        if self.dry_run:
            if (plan := self.planned.get(model)) is None:
                plan = self.planned[model] = Plan(self._keep_requests, self._plan_sample)
            plan.add(key, request)
            if self.stand_in:
                chars = self.stand_in(model, request) if callable(self.stand_in) else 0
                return _stand_in(key, request, chars)
            return Response(key=key, text=None, error=DRY_RUN)
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            response = await self._call(m, key, request)
            if response.ok and not self.use_cache:
                self._answered.add(key)
            future.set_result(response)
        except BaseException as exc:  # cancelled (Ctrl-C): waiters must not hang
            future.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
            future.exception()  # mark retrieved
            raise
        finally:
            del self._inflight[key]
        return self._count(m, response, from_store=False)

    def _count(self, m: _Model, response: Response, *, from_store: bool) -> Response:
        u = m.usage
        if not response.ok:  # also a duplicate that shared a failed request's outcome: nothing was cached
            u.failed += 1
        elif from_store:
            u.cached += 1
            u.cached_prompt_tokens += response.prompt_tokens
            u.cached_completion_tokens += response.completion_tokens
            response = response if response.cached else _as_cached(response)
        else:
            u.new += 1
            u.prompt_tokens += response.prompt_tokens
            u.completion_tokens += response.completion_tokens
        if self.progress:
            self.progress.record(response)
        return response

    async def _call(self, m: _Model, key: str, request: Request) -> Response:
        """Send one request with limits and retries; the success is stored before it is returned."""
        estimate = estimate_tokens(request)
        error = "not attempted"
        attempt = 0
        completion: Completion | None = None
        retries_left, throttles_left = self.retry.max_retries, self.retry.rate_limit_retries
        while True:
            attempt += 1
            throttled = False
            await m.pacer.wait()
            await m.budget.take(estimate)
            await m.limit.acquire()
            started = time.monotonic()
            wait_s: float | None = None
            try:
                # asyncio.timeout, not wait_for: no extra task per request (client CPU bounds throughput)
                async with asyncio.timeout(m.timeout_s):
                    answer = await (m.backend.chat(request.messages, request.params) if request.continuation is None
                                    else cast(LoglikBackend, m.backend).loglikelihood(
                                        request.messages, request.prefix, request.continuation))
            except TimeoutError:
                error = f"timed out after {self.retry.timeout_s:g} s"
            except BackendError as exc:
                error = str(exc)
                if exc.rate_limited:
                    throttled = True
                    m.usage.rate_limited += 1
                    m.limit.on_rate_limited()
                    m.pacer.on_rate_limited()
                    if exc.retry_after is not None and math.isfinite(exc.retry_after) and exc.retry_after >= 0:
                        wait_s = min(exc.retry_after, self.retry.retry_after_cap_s)
                        m.pacer.push_back(wait_s)
                    elif m.pacer.adaptive:  # the pacer, just cut, spaces the retry: no back-off on top,
                        wait_s = 0.0  # which would keep a request asleep for up to 30 s after a storm ends
                if not exc.retryable:
                    break
            except UserError:
                raise  # e.g. a model file that cannot be loaded: no retry can fix it
            except Exception as exc:  # a backend bug must not abort the run; it is recorded
                error = f"{type(exc).__name__}: {exc}"
            else:
                latency = time.monotonic() - started
                # Whatever is returned here is stored and served on every rerun: it must be an answer.
                if (problem := completion_problem(answer)) is None:
                    m.limit.on_success()
                    m.pacer.on_success()
                    m.budget.settle(estimate, answer.prompt_tokens + answer.completion_tokens)
                    completion = answer
                    break
                error = f"bad reply: {problem}"
            finally:  # the slot is free for the next request while this answer is being committed
                await m.limit.release()
            # A 429 is the server asking us to wait, not a fault: it has its own, larger allowance.
            if throttled and throttles_left > 0:
                throttles_left -= 1
            elif retries_left > 0:
                retries_left -= 1
            else:
                break
            m.usage.retries += 1
            await asyncio.sleep(wait_s if wait_s is not None else self.retry.backoff(attempt, self._rng))
        if completion is not None:
            if has_secret(completion.text):  # a server that echoes the key into the reply itself
                completion = replace(completion, text=redact(completion.text, patterns=False))
            # Committed before the caller sees it; completions arriving meanwhile share the transaction.
            kept = await self._writer.put(StoreRow(key, m.backend.fingerprint, request, completion, latency))
            # else another process (an import) stored an answer meanwhile: the store's answer is the one
            # used, so this run and every rerun agree
            if not kept and (held := self.store.get(key)) is not None:
                completion = held.completion
            if m.deferred:  # the store holds an answer: only now may it forget the batch it would resume from
                cast(DeferredBackend, m.backend).committed(answer)
            return _response(key, completion, cached=False, attempts=attempt, latency_s=latency)
        error = redact(error)  # a server may echo the Authorization header into its error
        self.store.record_failure(key, m.backend.fingerprint, error, attempt)
        return Response(key=key, text=None, error=error, attempts=attempt)

    async def close(self) -> None:
        await self._writer.drain()
        for m in self._models.values():
            await m.backend.close()


async def gather_all(coros: Iterable[Awaitable[T]]) -> list[T]:
    """Like asyncio.gather, but the first failure cancels the others and waits for them, so a fatal
    error (a model that cannot load, Ctrl-C) ends the run at once with no orphaned tasks."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _response(key: str, c: Completion, *, cached: bool, attempts: int, latency_s: float) -> Response:
    return Response(key=key, text=c.text, prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
                    finish_reason=c.finish_reason, logprobs=c.logprobs, cached=cached, attempts=attempts,
                    latency_s=latency_s, loglik=c.loglik, greedy=c.greedy)


def _as_cached(r: Response) -> Response:
    return replace(r, cached=True)


def estimate_tokens(request: Request) -> int:
    """Rough token estimate for the TPM budget: ~4 characters a token plus the output allowance."""
    chars = sum(len(m.content) for m in request.messages)
    return chars // 4 + request.params.max_tokens


def _stand_in(key: str, request: Request, chars: int = 0) -> Response:
    """A dry run's delivered reply: `STAND_IN`, padded with filler words to ``chars`` characters,
    with one token's log-probability where they were asked and a log-likelihood of 0 for a scored
    continuation."""
    text = STAND_IN.format(key=key[:12])
    if chars > len(text):
        text += " etc" * ((chars - len(text)) // 4)
    logprobs = (TokenLogprob(text, 0.0),) if request.params.logprobs else None
    return Response(key=key, text=text, finish_reason="stop", logprobs=logprobs,
                    loglik=0.0 if request.continuation is not None else None)
