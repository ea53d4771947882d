"""A backend that answers from the store only: the model of a finished run, replayed.

`robusteval merge` reruns a sharded command over the shards' answers. Each model is replaced by
a `ReplayBackend` carrying the fingerprint the shards recorded, so every request has the cache key
it had in its shard and is served from the store; nothing is sent anywhere.

A request missing from the store is one of two things: a request that failed in its shard (failures
are never stored), which fails again here, not retryable, as it did there; or an answer the merge was
not given (a shard's store left out of ``--cache-dir``), which would turn answered requests into
failures and change the numbers. The shards recorded how many requests of this model failed
(``allowance``); a merge missing more than that stops with a `UserError` before writing anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.errors import BackendError, UserError
from robusteval.types import Completion, GenParams, Message

NOT_STORED = "not in the shards' stores: no shard asked this request (a missing or different shard?)"


@dataclass(frozen=True)
class Replay:
    """What a merge knows of one model from its shards."""

    fingerprint: str
    failed: int = 0
    usage: dict[str, Any] | None = None  # the shards' usage summed: the merged run's (it asks nothing itself)


@dataclass
class ReplayBackend:
    fingerprint: str
    allowance: int = 0  # the requests of this model that failed in the shards
    spec: str = ""
    max_concurrency: int = 64
    missing: int = 0

    async def start(self) -> None:
        return None

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        raise self._miss()

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        raise self._miss()

    def _miss(self) -> Exception:
        self.missing += 1
        if self.missing > self.allowance:
            return UserError(f"merge: the store given lacks answers the shards had ({self.missing} requests of "
                             f"{self.spec or 'a model'} are not in it, {self.allowance} failed in the shards); "
                             f"nothing was written. Give --cache-dir the store that holds every shard's answers "
                             f"(`robusteval cache merge` their stores into one)")
        return BackendError(NOT_STORED, retryable=False)

    async def close(self) -> None:
        return None
