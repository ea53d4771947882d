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


COUNT = (Message("user", "Write the numbers 1, 2, 3, and so on up to 10000, separated by commas, with nothing else."),)


def _slot(address: str) -> dict:
    import json
    import urllib.request

    with urllib.request.urlopen(address + "/slots", timeout=30) as response:
        return json.load(response)[0]


def test_a_cancelled_request_stops_its_decode():
    """Ctrl-C cancels the request's task: llama.cpp stops decoding at the next token (its slot is
    free for the next request) instead of running to max_tokens. What is asserted is the number of
    tokens decoded, not a time; the latency is measured in benchmarks/stop.py."""
    import time

    async def go(b):
        await b.chat(ASK, GenParams(max_tokens=2))  # loaded: what follows measures a decode, not the load
        address = b._server.listening_address
        task = asyncio.create_task(b.chat(COUNT, GenParams(max_tokens=2000)))
        deadline = time.monotonic() + 300  # a safety net only
        while not _slot(address)["next_token"][0]["n_decoded"] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        decoded = 0  # the most tokens seen decoded until the slot is free (it forgets them then)
        while (slot := _slot(address))["is_processing"] and time.monotonic() < deadline:
            decoded = max(decoded, slot["next_token"][0]["n_decoded"])
            await asyncio.sleep(0.02)
        after = await b.chat(ASK, GenParams(max_tokens=4))
        return decoded, after

    _, (decoded, after) = asyncio.run(_use("llamacpp?n_threads=1", go))
    assert decoded < 500  # uncancelled, greedy counting runs to the 2000-token limit (measured)
    assert after.completion_tokens == 4  # the slot serves the next request


def test_streamed_and_whole_replies_are_the_same():
    """The backend streams (to be cancellable); joined, the stream is the reply a whole request gets:
    text, finish reason and token counts, greedy and seeded, with a stop string and at the length limit."""
    from robusteval.models.chat_format import chat_body, parse_chat_completion

    cases = [GenParams(max_tokens=24), GenParams(max_tokens=5), GenParams(max_tokens=24, stop=(",",)),
             GenParams(temperature=0.9, seed=4, max_tokens=16)]

    async def go(b):
        streamed = [await b.chat(ASK, p) for p in cases]
        whole = [parse_chat_completion(b._server.handle_chat_completions(chat_body(ASK, p))) for p in cases]
        return streamed, whole

    _, (streamed, whole) = asyncio.run(_use("llamacpp?n_threads=1", go))
    assert streamed == whole
    assert {c.finish_reason for c in streamed} == {"stop", "length"}
