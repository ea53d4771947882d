"""A backend that answers from the store only: the model of a finished run, replayed.

`robusteval merge` reruns a sharded command over the shards' answers. Each model is replaced by
a `ReplayBackend` carrying the fingerprint the shards recorded, so every request has the cache key
it had in its shard and is served from the store; nothing is sent anywhere. A request no shard
asked fails (not retryable) with a message saying so, and the merge reports it."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message

NOT_STORED = "not in the shards' stores: no shard asked this request (a missing or different shard?)"


@dataclass
class ReplayBackend:
    fingerprint: str
    max_concurrency: int = 64

    async def start(self) -> None:
        return None

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        raise BackendError(NOT_STORED, retryable=False)

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        raise BackendError(NOT_STORED, retryable=False)

    async def close(self) -> None:
        return None
