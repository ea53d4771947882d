"""`--estimate` against what a real run then does, on the deterministic stub."""

import asyncio

import pytest

from robusteval.engine import Engine, Store
from robusteval.engine.estimate import MIN_FIT, estimate, expected_completion, expected_completions, expected_seconds
from robusteval.engine.store import PastAnswer
from robusteval.models import load_backend, parse_model_spec
from robusteval.probes.design import Design
from robusteval.suites import mcq
from robusteval.testing.openai_stub import StubConfig, StubServer
from robusteval.types import GenParams, Item

PARAMS = GenParams(max_tokens=16)


def _items(start, n):
    return [Item(f"q{i}", f"What is {i} plus {i + 1}?", (str(2 * i + 1), str(2 * i), str(i), str(i + 7)), 0)
            for i in range(start, start + n)]


async def _ask(ctx, model, items):
    """mcq's order and format variants of ``items``, asked through ``ctx`` (samples dropped)."""
    await mcq.ask_each(ctx, model, items, ("order", "format"), PARAMS, 1, Design(), (), lambda sample: None)


async def _run(url, store_path, items, *, dry_run, context):
    store = Store(store_path)
    engine = Engine(store, dry_run=dry_run)
    await engine.add_model("stub", load_backend(parse_model_spec(f"openai:stub?base_url={url}&max_concurrency=8")))
    try:
        await _ask(context(engine, ["stub"]), "stub", items)
        return (estimate(engine, store, "stub") if dry_run else engine.usage["stub"]), engine
    finally:
        await engine.close()
        store.close()


def test_estimate_counts_exactly_and_tokens_closely(tmp_path, suite_context):
    path = tmp_path / "s.sqlite"
    with StubServer(StubConfig(latency_s=0.001)) as stub:
        # history for the model
        asyncio.run(_run(stub.base_url, path, _items(0, 6), dry_run=False, context=suite_context))
        cached_part = _items(3, 3)  # half of the next run is already in the store
        new_part = _items(100, 3)
        est, _ = asyncio.run(_run(stub.base_url, path, cached_part + new_part, dry_run=True, context=suite_context))
        assert stub.counters()["total"] == 6 * 9  # the dry run sent nothing
        actual, _ = asyncio.run(_run(stub.base_url, path, cached_part + new_part, dry_run=False, context=suite_context))
    # 10 variants per question, 9 distinct (gold@A is the A. format variant)
    assert est.requests == actual.requests == 60
    assert est.cached == 30 and est.duplicates == 3  # gold@A = the A. format variant, once per new question
    assert est.cached + est.duplicates == actual.cached
    assert est.to_send == actual.new == 27
    assert est.completion_tokens == pytest.approx(actual.completion_tokens, rel=0.15)
    assert est.prompt_tokens == pytest.approx(actual.prompt_tokens, rel=0.15)
    assert est.seconds is not None and "stored answers" in est.basis


def test_without_history_completions_are_an_upper_bound(tmp_path, suite_context):
    with StubServer(StubConfig(latency_s=0.001)) as stub:
        est, _ = asyncio.run(_run(stub.base_url, tmp_path / "s.sqlite", _items(0, 2), dry_run=True,
                                  context=suite_context))
    assert est.to_send == 18 and est.cached == 0
    assert est.completion_tokens == 18 * PARAMS.max_tokens and "upper bound" in est.basis
    assert est.seconds is None


def _past(chars, prompt, max_tokens=64, completion=10):
    return PastAnswer(chars, max_tokens, prompt, completion, 0.1)


def test_completions_from_the_same_max_tokens_else_the_share_of_max_tokens():
    past = [_past(100, 40, max_tokens=64, completion=c) for c in (16, 32, 64, 64, 24)]
    assert expected_completion(past, 64)[0] == pytest.approx(40)
    per_request, basis = expected_completion(past, 128)  # no answer with 128 stored: 62.5% of the limit
    assert per_request == pytest.approx(128 * 0.625) and "of max_tokens=128" in basis
    assert expected_completion(past[:2], 64) == (64, "max_tokens=64 (an upper bound: fewer than 5 stored answers)")


def test_completions_follow_prompt_length_once_enough_answers_are_stored():
    # answers 10 tokens + 1 per 10 prompt characters: short prompts are charged less than the mean
    past = [_past(chars, 0, max_tokens=64, completion=10 + chars // 10) for chars in range(100, 100 + 10 * MIN_FIT, 10)]
    mean = sum(p.completion_tokens for p in past) / len(past)
    total, basis = expected_completions(past, 64, [100, 200])
    assert total == pytest.approx(20 + 30) and total < 2 * mean
    assert "fitted on prompt length over 30 stored answers" in basis
    assert expected_completions(past, 64, [10_000])[0] == 64  # never above max_tokens
    fewer, basis = expected_completions(past[:MIN_FIT - 1], 64, [100, 200])
    assert fewer == pytest.approx(2 * sum(p.completion_tokens for p in past[:MIN_FIT - 1]) / (MIN_FIT - 1))
    assert basis.startswith("mean of 29")
    same_length = [_past(100, 0, completion=c) for c in [10, 20] * MIN_FIT]  # no spread in prompt length
    assert expected_completions(same_length, 64, [100, 300])[0] == pytest.approx(30)


def test_time_follows_tokens_at_the_stored_rate_else_requests():
    # 5 answers of 100 tokens (90 prompt + 10 completion) that took 2 s each: 0.02 s per token
    past = [PastAnswer(400, 64, 90, 10, 2.0) for _ in range(5)]
    assert expected_seconds(past, 10, 500, concurrency=1) == pytest.approx(10)  # short prompts: less time
    assert expected_seconds(past, 10, 500, concurrency=4) == pytest.approx(2.5)
    no_tokens = [PastAnswer(400, 64, 0, 0, 2.0) for _ in range(5)]  # a server that reports no usage
    assert expected_seconds(no_tokens, 10, 500, concurrency=2) == pytest.approx(10)
    assert expected_seconds(past[:4], 10, 500, concurrency=1) is None


class CountingBackend:
    """A backend that only counts prompt tokens (a unit test of the estimate's sampling): 5 template
    tokens plus one per 4 characters, and how many prompts it was asked to count."""

    fingerprint = "counting-fake"
    max_concurrency = 4

    def __init__(self):
        self.counted = 0

    async def start(self):
        pass

    async def close(self):
        pass

    async def chat(self, messages, params):
        raise AssertionError("a dry run sends nothing")

    async def count_prompt_tokens(self, messages) -> int:
        self.counted += 1
        return 5 + sum(len(m.content) for m in messages) // 4


async def _planned(tmp_path, n_items, context):
    from robusteval.engine.estimate import count_prompt_tokens

    store = Store(tmp_path / "s.sqlite")
    engine = Engine(store, dry_run=True)
    backend = CountingBackend()
    await engine.add_model("fake", backend)
    try:
        await _ask(context(engine, ["fake"]), "fake", _items(1, n_items))
        planned = list(engine.planned["fake"].requests.values())
        exact = sum(5 + sum(len(m.content) for m in r.messages) // 4 for r in planned)
        counted = await count_prompt_tokens(engine, "fake", exact=100)
        return counted, exact, backend.counted, len(planned), estimate(engine, store, "fake", counted)
    finally:
        await engine.close()
        store.close()


def test_prompt_tokens_are_counted_on_a_sample_above_the_limit(tmp_path, suite_context):
    """About 900 planned prompts, 100 counted: the total extrapolated by characters, and said so."""
    counted, exact, calls, planned, est = asyncio.run(_planned(tmp_path, 100, suite_context))
    assert planned > 850 and calls == 100
    assert (counted.counted, counted.planned) == (100, planned)
    assert counted.tokens == pytest.approx(exact, rel=0.01)
    assert est.prompt_tokens == counted.tokens
    assert f"seeded sample of 100 of the {planned} prompts, extrapolated by characters" in est.basis


def test_prompt_tokens_are_all_counted_up_to_the_limit(tmp_path, suite_context):
    counted, exact, calls, planned, est = asyncio.run(_planned(tmp_path, 10, suite_context))
    assert planned == calls <= 100 and counted.tokens == exact == est.prompt_tokens
    assert "counted by the model's tokenizer" in est.basis and "sample" not in est.basis


def test_extrapolation_is_a_line_over_characters():
    from robusteval.engine.estimate import extrapolate

    assert extrapolate([15, 25], [40, 80], [40, 80, 120]) == pytest.approx(15 + 25 + 35)
    assert extrapolate([7, 7], [10, 10], [10, 10, 10, 10]) == pytest.approx(28)  # no spread: the mean
