"""The one protocol every backend implements."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Protocol, runtime_checkable

from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message, TokenLogprob


@runtime_checkable
class Backend(Protocol):
    """A model that answers chat requests.

    ``fingerprint`` names the exact model (backend kind, model id, weights hash or server-reported
    id); it enters every cache key, so two different models never share a cached answer.
    ``max_concurrency`` is how many requests the backend can usefully serve at once.
    ``chat`` raises `robusteval.errors.BackendError` on failure; the engine retries.
    """

    # read-only: a dataclass field or a property satisfies them
    @property
    def fingerprint(self) -> str: ...

    @property
    def max_concurrency(self) -> int: ...

    async def start(self) -> None: ...

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion: ...

    async def close(self) -> None: ...


class LoglikBackend(Backend, Protocol):
    """A backend that also scores a continuation by log-likelihood (``--scoring loglik``);
    `Engine.loglik` checks for the method before it sends such a request."""

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion: ...


class TokenCountingBackend(Backend, Protocol):
    """A backend that can count a prompt's tokens as its model reads them (llama.cpp's ``/tokenize``);
    the run's estimate checks for the method and otherwise counts characters."""

    async def count_prompt_tokens(self, messages: tuple[Message, ...]) -> int: ...


def context_window(backend: object) -> int | None:
    """The model's context window in tokens where the backend declares one (a ``context_window``
    attribute: llama.cpp its ``n_ctx`` per slot, hf the model's configuration, an OpenAI-compatible
    server what its spec or ``/models`` says), else None: what the estimate's warning
    (`engine.estimate`) and a backend's own refusal (`window_error`) rest on."""
    window = getattr(backend, "context_window", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def over_window(prompt_tokens: float, window: int | None, reply_tokens: int = 0) -> bool:
    """Whether a prompt of ``prompt_tokens`` leaves no room in ``window`` for one token of reply
    (llama.cpp's server refuses such a request), or for ``reply_tokens`` where the server wants the
    whole ``max_tokens`` to fit (vLLM and OpenAI refuse prompt + max_tokens over the window: a backend
    says so with ``window_holds_reply``)."""
    return window is not None and prompt_tokens + max(1, reply_tokens) > window


def window_error(prompt_tokens: int, window: int) -> BackendError:
    """The failure of a request whose prompt does not fit the window: not retried (the same prompt
    fails the same way), and worded so the run's failure hint names the window (`WINDOW_ERROR`)."""
    return BackendError(f"the prompt is {prompt_tokens} tokens: no room for a reply in the model's context "
                        f"window ({window} tokens)", retryable=False)


class DeferredBackend(Backend, Protocol):
    """A backend whose answers come later and in bulk (`models.openai_batch`: the OpenAI Batch API).

    The engine gives it every request at once (its ``max_concurrency`` is a batch's size), sets no
    per-attempt timeout (a batch may take hours), charges ``price_factor`` of the listed prices, and
    calls ``attach_store`` with the response store's path before `start`, so the backend can keep its
    pending batches beside the store and a rerun picks them up instead of submitting them again."""

    deferred: bool
    price_factor: float

    def attach_store(self, store_path: Path) -> None: ...

    def committed(self, answer: Completion) -> None:
        """The engine has committed ``answer`` (the object ``chat`` returned) to the store: only now
        may the backend forget what it kept to resume the request (money is spent once)."""


def completion_problem(c: object) -> str | None:
    """Why a backend's return value cannot be stored as an answer, or None if it can.

    Backends parse what their server sent (`chat_format.parse_chat_completion` does it strictly); the
    engine checks again at the one door into the store, so no backend, present or future, can make a
    number, a list or text SQLite cannot hold into a cached answer that every rerun would serve."""
    if not isinstance(c, Completion):
        return f"the backend returned a {type(c).__name__}, not a Completion"
    if not isinstance(c.text, str):
        return f"the reply text is a {type(c.text).__name__}, not a string"
    try:
        c.text.encode()
    except UnicodeEncodeError:
        return "the reply text is not valid Unicode (a lone surrogate)"
    for name in ("prompt_tokens", "completion_tokens"):
        value = getattr(c, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{name} is {value!r}, not a token count"
    if c.finish_reason is not None and not isinstance(c.finish_reason, str):
        return f"finish_reason is {c.finish_reason!r}, not a string"
    if c.loglik is not None and (isinstance(c.loglik, bool) or not isinstance(c.loglik, (int, float))
                                 or math.isnan(c.loglik)):
        return f"the log-likelihood is {c.loglik!r}, not a number"
    if c.logprobs is not None and not all(isinstance(t, TokenLogprob) and isinstance(t.token, str)
                                          and isinstance(t.logprob, (int, float)) for t in c.logprobs):
        return "the token log-probabilities are malformed"
    return None
