"""A pool of replicas of one model: several OpenAI-compatible servers (vLLM, SGLang, llama.cpp data
parallel) behind one backend, so the engine, its limits and its store need to know nothing of it.

Spec: ``openai:NAME?base_url=http://a:8000/v1,http://b:8000/v1`` (or ``base_url`` repeated); every
other option (``max_concurrency``, ``timeout``, ``api_key_env``) applies to each replica, so the pool
serves ``max_concurrency`` x replicas requests at once, and the engine's ``--concurrency`` caps the
whole pool.

- Each request goes to the least-loaded healthy replica: fewest requests in flight relative to the
  replica's ``max_concurrency``, ties to the one picked least recently (so even one request at a time
  spreads evenly, and a replica that comes back takes its turn without being flooded).
- A replica whose request fails as a server fails (no connection, its own timeout, a 5xx:
  `BackendError.unavailable`) is put aside and the same request goes to another healthy replica, inside
  the same call: nothing is lost and the engine sees one answer, stored once. A 429 or a 4xx is the
  answer of a working server and goes to the engine as it is (its limits and retries handle it).
- A replica put aside is probed back (``GET /models``, which must still report the same model) once
  its back-off has passed: 0.5 s, doubling with each failed probe up to 30 s. Only a good probe
  brings it back; no user request is risked on a replica that may still be down.
- When every replica is aside, a request waits for the first one back (the probes go on meanwhile),
  at most `wait_s` (30 s: the longest probe back-off, so each replica is probed at least once);
  only then does it fail, as a request to one server that is down, and the engine retries it with
  its back-off. A brief outage of every replica costs a pause, not the requests sent during it.
- At start every replica must answer and report the same model; otherwise one `UserError` names each
  URL and what it reported.

Cache keys: the pool's fingerprint is its first replica's, i.e. exactly that of ``openai:NAME`` with
``base_url`` = the first URL alone. A pool is a deployment detail, not another model: answers stored
by a one-server run are served to the pool and the other way round. (The fingerprint names one URL
because a URL with a model id is what identifies a server's model; listing the same replicas in
another order therefore starts a cache of its own.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from robusteval.errors import BackendError, UserError
from robusteval.models.openai_compat import OpenAIBackend
from robusteval.types import Completion, GenParams, Message

if TYPE_CHECKING:  # spec.load_backend imports the backends
    from robusteval.models.spec import ModelSpec

T = TypeVar("T")


@dataclass
class Replica:
    """One server of the pool and its bookkeeping (all on the event loop's thread: no locks)."""

    backend: OpenAIBackend
    in_flight: int = 0
    sent: int = 0  # requests handed to it
    last_pick: int = 0  # the pool's pick counter when it was last picked (ties go to the least recent)
    answered: int = 0  # of those, answered
    put_aside: int = 0  # times it was put aside
    aside_until: float | None = None  # None: healthy; else probed back from this monotonic time on
    failed_probes: int = 0
    probing: bool = False

    @property
    def url(self) -> str:
        return self.backend.base_url

    @property
    def healthy(self) -> bool:
        return self.aside_until is None


@dataclass(frozen=True)
class ReplicaStats:
    url: str
    sent: int
    answered: int
    put_aside: int
    healthy: bool


@dataclass
class PoolBackend:
    replicas: list[Replica]
    model: str
    backoff_s: float = 0.5  # first wait before a replica put aside is probed; doubles per failed probe
    backoff_cap_s: float = 30.0
    wait_s: float = 30.0  # how long a request waits for a replica back when every one is aside
    fingerprint: str = ""
    loglik_text = True
    window_holds_reply = True  # as each replica's (`OpenAIBackend`)
    _probes: set[asyncio.Task[None]] = field(default_factory=set)
    _probed: asyncio.Event = field(default_factory=asyncio.Event)  # set, and renewed, when a probe ends
    _picks: int = 0

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> PoolBackend:
        urls = [u.strip() for u in spec.option("base_url", "").split(",")]
        if not all(urls):
            raise UserError(f"--model {spec.label!r}: base_url lists an empty URL (a stray comma?); "
                            "write base_url=http://a:8000/v1,http://b:8000/v1")
        seen = {u.rstrip("/") for u in urls}
        if len(seen) != len(urls):
            raise UserError(f"--model {spec.label!r}: base_url lists the same server twice; name each replica once")
        return cls([Replica(OpenAIBackend.from_spec(replace(spec, options=spec.options | {"base_url": url})))
                    for url in urls], model=spec.name)

    @property
    def max_concurrency(self) -> int:
        return sum(r.backend.max_concurrency for r in self.replicas)

    @property
    def context_window(self) -> int | None:
        """The least window a replica knows: a request may go to any of them."""
        return min((w for r in self.replicas if (w := r.backend.context_window) is not None), default=None)

    async def start(self) -> None:
        outcomes = await asyncio.gather(*(r.backend.start() for r in self.replicas), return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        if failed:
            await self.close()
            raise failed[0]
        reported = {r.url: r.backend.server_model for r in self.replicas}
        if len(set(reported.values())) > 1:
            await self.close()
            listing = "; ".join(f"{url} reports {model!r}" for url, model in reported.items())
            raise UserError(f"the replicas of {self.model!r} do not serve the same model ({listing}); "
                            "list in one base_url only servers of one model")
        # The first replica's: a pool shares its cache with that one server (module docstring).
        self.fingerprint = self.replicas[0].backend.fingerprint

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        return await self._send(lambda b: b.chat(messages, params))

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        return await self._send(lambda b: b.loglikelihood(messages, prefix, continuation))

    async def _send(self, call: Callable[[OpenAIBackend], Awaitable[T]]) -> T:
        """Send to the least-loaded healthy replica; where it fails as a server, to the next one; where
        every replica is aside, to the first one back (module docstring)."""
        tried: list[Replica] = []
        errors: list[str] = []
        give_up: float | None = None
        while True:
            if (replica := self._pick(tried)) is None:
                give_up = give_up if give_up is not None else time.monotonic() + self.wait_s
                if not await self._wait_for_a_replica(give_up):
                    break
                tried.clear()  # a replica a probe brought back is worth another try
                continue
            tried.append(replica)
            replica.in_flight += 1
            replica.sent += 1
            try:
                result = await call(replica.backend)
            except BackendError as exc:
                if not exc.unavailable:
                    raise  # the server works; its answer (429, 400, a bad reply) is the engine's to handle
                self._put_aside(replica)
                errors.append(f"{replica.url}: {exc}")
                continue
            finally:
                replica.in_flight -= 1
            replica.answered += 1
            return result
        aside = ", ".join(r.url for r in self.replicas if not r.healthy)
        raise BackendError(f"no replica of the pool could answer within {self.wait_s:g} s "
                           f"({'; '.join(errors[-len(self.replicas):]) or 'all put aside: ' + aside})",
                           unavailable=True)

    async def _wait_for_a_replica(self, give_up: float) -> bool:
        """Wait until a replica is healthy (True) or ``give_up`` passes (False), starting each probe
        as it falls due (no request may be here to do it) and looking again whenever one ends."""
        while not any(r.healthy for r in self.replicas):
            now = time.monotonic()
            if now >= give_up:
                return False
            self._start_due_probes(now)
            due = [r.aside_until for r in self.replicas if r.aside_until is not None and not r.probing]
            probed = self._probed
            try:
                async with asyncio.timeout(max(0.0, min([give_up, *due]) - now)):
                    await probed.wait()
            except TimeoutError:
                pass
        return True

    def _start_due_probes(self, now: float) -> None:
        for r in self.replicas:  # a replica whose back-off has passed gets its probe
            if r.aside_until is not None and not r.probing and now >= r.aside_until:
                r.probing = True
                task = asyncio.get_running_loop().create_task(self._probe(r))
                self._probes.add(task)
                task.add_done_callback(self._probes.discard)

    def _pick(self, tried: list[Replica]) -> Replica | None:
        self._start_due_probes(time.monotonic())
        candidates = [r for r in self.replicas if r.healthy and r not in tried]
        if not candidates:
            return None
        best = min(candidates, key=lambda r: (r.in_flight / max(1, r.backend.max_concurrency), r.last_pick))
        self._picks += 1
        best.last_pick = self._picks
        return best

    def _put_aside(self, replica: Replica) -> None:
        if replica.healthy:  # the requests in flight to a server that died fail together: one event
            replica.put_aside += 1
            replica.failed_probes = 0
            replica.aside_until = time.monotonic() + self.backoff_s

    async def _probe(self, replica: Replica) -> None:
        """Bring a replica back if it answers and still serves the pool's model; else wait longer."""
        try:
            model = await replica.backend.server_model_id()
            good = model == self.replicas[0].backend.server_model
        except Exception:  # a probe never ends the run: the replica just stays aside
            good = False
        finally:
            replica.probing = False
        if good:
            replica.aside_until = None
        else:
            replica.failed_probes += 1
            wait = min(self.backoff_cap_s, self.backoff_s * 2 ** replica.failed_probes)
            replica.aside_until = time.monotonic() + wait
        self._probed.set()  # the requests waiting for a replica look again
        self._probed = asyncio.Event()

    def stats(self) -> list[ReplicaStats]:
        """Per replica, in the order listed: requests sent and answered, times put aside, health now."""
        return [ReplicaStats(r.url, r.sent, r.answered, r.put_aside, r.healthy) for r in self.replicas]

    async def close(self) -> None:
        for task in list(self._probes):
            task.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        await asyncio.gather(*(r.backend.close() for r in self.replicas), return_exceptions=True)
