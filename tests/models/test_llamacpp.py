"""The llama.cpp backends on the embedded model: in-process, and over real HTTP via the openai backend."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message

pytestmark = pytest.mark.slow
ASK = (Message("user", "Name three colours."),)


async def _use(spec: str, fn):
    backend = load_backend(parse_model_spec(spec))
    await backend.start()
    try:
        return backend, await fn(backend)
    finally:
        await backend.close()


def _check_logprobs(c, top: int) -> None:
    assert c.logprobs and len(c.logprobs) == c.completion_tokens
    for t in c.logprobs:
        assert t.logprob <= 0 and 1 <= len(t.top) <= top
        values = [v for _, v in t.top]
        assert values == sorted(values, reverse=True)
    assert "".join(t.token for t in c.logprobs) == c.text


@pytest.mark.parametrize("where", ["in-process", "http"])
def test_generation_parameters(where, request):
    spec = "llamacpp?n_parallel=2" if where == "in-process" else \
        f"openai:smollm?base_url={request.getfixturevalue('llama_http')}"

    async def go(b):
        greedy = await b.chat(ASK, GenParams(max_tokens=12, logprobs=True, top_logprobs=3))
        again = await b.chat(ASK, GenParams(max_tokens=12))
        short = await b.chat(ASK, GenParams(max_tokens=3))
        seeded = [await b.chat(ASK, GenParams(temperature=1.2, max_tokens=12, seed=s)) for s in (1, 1, 2, 3)]
        word = greedy.text.split()[1]
        stopped = await b.chat(ASK, GenParams(max_tokens=12, stop=(word,)))
        return greedy, again, short, seeded, word, stopped

    backend, (greedy, again, short, seeded, word, stopped) = asyncio.run(_use(spec, go))
    assert greedy.text == again.text and greedy.prompt_tokens > 0
    _check_logprobs(greedy, 3)
    assert short.completion_tokens == 3 and short.finish_reason == "length"
    assert seeded[0].text == seeded[1].text  # same seed, same sample
    assert len({s.text for s in seeded}) >= 2  # other seeds differ
    assert word not in stopped.text and greedy.text.startswith(stopped.text.rstrip())
    kind = "llamacpp:SmolLM2-135M-Instruct.Q4_1.gguf:" if where == "in-process" else "openai:http://127.0.0.1"
    assert backend.fingerprint.startswith(kind)


def test_counted_prompt_tokens_are_what_a_real_request_reports():
    """``--estimate`` counts prompt tokens with the model's own template and tokenizer; a real request
    (a second one with the same opening, so llama.cpp reuses its prompt cache) reports the same."""
    first = (Message("system", "Answer briefly."), Message("user", "What is 12 plus 30? Options: (A) 42 (B) 41"))
    second = (first[0], Message("user", "What is 12 plus 30? Options: (A) 41 (B) 42, digits 0123456789"))

    async def go(b):
        counted = [await b.count_prompt_tokens(m) for m in (first, second)]
        asked = [await b.chat(m, GenParams(max_tokens=1)) for m in (first, second)]
        return counted, [c.prompt_tokens for c in asked]

    _, (counted, reported) = asyncio.run(_use("llamacpp?n_parallel=1", go))
    assert counted == reported and counted[1] > counted[0] > 0
