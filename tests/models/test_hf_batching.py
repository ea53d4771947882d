"""The hf backend's dynamic batching (issue 43) on the tiny random Llama of tests/conftest.py (built from a
config there, float32, no download): requests sent together are answered by one call to the model, and
each reply is the one the request gets alone."""

from __future__ import annotations

import asyncio
import random

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from robusteval.errors import UserError  # noqa: E402
from robusteval.models import load_backend, parse_model_spec  # noqa: E402
from robusteval.types import GenParams, Message  # noqa: E402

WORDS = "the a cat dog sat on mat ran far away red blue green answer is".split()


def _prompts(n: int, seed: int = 3) -> list[tuple[Message, ...]]:
    """Prompts of different lengths (1 to 30 words), so a batch is left-padded."""
    rng = random.Random(seed)
    return [(Message("user", " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30)))),) for _ in range(n)]


def _run(path, options: str, fn):
    """``fn(backend)`` on a started hf backend whose ``generate`` records each call's batch size."""
    backend = load_backend(parse_model_spec(f"hf:{path}{options}"))
    sizes: list[int] = []

    async def go():
        await backend.start()
        generate = backend._model.generate
        backend._model.generate = lambda **kw: sizes.append(int(kw["input_ids"].shape[0])) or generate(**kw)
        try:
            return await fn(backend)
        finally:
            await backend.close()

    return asyncio.run(go()), sizes


def _one_by_one(path, requests):
    async def each(b):
        return [await b.chat(m, p) for m, p in requests]

    return _run(path, "?batch_size=1", each)


def _together(path, requests, options=""):
    async def gathered(b):
        return await asyncio.gather(*(b.chat(m, p) for m, p in requests))

    return _run(path, options, gathered)


def test_greedy_replies_in_one_batch_equal_the_replies_alone(tiny_hf_model):
    """Per-request max tokens, stop strings, EOS and logprobs are kept in a batch: 24 requests of
    different lengths, max tokens (1 to 12) and stops, in one generate call, each equal to the same
    request asked alone (float32: padding changes no greedy choice)."""
    prompts = _prompts(24)
    first, _ = _one_by_one(tiny_hf_model, [(m, GenParams(max_tokens=12)) for m in prompts])
    requests = []
    for k, (m, full) in enumerate(zip(prompts, first, strict=True)):
        words = full.text.split()
        stop = (words[len(words) // 2],) if k % 3 == 0 and len(words) > 1 else ()  # cuts mid-reply
        requests.append((m, GenParams(max_tokens=1 + k % 12, stop=stop, logprobs=k % 2 == 0, top_logprobs=k % 4)))

    alone, alone_calls = _one_by_one(tiny_hf_model, requests)
    batched, calls = _together(tiny_hf_model, requests)

    assert alone_calls == [1] * 24 and calls == [24]
    finishes = {a.finish_reason for a in alone}
    assert finishes == {"stop", "length"}  # some replies end on EOS or a stop string, some on max tokens
    assert any(p.stop and a.finish_reason == "stop" for (_, p), a in zip(requests, alone, strict=True))
    for a, b, (_, p) in zip(alone, batched, requests, strict=True):
        assert (b.text, b.prompt_tokens, b.completion_tokens, b.finish_reason) == \
               (a.text, a.prompt_tokens, a.completion_tokens, a.finish_reason)
        assert b.completion_tokens <= p.max_tokens
        if p.logprobs:
            assert len(b.logprobs) == len(a.logprobs) == a.completion_tokens
            for x, y in zip(a.logprobs, b.logprobs, strict=True):
                assert x.token == y.token and x.logprob == pytest.approx(y.logprob, abs=1e-4)
                assert [t for t, _ in x.top] == [t for t, _ in y.top]
        else:
            assert b.logprobs is None


def test_a_batch_takes_at_most_batch_size_requests(tiny_hf_model):
    requests = [(m, GenParams(max_tokens=3)) for m in _prompts(10)]
    alone, _ = _one_by_one(tiny_hf_model, requests)
    batched, calls = _together(tiny_hf_model, requests, "?batch_size=4")
    assert calls == [4, 4, 2]
    assert [b.text for b in batched] == [a.text for a in alone]


def test_requests_arriving_while_the_model_is_busy_form_the_next_batch(tiny_hf_model):
    """One request starts alone; the nine sent while it runs wait, and go in one call after it."""
    requests = [(m, GenParams(max_tokens=4)) for m in _prompts(10)]

    async def staggered(b):
        first = asyncio.create_task(b.chat(*requests[0]))
        for _ in range(3):  # loop turns, not time: the first request is taken into a batch of its own
            await asyncio.sleep(0)
        rest = await asyncio.gather(*(b.chat(m, p) for m, p in requests[1:]))
        return [await first, *rest]

    alone, _ = _one_by_one(tiny_hf_model, requests)
    batched, calls = _run(tiny_hf_model, "", staggered)
    assert calls == [1, 9]
    assert [b.text for b in batched] == [a.text for a in alone]


def test_a_sampled_request_runs_alone_with_its_own_seed(tiny_hf_model):
    """Sampled requests never share a call, so a draw depends on its request and seed only, not on
    what else was in flight; the greedy ones beside them still form one batch."""
    prompts = _prompts(6)
    sampled = [(m, GenParams(temperature=1.0, max_tokens=8, seed=s)) for s, m in enumerate(prompts[:3])]
    greedy = [(m, GenParams(max_tokens=8)) for m in prompts[3:]]
    alone, _ = _one_by_one(tiny_hf_model, sampled + greedy)
    batched, calls = _together(tiny_hf_model, sampled + greedy)
    assert sorted(calls) == [1, 1, 1, 3]
    assert [b.text for b in batched] == [a.text for a in alone]


def test_loglikelihood_requests_share_one_forward(tiny_hf_model):
    prompts = _prompts(8)
    asks = [(m, "the", f" {w} {w}") for m, w in zip(prompts, WORDS, strict=False)]
    forwards: list[int] = []

    async def one_by_one(b):
        return [await b.loglikelihood(*a) for a in asks]

    async def together(b):
        forward = b._model.forward
        b._model.forward = lambda *args, **kw: forwards.append(int(kw["input_ids"].shape[0])) or forward(*args, **kw)
        return await asyncio.gather(*(b.loglikelihood(*a) for a in asks))

    alone, _ = _run(tiny_hf_model, "?batch_size=1", one_by_one)
    batched, _ = _run(tiny_hf_model, "", together)
    assert forwards == [8]
    for a, b in zip(alone, batched, strict=True):
        assert b.loglik == pytest.approx(a.loglik, abs=1e-4) and b.greedy == a.greedy


def test_batch_size_option():
    spec = parse_model_spec("hf:some/model?batch_size=8")
    backend = load_backend(spec)
    assert backend.batch_size == 8 and backend.max_concurrency == 8  # the engine keeps the batch full
    auto = load_backend(parse_model_spec("hf:some/model?batch_size=auto"))
    assert auto.batch_size is None and auto.max_concurrency == 64
    assert load_backend(parse_model_spec("hf:some/model?batch_size=8&max_concurrency=2")).max_concurrency == 2
    for bad, why in (("0", "out of range"), ("many", "is not an integer or auto")):
        with pytest.raises(UserError, match=f"batch_size={bad!r}|batch_size={bad}: out of range") as caught:
            parse_model_spec(f"hf:some/model?batch_size={bad}")
        assert why in str(caught.value)


def test_a_batch_that_runs_out_of_memory_is_answered_in_halves(tiny_hf_model):
    """Where the device runs out of memory, the batch's requests are answered in two halves (each
    halved again as needed), and later batches are capped at the half that fitted."""
    requests = [(m, GenParams(max_tokens=3)) for m in _prompts(10)]

    async def gathered(b):
        generate = b._model.generate

        def small_memory(**kw):
            if kw["input_ids"].shape[0] > 3:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
            return generate(**kw)

        b._model.generate = small_memory
        replies = await asyncio.gather(*(b.chat(m, p) for m, p in requests))
        return replies, b.batch_size

    alone, _ = _one_by_one(tiny_hf_model, requests)
    (batched, cap), calls = _run(tiny_hf_model, "", gathered)
    assert [b.text for b in batched] == [a.text for a in alone]
    assert calls == [2, 3, 2, 3] and cap == 2  # 10 and each 5 ran out of memory (not recorded: no reply)


@pytest.mark.parametrize(("options", "suffix"), [("", ""), ("?dtype=bfloat16&batch_size=1", ""),
                                                 ("?dtype=bfloat16", ":bfloat16-batch-auto"),
                                                 ("?dtype=float16&batch_size=8", ":float16-batch-8")])
def test_the_batch_size_enters_the_fingerprint_only_where_it_can_change_a_reply(tiny_hf_model, options, suffix):
    """In float32 a batched reply is the reply alone (above), so the cache keys stay a batch-1 run's;
    in half precision a near-tie may fall the other way in a batch (benchmarks/hf_throughput.py --dtype
    bfloat16: 15 to 25 of 297 replies differed from batch 1), so batched answers get keys of their own."""
    async def nothing(b):
        return b.fingerprint

    fingerprint, _ = _run(tiny_hf_model, options, nothing)
    plain, _ = _run(tiny_hf_model, "", nothing)
    assert fingerprint == plain + suffix and plain.count(":") == 2


def test_requests_waiting_when_the_batching_loop_is_cancelled_are_cancelled_not_left_hanging(tiny_hf_model):
    async def cancelled(b):
        asks = [asyncio.ensure_future(b.chat(m, GenParams(max_tokens=2))) for m in _prompts(3)]
        await asyncio.sleep(0)  # the requests are queued and the loop that drains the queue exists
        b._worker.cancel()
        return await asyncio.gather(*asks, return_exceptions=True)

    outcomes, calls = _run(tiny_hf_model, "", cancelled)
    assert calls == [] and all(isinstance(o, asyncio.CancelledError) for o in outcomes)
