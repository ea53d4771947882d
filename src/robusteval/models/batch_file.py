"""A model answered by batch files only: ``batchfile:NAME``, for an engine robusteval does not drive.

Offline batch inference (``vllm run-batch`` without a server, Ray Data across a cluster, a provider's
batch API, Spark) has no endpoint to ask. ``--model batchfile:NAME`` stands for such a model: its
requests are exported with ``run ... --export-requests FILE`` (``NAME`` is the ``model`` field of each
line, as the engine serves it), answered elsewhere, brought back with ``robusteval import-results``,
and served from the store by the same ``run`` command (`robusteval.engine.exchange`).

The fingerprint is ``batchfile:NAME``: the same name gives the same cache keys on every machine, so
exports, imports, shards and merges agree. A request the store lacks is not asked anywhere: it fails,
not retried, with a message that says to export it.
"""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message

MAX_NAME = 256  # characters; a served model name (an org/model id) is far shorter

NOT_IMPORTED = ("no answer in the store: a batchfile model is answered by batch files; run the same command with "
                "--export-requests FILE, answer FILE on your engine, then `robusteval import-results OUTPUT`")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a batchfile model's name (None if it can). It is the ``model`` field of
    every exported line and is printed in the commands to run next, so it is one line of text, not a
    path that climbs (``../``), and of a served model name's length; ``org/model`` is fine."""
    if len(name) > MAX_NAME:
        return f"is {len(name):,} characters long; a served model's name has at most {MAX_NAME}"
    if any(ord(c) < 32 or c == "\x7f" for c in name):
        return "must not contain a line break or other control character"
    if any(part in (".", "..") for part in name.replace("\\", "/").split("/")):
        return "must not contain '.' or '..' as a path part (it names the served model, e.g. org/model)"
    return None


@dataclass
class BatchFileBackend:
    name: str
    max_concurrency: int = 1024
    loglik_text = True  # an echoing /v1/completions engine scores any continuation

    @property
    def fingerprint(self) -> str:
        return f"batchfile:{self.name}"

    async def start(self) -> None:
        return None

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        raise BackendError(NOT_IMPORTED, retryable=False)

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        raise BackendError(NOT_IMPORTED, retryable=False)

    async def close(self) -> None:
        return None
