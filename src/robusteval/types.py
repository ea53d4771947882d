"""The small immutable values that flow through a run.

Everything a stage hands to the next is one of these frozen dataclasses, so a stage can be
tested alone and nothing downstream can mutate what the store already recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

SEEDS = 2**32  # backend seeds are 32-bit (llama.cpp, NumPy): a draw's seed wraps within them


@dataclass(frozen=True)
class Message:
    """One chat turn."""

    role: str
    content: str


@dataclass(frozen=True)
class GenParams:
    """Every generation parameter that can change an answer; all of them enter the cache key."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0

    def as_dict(self) -> dict[str, Any]:
        # Built by hand: dataclasses.asdict deep-copies and is on the per-request hot path.
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens,
                "seed": self.seed, "stop": list(self.stop), "logprobs": self.logprobs,
                "top_logprobs": self.top_logprobs}

    def for_sample(self, sample: int) -> GenParams:
        """The parameters of a request's draw ``sample``: the seed moved by the draw (``seed + sample``,
        no seed counted as 0). A backend that honours the seed (llama.cpp, vLLM, OpenAI) answers one
        seed with one reply, so K samples sent with one seed would be one draw K times. Draw 0 is the
        request as given; every caller's draws follow this one rule (`Engine.chat` applies it)."""
        return self if not sample else replace(self, seed=((self.seed or 0) + sample) % SEEDS)


@dataclass(frozen=True)
class Request:
    """What is sent to a backend. `sample` tells repeats at temperature > 0 apart; its params carry
    that draw's own seed (`GenParams.for_sample`), and both enter the cache key."""

    messages: tuple[Message, ...]
    params: GenParams = field(default_factory=GenParams)
    sample: int = 0
    # Set for a log-likelihood request: score ``continuation`` after the reply begins with ``prefix``.
    continuation: str | None = None
    prefix: str = ""

    def messages_as_dicts(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the most likely alternatives."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one request (before the engine adds bookkeeping)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    loglik: float | None = None  # log P(continuation | prompt), for log-likelihood requests
    greedy: bool | None = None  # whether greedy decoding would have produced the continuation


@dataclass(frozen=True)
class Response:
    """The engine's answer to a request: a completion, or the error that ended its retries.

    A failed request stays visible as failed (``error`` set, ``text`` None); suites must never
    count it as a wrong answer.
    """

    key: str
    text: str | None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    cached: bool = False
    attempts: int = 1
    latency_s: float = 0.0
    loglik: float | None = None
    greedy: bool | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Item:
    """One multiple-choice question as loaded from a dataset."""

    id: str
    question: str
    options: tuple[str, ...]
    answer: int  # index into options
    category: str | None = None
    source: str = ""  # "file:line", for error messages and samples


@dataclass(frozen=True)
class Variant:
    """One perturbed presentation of an item.

    ``order[i]`` is the index in ``item.options`` of the option shown at position i, so an answer
    at any shown position maps back to the original option's content.
    """

    item_id: str
    family: str
    name: str
    labels: tuple[str, ...]
    order: tuple[int, ...]
    messages: tuple[Message, ...]
    # A sampled draw of the ``seeds`` family: asked at the family's temperature as sample ``draw``
    # (its own cache key and backend seed); None: asked with the run's own decoding.
    draw: int | None = None
    # The option texts as shown, in the order shown, where they are not the item's own (a copy that
    # adds an option or rewrites them: add_distractor, option_paraphrase): what a reply naming an
    # option's text is compared with. Empty: ``item.options`` in ``order``.
    options: tuple[str, ...] = ()

    def original_index(self, position: int) -> int:
        return self.order[position]


# How the default reader read a reply (`readers.content`), in the order its rules are tried: the
# requested sentence, a label in another phrasing, an option's text, or nothing it could read.
READ_AS = ("label", "phrase", "text", "invalid")


@dataclass(frozen=True)
class Answer:
    """What a reader made of a response: a shown position, or invalid (kept, counted wrong)."""

    # 0-based; at or past len(labels) for a label past the options shown, read as a wrong answer
    # (the mmlu-pro reader's "J" of 9 options, as MMLU-Pro's authors count it)
    position: int | None
    label: str | None
    status: str  # "ok" | "invalid" | "failed"
    # how the default reader read it (one of `READ_AS`); None from the named readers
    read_as: str | None = None
