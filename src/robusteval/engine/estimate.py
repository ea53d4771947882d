"""``--estimate``: what a run would ask, cost and take, before it asks anything.

The suite runs against a dry-run engine that sends nothing: each new request is recorded and
answered with a stand-in reply (`engine.runner.STAND_IN`: prose no reader takes for an answer, a
rating or a label, different for every request), so a suite goes through all its stages: a
conversation's next turn and the questionnaire after it, the oracle's ratings of the answers (with
its re-asks of an unreadable rating, all of them), the judge of every generated pair, the detectors
on every generated pair, a tree's answers. The count is every request after in-run dedupe and after
the store's cache; it is exact where what a suite asks does not depend on what the model says
(mcq, persona, tree), and where it does it is the count when every reply is usable and every
re-ask of an unusable one is made: a generated pair that does not parse is neither judged nor
cross-detected in the run (fewer requests), an oracle that rates at once is not re-asked (fewer),
two answers that happen to be identical share the oracle's request (fewer). A stand-in is as long
as the reply the model is expected to write (`stand_in_length`: the mean of its stored answers at
that max_tokens, else max_tokens), so prompts built on replies (a conversation's later turns, the
questionnaire after it) are counted at about their real size, and at most their size with no history.

A prompt longer than the model's context window fails in the run. Where the backend declares its
window (`models.base.context_window`: llama.cpp its ``n_ctx`` per slot, hf the model's configuration,
an OpenAI-compatible server its ``context_window`` option or what ``/models`` reports), the estimate
counts the planned prompts that leave no room for a reply in it (``over_window``; for an OpenAI-compatible
server no room for the request's max_tokens, which vLLM and OpenAI refuse) and the command warns
before anything is asked (the persona suite's Reddit posts of 5,000-7,000 tokens against the embedded
model's 4,096).

Prompt tokens are counted exactly where the backend can (`count_prompt_tokens`: the llama.cpp and hf
backends apply the model's chat template and tokenizer; that loads the model, asks nothing), up to
`EXACT_PROMPTS` distinct prompts. Above that (MMLU-Pro's full test split x order,format plans about
180,000 prompts: minutes of tokenizing) a seeded random sample of `EXACT_PROMPTS` is
counted and the total extrapolated by characters: a line (tokens = a + b x characters) fitted on the
sample, summed over every planned prompt (a regression estimator; its error against the exact count
is measured by benchmarks/estimate_scale.py, figures in docs/performance.md). The basis line says which.
Elsewhere they come from characters at the tokens-per-character ratio of the model's stored
prompts (the store keeps whole-prompt counts, cache reuse included, see
`models.chat_format.prompt_tokens`), or 4 characters a token plus a few template tokens per message
before anything is stored. A ratio is rough: on MMLU with SmolLM2 it ranged from 0.25 to 0.41
tokens per character between questions (the chat template's fixed tokens weigh more in a short
prompt), so a run on other questions can be 15-30% off; a line (template tokens + tokens per
character) fitted on the same history was further off (+32% where the ratio was -16%).

Completion tokens, per max_tokens value of the planned requests: with at least 30 stored answers at
the same max_tokens, a regression estimator (as in survey sampling): answer length fitted on prompt
length (characters) over those answers, summed over the planned prompts and kept within [0,
max_tokens]. Longer questions draw longer answers (r = 0.26-0.34 for SmolLM2 on MMLU), so a set of
short questions is not charged the history's mean; on three 20-question sets the error was +0.8 /
+6.6 / +8.6%, against +5.4 / +11.4 / +15.3% for the mean (benchmarks/estimate.py,
docs/performance.md). With fewer answers, the mean the model produced for the same max_tokens; else
its mean share of max_tokens on other limits × this max_tokens (a model that stops after a short
answer stops there whatever the limit); else max_tokens, an upper bound. This is the least certain
figure: how long a model answers depends on the question (SmolLM2's mean over the 9 variants of one
MMLU question ranged from 10 to 59 tokens at max_tokens=64), so it holds for runs of many questions,
not a handful.
Time: the planned tokens (prompt + completion) × the model's stored seconds per token ÷ its
concurrency (seconds per request where the store has no token counts). Per request, it missed a set
of shorter questions by +28%; per token, +6.4 / -4.3 / +6.3% on three sets (docs/performance.md).
Cost: tokens at --price-in/--price-out, times the backend's price factor (half through a Batch API).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np

from robusteval.engine.plan import Plan, prompt_chars
from robusteval.engine.runner import Engine
from robusteval.engine.store import PastAnswer, Store
from robusteval.errors import UserError
from robusteval.models.base import TokenCountingBackend, context_window, over_window
from robusteval.types import Request

CHARS_PER_TOKEN = 4.0
MESSAGE_OVERHEAD_TOKENS = 4  # chat-template tokens around each message, when nothing is measured
MIN_HISTORY = 5  # fewer stored answers than this are not a basis for a mean or a fit
MIN_FIT = 30  # stored answers at one max_tokens needed to fit answer length on prompt length
EXACT_PROMPTS = 1000  # prompts counted by the tokenizer; above this, a seeded sample of this many


@dataclass(frozen=True)
class CountedTokens:
    """Prompt tokens of the planned requests from the model's tokenizer: all of them counted
    (``counted == planned``), or a seeded sample of them extrapolated by characters."""

    tokens: int
    counted: int
    planned: int
    per_prompt: tuple[int, ...] = ()  # each planned prompt's count, in planned order, when all were counted

    @property
    def basis(self) -> str:
        if self.counted >= self.planned:
            return "prompt tokens counted by the model's tokenizer"
        return (f"prompt tokens counted by the model's tokenizer on a seeded sample of {self.counted:,} of the "
                f"{self.planned:,} prompts, extrapolated by characters")


@dataclass(frozen=True)
class ModelEstimate:
    model: str
    requests: int  # asked by the suite, duplicates included
    cached: int  # answered from the store
    duplicates: int  # asked again within the run: sent once
    to_send: int  # new, distinct requests
    prompt_tokens: int
    completion_tokens: int
    seconds: float | None
    cost: float
    basis: str  # where the completion and time figures come from
    window: int | None = None  # the model's context window in tokens, where the backend declares one
    over_window: int = 0  # planned requests whose prompt alone is longer than the window: they would fail

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def chars_to_tokens(past: list[PastAnswer]) -> tuple[float, float]:
    """(tokens per character, template tokens per message) from stored prompts, or the defaults."""
    chars = sum(p.chars for p in past)
    if len(past) < MIN_HISTORY or not chars:
        return 1 / CHARS_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS
    return sum(p.prompt_tokens for p in past) / chars, 0.0  # the measured ratio holds the template's tokens


async def count_prompt_tokens(engine: Engine, model: str, *, exact: int | None = None,
                              seed: int = 0) -> CountedTokens | None:
    """The prompt tokens of the planned requests, where the backend can count them: every prompt
    up to ``exact`` of them, else a seeded sample of ``exact`` extrapolated by characters."""
    backend = engine._models[model].backend
    plan = engine.planned.get(model)
    if not plan or not hasattr(backend, "count_prompt_tokens"):
        return None
    counter = cast(TokenCountingBackend, backend)
    exact = EXACT_PROMPTS if exact is None else exact
    everything = plan.complete_sample and len(plan) <= exact
    sample = plan.sample if everything or len(plan.sample) <= exact else random.Random(seed).sample(plan.sample, exact)
    slots = asyncio.Semaphore(max(1, backend.max_concurrency))

    async def count(request: Request) -> int:
        async with slots:
            return await counter.count_prompt_tokens(request.messages)

    try:
        counts = await asyncio.gather(*(count(r) for r in sample))
    except UserError:
        raise  # the model cannot load: the run would fail the same way
    except Exception:  # e.g. a server without /tokenize: fall back to the ratio
        return None
    if everything:
        return CountedTokens(sum(counts), len(plan), len(plan), tuple(counts))
    return CountedTokens(round(extrapolate(counts, [prompt_chars(r) for r in sample], plan.chars)),
                         len(sample), len(plan))


def extrapolate(tokens: list[int], chars: list[int], all_chars: Sequence[int]) -> float:
    """Total tokens of prompts of ``all_chars`` characters, from a random sample of them (``tokens``
    of prompts of ``chars`` characters): a line fitted on the sample, summed over all (regression
    estimator; the mean per prompt where the sample's lengths do not vary)."""
    x, y = np.array(chars, dtype=float), np.array(tokens, dtype=float)
    if len(x) < 2 or x.std() == 0:
        return float(y.mean() * len(all_chars))
    slope, intercept = np.polyfit(x, y, 1)
    return float(intercept * len(all_chars) + slope * float(sum(all_chars)))


def expected_completions(past: list[PastAnswer], max_tokens: int, prompt_chars: list[int]) -> tuple[float, str]:
    """Expected completion tokens of requests with ``max_tokens`` and these prompt lengths (characters),
    in all, and what that rests on."""
    same = [p for p in past if p.max_tokens == max_tokens]
    if len(same) >= MIN_FIT:
        x = np.array([p.chars for p in same], dtype=float)
        y = np.array([p.completion_tokens for p in same], dtype=float)
        if x.std() > 0:
            slope, intercept = np.polyfit(x, y, 1)
            total = np.clip(intercept + slope * np.array(prompt_chars, dtype=float), 0, max_tokens).sum()
            return float(total), (f"answer length fitted on prompt length over {len(same)} stored answers "
                                  f"with max_tokens={max_tokens}")
    per_request, basis = expected_completion(past, max_tokens)
    return per_request * len(prompt_chars), basis


def expected_completion(past: list[PastAnswer], max_tokens: int) -> tuple[float, str]:
    """Expected completion tokens of one request with ``max_tokens``, and what that rests on."""
    same = [p.completion_tokens for p in past if p.max_tokens == max_tokens]
    if len(same) >= MIN_HISTORY:
        return sum(same) / len(same), f"mean of {len(same)} stored answers with max_tokens={max_tokens}"
    other = [p.completion_tokens / p.max_tokens for p in past if p.max_tokens > 0]
    if len(other) >= MIN_HISTORY:
        share = sum(other) / len(other)
        return share * max_tokens, f"{share:.0%} of max_tokens={max_tokens}, as in {len(other)} stored answers"
    return float(max_tokens), f"max_tokens={max_tokens} (an upper bound: fewer than {MIN_HISTORY} stored answers)"


def stand_in_length(engine: Engine, store: Store) -> Callable[[str, Request], int]:
    """The length (characters) of a dry run's stand-in reply to a request: the completion the model
    is expected to write at the request's max_tokens (`expected_completion`: its stored answers, else
    max_tokens, an upper bound) at `CHARS_PER_TOKEN`. Prompts built on replies are then counted at
    about their real size: a persona's questionnaire carries the whole conversation before it."""
    cache: dict[tuple[str, int], int] = {}

    def length(model: str, request: Request) -> int:
        limit = request.params.max_tokens
        if (model, limit) not in cache:
            past = store.history(engine._models[model].backend.fingerprint)
            cache[model, limit] = round(expected_completion(past, limit)[0] * CHARS_PER_TOKEN)
        return cache[model, limit]

    return length


def expected_seconds(past: list[PastAnswer], requests: int, tokens: float, concurrency: int) -> float | None:
    """Wall time of ``requests`` carrying ``tokens`` (prompt + completion) at the model's stored rate:
    its seconds per token where the store has token counts, else its seconds per request."""
    if len(past) < MIN_HISTORY:
        return None
    latency = sum(p.latency_s for p in past)
    past_tokens = sum(p.prompt_tokens + p.completion_tokens for p in past)
    if past_tokens > 0 and tokens > 0:
        return tokens * latency / past_tokens / concurrency
    return requests * latency / len(past) / concurrency


def estimate(engine: Engine, store: Store, model: str,
             counted_prompt_tokens: CountedTokens | int | None = None) -> ModelEstimate:
    """The estimate for one model after a dry run; ``counted_prompt_tokens`` from `count_prompt_tokens`."""
    m = engine._models[model]
    plan = engine.planned.get(model) or Plan()
    past = store.history(m.backend.fingerprint)
    chars = plan.chars  # each planned prompt's length
    if isinstance(counted_prompt_tokens, int):
        counted_prompt_tokens = CountedTokens(counted_prompt_tokens, len(plan), len(plan))
    per_char, per_message = chars_to_tokens(past)
    each: Iterable[float]
    if counted_prompt_tokens is not None and len(counted_prompt_tokens.per_prompt) == len(plan):
        each = counted_prompt_tokens.per_prompt
    else:
        each = (c * per_char + per_message * n for c, n in zip(chars, plan.messages))
    window = context_window(m.backend)
    holds_reply = bool(getattr(m.backend, "window_holds_reply", False))
    prompt, too_long = 0.0, 0
    for tokens, limit in zip(each, plan.max_tokens):  # one pass: no per-request list at the size of the plan
        prompt += tokens
        too_long += over_window(tokens, window, limit if holds_reply else 0)
    if counted_prompt_tokens is not None:
        prompt, prompt_basis = float(counted_prompt_tokens.tokens), counted_prompt_tokens.basis
    else:
        prompt_basis = f"prompt tokens at {per_char:.3f} per character"
    completion, bases = 0.0, []
    chars_by_limit: dict[int, list[int]] = {}
    for c, limit in zip(chars, plan.max_tokens):
        chars_by_limit.setdefault(limit, []).append(c)
    for max_tokens, lengths in chars_by_limit.items():
        total, basis = expected_completions(past, max_tokens, lengths)
        completion += total
        bases.append(basis)
    seconds = expected_seconds(past, len(plan), prompt + completion, max(1, m.limit.maximum))
    usage = m.usage
    cost = (prompt * usage.price_in_per_mtok + completion * usage.price_out_per_mtok) * usage.price_factor / 1e6
    duplicates = usage.requests - usage.cached - len(plan)
    basis = "; ".join([*bases, prompt_basis]) if bases else "nothing to send"
    return ModelEstimate(model, usage.requests, usage.cached, duplicates, len(plan), round(prompt),
                         round(completion), seconds, round(cost, 6), basis, window, too_long)
