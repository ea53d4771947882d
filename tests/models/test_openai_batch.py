"""The Batch API backend (`models.openai_batch`) against the stub's batch mode: a suite's requests go
out as one batch, answers map back by custom_id, errors in lines are retried in a later batch, a
batch left pending by a process that exited is picked up (not submitted again), and batches cost
half, in the usage and in ``--estimate``."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

import pytest

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.engine.estimate import estimate
from robusteval.errors import BackendError, UserError
from robusteval.models import load_backend, parse_model_spec
from robusteval.models.openai_batch import BatchLedger, OpenAIBatchBackend, output_body
from robusteval.testing.openai_stub import StubConfig, StubServer, expected_answer
from robusteval.types import GenParams, Message

PARAMS = GenParams(max_tokens=16)
FAST = "&batch_window=0.05&batch_poll=0.02"
QUICK_RETRY = RetryPolicy(backoff_base_s=0.01, backoff_cap_s=0.05)


def _questions(n: int) -> list[tuple[Message, ...]]:
    return [(Message("user", f"Batch question {i}: which option?"),) for i in range(n)]


def _spec(url: str) -> str:
    return f"openai:stub-model?base_url={url}&batch=1{FAST}"


async def _ask(store_path, spec: str, questions, params=PARAMS, samples=(0,), **engine_args):
    engine = Engine(Store(store_path), retry=QUICK_RETRY, **engine_args)
    await engine.add_model("m", load_backend(parse_model_spec(spec)), price_in_per_mtok=2.0, price_out_per_mtok=8.0)
    try:
        responses = await asyncio.gather(*(engine.chat("m", q, params, sample=s) for q in questions for s in samples))
    finally:
        await engine.close()
        engine.store.close()
    return responses, engine.usage["m"]


def _ask_stub(tmp_path, config: StubConfig, questions):
    """The answers and usage of ``questions`` asked through a stub of ``config``, and its counters."""
    async def main():
        async with StubServer(config) as stub:
            responses, usage = await _ask(tmp_path / "s.sqlite", _spec(stub.base_url), questions)
            return responses, usage, stub.counters()

    return asyncio.run(main())


def test_a_suites_requests_go_out_as_one_batch_at_half_the_price(tmp_path):
    questions = _questions(40)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_polls=3), questions)
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (counters["batches"], counters["uploads"]) == (1, 1)
    assert sorted(Counter(counters["requests"]).values()) == [1] * len(questions)  # each answered once
    assert (usage.new, usage.failed, usage.retries) == (40, 0, 0)
    listed = (usage.prompt_tokens * 2.0 + usage.completion_tokens * 8.0) / 1e6
    assert usage.price_factor == 0.5 and usage.cost == pytest.approx(listed / 2) and usage.cost > 0
    assert usage.as_dict()["price_factor"] == 0.5


def test_batch_answers_share_the_cache_with_the_plain_backend(tmp_path):
    questions = _questions(5)

    async def main():
        async with StubServer() as stub:
            await _ask(tmp_path / "s.sqlite", _spec(stub.base_url), questions)
            again, _ = await _ask(tmp_path / "s.sqlite", stub.model("stub-model"), questions)
            return again, stub.counters()

    again, counters = asyncio.run(main())
    assert all(r.cached for r in again)
    assert counters["total"] == 5  # the five batch lines; the plain backend asked nothing


def test_distinct_samples_are_distinct_batch_lines_each_with_its_own_seed(tmp_path):
    params = GenParams(max_tokens=16, temperature=0.7, seed=None)  # draw k goes out with seed k (draw 0: none)

    async def main():
        async with StubServer() as stub:
            responses, usage = await _ask(tmp_path / "s.sqlite", _spec(stub.base_url), _questions(2), params,
                                          samples=(0, 1, 2))
            return responses, usage, stub.counters()

    responses, usage, counters = asyncio.run(main())
    assert all(r.ok for r in responses) and usage.new == 6
    assert sorted(counters["requests"].values()) == [1] * 6  # six lines, no two bodies alike (N2)
    assert counters["batches"] == 1


def test_lines_that_fail_are_asked_again_in_a_later_batch(tmp_path):
    questions = _questions(30)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_p_error=0.3, seed=5), questions)
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    errors = counters["outcomes"]["500"]
    assert errors > 0 and usage.retries == errors and usage.failed == 0
    assert counters["batches"] >= 2 and counters["outcomes"]["ok"] == len(questions)


@pytest.mark.parametrize("final, batches, failed_after", [
    ("failed", 1, 0),  # the server refused the input: the same file would be refused again
    ("expired", 1 + QUICK_RETRY.max_retries, QUICK_RETRY.max_retries),  # asked again in later batches
])
def test_a_batch_that_ends_without_answers_fails_its_requests(tmp_path, final, batches, failed_after):
    questions = _questions(4)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_final=final), questions)
    assert not any(r.ok for r in responses) and usage.failed == 4
    assert all(f"the batch {final}" in r.error for r in responses)
    assert counters["batches"] == batches and usage.retries == 4 * failed_after
    if final == "failed":
        assert all("injected batch failure" in r.error for r in responses)


def test_a_batch_pending_when_the_process_exits_is_picked_up_not_submitted_again(tmp_path):
    questions = _questions(25)
    store_path = tmp_path / "responses.sqlite"
    ledger_path = tmp_path / "responses.batches.sqlite"

    async def first_process(stub: StubServer) -> None:
        """Asks, and is interrupted (Ctrl-C) once its batch is created and recorded, long before the batch
        completes."""
        task = asyncio.ensure_future(_ask(store_path, _spec(stub.base_url), questions))
        while "batch_1" not in (_pending(ledger_path) if ledger_path.exists() else {}):  # created, not only marked
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async def main():
        async with StubServer(StubConfig(batch_delay_s=2.0)) as stub:
            await first_process(stub)
            pending = _pending(ledger_path)
            responses, usage = await _ask(store_path, _spec(stub.base_url), questions)
            return pending, responses, usage, stub.counters()

    pending, responses, usage, counters = asyncio.run(main())
    assert list(pending.values()) == [len(questions)]  # the batch id was stored with all its requests
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (counters["batches"], counters["uploads"]) == (1, 1)  # the rerun submitted nothing new
    assert sorted(counters["requests"].values()) == [1] * len(questions)
    assert usage.new == len(questions)
    assert _pending(ledger_path) == {}  # answered and stored: nothing left to resume


def _pending(path) -> dict[str, int]:
    ledger = BatchLedger(path)
    try:
        return ledger.pending()
    finally:
        ledger.close()


def test_estimate_charges_half_the_listed_price(tmp_path):
    questions = _questions(10)

    async def planned_cost(spec: str) -> float:
        store = Store(tmp_path / "s.sqlite")
        engine = Engine(store, dry_run=True)
        await engine.add_model("m", load_backend(parse_model_spec(spec)), price_in_per_mtok=2.0,
                               price_out_per_mtok=8.0)
        try:
            await asyncio.gather(*(engine.chat("m", q, PARAMS) for q in questions))
            return estimate(engine, store, "m").cost
        finally:
            await engine.close()
            store.close()

    async def main():
        async with StubServer() as stub:
            return (await planned_cost(stub.model("stub-model")),
                    await planned_cost(_spec(stub.base_url)), stub.counters())

    plain, batch, counters = asyncio.run(main())
    assert plain > 0 and batch == pytest.approx(plain / 2, rel=1e-3)
    assert counters["total"] == 0 and counters["batches"] == 0  # an estimate asks nothing


@pytest.mark.parametrize("text, message", [
    ("openai:m?base_url=http://a:1/v1&batch=maybe", "batch='maybe' is not a yes or no"),
    ("openai:m?base_url=http://a:1/v1,http://b:1/v1&batch=1", "give one base_url"),
])
def test_bad_batch_specs_are_one_clear_error(text, message):
    with pytest.raises(UserError, match=message):
        load_backend(parse_model_spec(text))


def test_batch_mode_is_a_deferred_backend():
    backend = load_backend(parse_model_spec("openai:m?base_url=http://a:1/v1&batch=yes&batch_window=0.5"))
    assert isinstance(backend, OpenAIBatchBackend)
    assert backend.deferred and backend.price_factor == 0.5 and backend.window_s == 0.5
    assert backend.max_concurrency == 50_000


def test_a_custom_id_answered_twice_fails_its_request_and_no_line_wins(tmp_path):
    questions = _questions(5)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_output="dup"), questions)
    assert [r.ok for r in responses] == [False] * 5 and usage.failed == 5
    assert all("gave 2 answers for this request" in r.error for r in responses)
    assert (counters["batches"], usage.retries) == (1, 0)  # reported once, not paid again
    assert _pending(tmp_path / "s.batches.sqlite") == {}


def test_a_status_code_written_as_text_is_read_as_that_status(tmp_path):
    questions = _questions(6)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_output="status-string"), questions)
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (counters["batches"], counters["uploads"], usage.new, usage.retries) == (1, 1, 6, 0)


@pytest.mark.parametrize("line, expected", [
    ({"response": {"status_code": "200", "body": {"ok": 1}}}, {"ok": 1}),
    ({"response": {"status_code": " 201 ", "body": {"ok": 1}}}, {"ok": 1}),
    ({"response": {"status_code": "OK", "body": {"ok": 1}}}, "status_code 'OK' is not an HTTP status"),
    ({"response": {"status_code": 2.0, "body": {"ok": 1}}}, "status_code 2.0 is not an HTTP status"),
    ({"response": {"status_code": "500", "body": {"error": {"message": "down"}}}}, "HTTP 500: down"),
])
def test_output_body_reads_a_status_written_as_text(line, expected):
    if isinstance(expected, dict):
        assert output_body(line) == expected
    else:
        with pytest.raises(BackendError, match=expected) as caught:
            output_body(line)
        assert caught.value.retryable == ("500" in expected)  # a nonsense status is not asked again


def test_a_batch_created_behind_a_500_is_found_again_not_created_twice(tmp_path):
    questions = _questions(10)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_create_500=1), questions)
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (counters["batches"], counters["uploads"]) == (1, 1)  # the batch behind the 500 was used
    assert sorted(counters["requests"].values()) == [1] * len(questions)
    assert (usage.new, usage.failed, usage.retries) == (10, 0, 10)
    assert _pending(tmp_path / "s.batches.sqlite") == {}


def test_behind_a_500_a_server_that_cannot_list_batches_is_not_paid_twice(tmp_path):
    questions = _questions(4)

    responses, usage, counters = _ask_stub(tmp_path, StubConfig(batch_create_500=1, batch_list=False), questions)
    assert usage.failed == 4 and (counters["batches"], counters["uploads"]) == (1, 1)
    assert all("not submitted again until it is known" in r.error and "HTTP 405" in r.error for r in responses)
    (kept,) = _pending(tmp_path / "s.batches.sqlite").items()  # under its mark, for a later run to find
    assert kept[0].startswith("mark:") and kept[1] == 4


def test_a_batch_the_server_no_longer_knows_is_dropped_and_its_requests_asked_again(tmp_path, caplog):
    questions = _questions(8)
    store_path = tmp_path / "responses.sqlite"
    ledger_path = tmp_path / "responses.batches.sqlite"

    async def main():
        async with StubServer(StubConfig(batch_delay_s=3600)) as stub:
            first = asyncio.ensure_future(_ask(store_path, _spec(stub.base_url), questions))
            while "batch_1" not in (_pending(ledger_path) if ledger_path.exists() else {}):
                await asyncio.sleep(0.01)
            first.cancel()  # the process exits with its batch pending
            with pytest.raises(asyncio.CancelledError):
                await first
            stub.forget_batches()  # and the server loses it
            stub.config.batch_delay_s = 0
            with caplog.at_level(logging.WARNING, logger="robusteval.models.openai_batch"):
                responses, usage = await _ask(store_path, _spec(stub.base_url), questions)
            return responses, usage, stub.counters()

    responses, usage, counters = asyncio.run(main())
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (usage.new, usage.failed, usage.retries) == (8, 0, 8)
    assert counters["batches"] == 2  # asked again once, in one new batch
    warned = [r.getMessage() for r in caplog.records if "no longer knows" in r.getMessage()]
    assert warned == ["batch batch_1: the server no longer knows it (HTTP 404); dropped from the batch ledger, "
                      "its 8 requests are asked again"]
    assert _pending(ledger_path) == {}
