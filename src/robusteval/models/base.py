"""The one protocol every backend implements."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol, runtime_checkable

from robusteval.types import Completion, GenParams, Message


@runtime_checkable
class Backend(Protocol):
    """A model that answers chat requests.

    ``fingerprint`` names the exact model (backend kind, model id, weights hash or server-reported
    id); it enters every cache key, so two different models never share a cached answer.
    ``max_concurrency`` is how many requests the backend can usefully serve at once.
    ``chat`` raises `robusteval.errors.BackendError` on failure; the engine retries.
    """

    fingerprint: str
    max_concurrency: int

    async def start(self) -> None: ...

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion: ...

    async def close(self) -> None: ...


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """Hash of a weights file; computed once per backend start (about 0.2 s per 100 MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
