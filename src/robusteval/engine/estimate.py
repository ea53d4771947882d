"""``--estimate``: what a run would ask, cost and take, before it asks anything.

The suite runs against a dry-run engine (nothing is sent; new requests are recorded and answered
as failed), so the count is exact for one-stage suites such as mcq: every request after in-run
dedupe and after the store's cache. Multi-stage suites (an oracle that rates answers, a
conversation's next turn) cannot know their later requests without the earlier answers; for them
the estimate covers the first stage and says so.

Tokens: prompts are counted in characters and converted with the tokens-per-character ratio the
store measured for this model (4 characters a token before any answer is stored); completions
are the mean the model produced for the same max_tokens, or max_tokens as an upper bound. Time:
requests × the model's mean stored latency ÷ its concurrency. Cost: tokens at --price-in/--price-out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from robusteval.engine.runner import Engine
from robusteval.engine.store import Store

CHARS_PER_TOKEN = 4.0
MESSAGE_OVERHEAD_TOKENS = 4  # chat-template tokens around each message


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

    def as_dict(self) -> dict:
        return asdict(self)


def estimate(engine: Engine, store: Store, model: str) -> ModelEstimate:
    m = engine._models[model]
    planned = list(engine.planned.get(model, {}).values())
    max_tokens = planned[0].params.max_tokens if planned else None
    history = store.history(m.backend.fingerprint, max_tokens=max_tokens)
    # The measured ratio already holds the chat template's tokens; without one, add them per message.
    per_char = history.prompt_tokens_per_char or 1 / CHARS_PER_TOKEN
    overhead = 0 if history.prompt_tokens_per_char else MESSAGE_OVERHEAD_TOKENS
    prompt = sum(sum(len(msg.content) for msg in r.messages) * per_char + overhead * len(r.messages)
                 for r in planned)
    if history.mean_completion_tokens is not None and history.responses >= 5:
        completion = history.mean_completion_tokens * len(planned)
        basis = f"means of {history.responses} stored answers of this model"
    else:
        completion = sum(r.params.max_tokens for r in planned)
        basis = "max_tokens per request (an upper bound: fewer than 5 stored answers of this model)"
    seconds = None
    if history.mean_latency_s is not None and history.responses >= 5:
        seconds = len(planned) * history.mean_latency_s / max(1, m.limit.maximum)
    usage = m.usage
    cost = (prompt * usage.price_in_per_mtok + completion * usage.price_out_per_mtok) / 1e6
    duplicates = usage.requests - usage.cached - len(planned)
    return ModelEstimate(model, usage.requests, usage.cached, duplicates, len(planned), round(prompt), round(completion),
                         seconds, round(cost, 6), basis)
