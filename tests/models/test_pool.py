"""A pool of replicas of one model (`models.pool`), against stub servers on loopback: the spec forms,
the fingerprint it shares with one replica, the refusal of replicas serving different models, the
spread of requests, a replica killed mid-run (every request answered once), and probing back."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.engine.store import cache_key
from robusteval.errors import UserError
from robusteval.models import load_backend, parse_model_spec
from robusteval.models.openai_compat import OpenAIBackend
from robusteval.models.pool import PoolBackend
from robusteval.testing.openai_stub import StubConfig, StubServer, expected_answer
from robusteval.types import GenParams, Message, Request

PARAMS = GenParams(max_tokens=16)


def _questions(n: int) -> list[tuple[Message, ...]]:
    return [(Message("user", f"Pool question {i}: which option?"),) for i in range(n)]


def test_comma_and_repeated_base_url_are_one_spec():
    commas = parse_model_spec("openai:m?base_url=http://a:1/v1,http://b:2/v1&max_concurrency=4")
    repeated = parse_model_spec("openai:m?base_url=http://a:1/v1&max_concurrency=4&base_url=http://b:2/v1")
    assert commas == repeated
    assert commas.options["base_url"] == "http://a:1/v1,http://b:2/v1"
    backend = load_backend(commas)
    assert isinstance(backend, PoolBackend)
    assert [r.url for r in backend.replicas] == ["http://a:1/v1", "http://b:2/v1"]
    assert backend.max_concurrency == 8  # max_concurrency is per replica
    assert isinstance(load_backend(parse_model_spec("openai:m?base_url=http://a:1/v1")), OpenAIBackend)


@pytest.mark.parametrize("text, message", [
    ("openai:m?timeout=1&timeout=2", "option 'timeout' is given twice"),
    ("openai:m?base_url=http://a:1/v1,,http://b:2/v1", "empty URL"),
    ("openai:m?base_url=http://a:1/v1,http://a:1/v1/", "the same server twice"),
    ("openai:m?base_url=http://a:1/v1,b:2/v1", "does not start with http://"),
])
def test_bad_pool_specs_are_one_clear_error(text, message):
    with pytest.raises(UserError, match=message):
        load_backend(parse_model_spec(text))


async def _started(spec_text: str):
    backend = load_backend(parse_model_spec(spec_text))
    await backend.start()
    return backend


def test_pool_fingerprint_and_cache_key_equal_one_replica():
    async def main():
        async with StubServer() as a, StubServer() as b:
            pool = await _started(f"openai:stub-model?base_url={a.base_url},{b.base_url}")
            single = await _started(f"openai:stub-model?base_url={a.base_url}")
            try:
                request = Request(_questions(1)[0], PARAMS)
                return (pool.fingerprint, single.fingerprint,
                        cache_key(pool.fingerprint, request), cache_key(single.fingerprint, request))
            finally:
                await pool.close()
                await single.close()

    pool_fp, single_fp, pool_key, single_key = asyncio.run(main())
    assert pool_fp == single_fp and pool_key == single_key


def test_answers_stored_by_one_replica_are_served_to_the_pool(tmp_path):
    questions = _questions(12)

    async def ask(spec_text: str):
        engine = Engine(Store(tmp_path / "s.sqlite"))
        await engine.add_model("m", load_backend(parse_model_spec(spec_text)))
        try:
            return await asyncio.gather(*(engine.chat("m", q, PARAMS) for q in questions))
        finally:
            await engine.close()
            engine.store.close()

    async def main():
        async with StubServer() as a, StubServer() as b:
            first = await ask(f"openai:stub-model?base_url={a.base_url}")
            second = await ask(f"openai:stub-model?base_url={a.base_url},{b.base_url}")
            return first, second, a.counters()["total"], b.counters()["total"]

    first, second, hits_a, hits_b = asyncio.run(main())
    assert not any(r.cached for r in first) and all(r.cached for r in second)
    assert [r.text for r in first] == [r.text for r in second]
    assert (hits_a, hits_b) == (len(questions), 0)


def test_replicas_serving_different_models_are_refused_naming_each_url():
    async def main():
        async with StubServer(StubConfig(model_id="model-x")) as a, StubServer(StubConfig(model_id="model-y")) as b:
            with pytest.raises(UserError) as caught:
                await _started(f"openai:served?base_url={a.base_url},{b.base_url}")
            return str(caught.value), a.base_url, b.base_url

    message, url_a, url_b = asyncio.run(main())
    assert f"{url_a} reports 'model-x'" in message and f"{url_b} reports 'model-y'" in message
    assert "do not serve the same model" in message


def test_an_unreachable_replica_at_start_is_one_clear_error():
    async def main():
        async with StubServer() as a:
            with pytest.raises(UserError, match=re.escape("cannot reach http://127.0.0.1:9/v1")):
                await _started(f"openai:stub-model?base_url={a.base_url},http://127.0.0.1:9/v1")

    asyncio.run(main())


@contextmanager
def _stub_processes(n: int, *args: str):
    """n stub servers, each its own process (so one can be SIGKILLed); yields [(process, base_url, hits)]."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        procs = []
        for i in range(n):
            hits = folder / f"hits{i}.json"
            proc = subprocess.Popen([sys.executable, "-m", "robusteval.testing.openai_stub", "--port", "0",
                                     "--hits-file", str(hits), *args], stdout=subprocess.PIPE, text=True)
            stack.callback(_stop, proc)
            procs.append((proc, hits))
        started = []
        for proc, hits in procs:
            line = proc.stdout.readline()
            assert line.strip().isdigit(), f"a stub did not start: {line!r}"
            started.append((proc, f"http://127.0.0.1:{int(line)}/v1", hits))
        yield started


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
    proc.wait(10)
    proc.stdout.close()


class _KillAfter:
    """A progress sink that SIGKILLs one replica once ``after`` answers have arrived."""

    def __init__(self, proc: subprocess.Popen, after: int):
        self.proc, self.after, self.seen = proc, after, 0

    def expect(self, n: int) -> None:
        pass

    def record(self, response) -> None:
        self.seen += 1
        if self.seen == self.after:
            os.kill(self.proc.pid, signal.SIGKILL)


async def _ask_pool(tmp_path, spec: str, questions, params: GenParams, progress):
    """Every question through an engine (store in tmp_path) to the pool ``spec``: the responses, the
    replicas' stats and the pool's usage."""
    engine = Engine(Store(tmp_path / "s.sqlite"), progress=progress)
    backend = load_backend(parse_model_spec(spec))
    await engine.add_model("pool", backend)
    try:
        responses = await asyncio.gather(*(engine.chat("pool", q, params) for q in questions))
    finally:
        await engine.close()
        engine.store.close()
    return responses, backend.stats(), engine.usage["pool"]


def test_a_replica_killed_mid_run_loses_no_request_and_answers_none_twice(tmp_path):
    n = 150
    questions = _questions(n)
    with _stub_processes(3, "--latency", "0.02") as stubs:
        (_, url0, hits0), (killed, url1, _), (_, url2, hits2) = stubs
        sink = _KillAfter(killed, after=n // 3)

        responses, stats, usage = asyncio.run(_ask_pool(
            tmp_path, f"openai:stub-model?base_url={url0},{url1},{url2}&max_concurrency=4", questions, PARAMS, sink))
        assert killed.poll() == -signal.SIGKILL
        for proc, _, _ in (stubs[0], stubs[2]):
            proc.terminate()  # writes the hits file a last time
            proc.wait(10)
        survivors: Counter[str] = Counter()
        for hits in (hits0, hits2):
            survivors.update(json.loads(hits.read_text())["requests"])
    assert all(r.ok for r in responses)
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (usage.new, usage.failed, usage.retries) == (n, 0, 0)  # the pool failed over inside each call
    assert sum(s.answered for s in stats) == n
    assert all(s.answered > 0 for s in stats)  # spread over all three, the killed one before it died
    assert stats[1].put_aside >= 1 and not stats[1].healthy
    assert (stats[0].put_aside, stats[2].put_aside) == (0, 0)
    assert stats[1].answered < min(stats[0].answered, stats[2].answered)
    # the surviving servers answered each request at most once between them, and the killed one's
    # share (n minus theirs) is exactly what the pool counted as answered by it
    assert set(survivors.values()) == {1}
    assert sum(survivors.values()) == stats[0].answered + stats[2].answered
    store = Store(tmp_path / "s.sqlite")
    stored = store.stats()
    store.close()
    assert (stored.responses, stored.failures) == (n, 0)


def test_a_replica_put_aside_is_probed_back_only_while_it_serves_the_model():
    async def wait_until(pool, condition, what: str) -> None:
        for _ in range(500):
            pool._pick([pool.replicas[0]])  # what starts due probes (and picks no replica)
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"never: {what}")

    async def main():
        async with StubServer() as a:
            b = StubServer()
            await b.start()
            port = b.port
            pool = await _started(f"openai:stub-model?base_url={a.base_url},{b.base_url}")
            pool.backoff_s = 0.02
            try:
                await b.stop()
                for q in _questions(6):
                    await pool.chat(q, PARAMS)
                down = pool.stats()[1]
                # back on the same port, but serving another model: probed, and kept aside
                other = StubServer(StubConfig(model_id="another-model"), port=port)
                await other.start()
                await wait_until(pool, lambda: pool.replicas[1].failed_probes >= 2, "two failed probes")
                for q in _questions(4):
                    await pool.chat(q, PARAMS)
                still_down = pool.stats()[1]
                await other.stop()
                same = StubServer(port=port)
                await same.start()
                await wait_until(pool, lambda: pool.replicas[1].healthy, "replica b back")
                for q in _questions(10):
                    await pool.chat(q, PARAMS)
                back = pool.stats()[1]
                await same.stop()
                return down, still_down, back, other.counters()["total"]
            finally:
                await pool.close()

    down, still_down, back, other_hits = asyncio.run(main())
    assert (down.sent, down.answered, down.put_aside, down.healthy) == (1, 0, 1, False)
    assert (still_down.sent, still_down.healthy) == (1, False)  # no request sent to the wrong model
    assert other_hits == 0  # probes ask /models, which the counters leave out; no chat reached it
    assert back.healthy and back.answered == 5  # 10 requests, one at a time, alternate over two replicas


def test_every_replica_down_for_a_while_fails_no_request(tmp_path):
    """Every replica of the pool goes down (as in an outage of their node), requests keep coming, and
    the replicas come back on their ports after the pool has probed each in vain: the requests wait
    for the first one back instead of failing at once, so none fails, even with no engine retry."""
    n = 20
    questions = _questions(n)

    async def main():
        a, b = StubServer(), StubServer()
        await a.start()
        await b.start()
        ports = (a.port, b.port)
        engine = Engine(Store(tmp_path / "s.sqlite"), retry=RetryPolicy(max_retries=0, timeout_s=30))
        pool = load_backend(parse_model_spec(f"openai:stub-model?base_url={a.base_url},{b.base_url}"))
        pool.backoff_s = 0.02  # probes at 0.02 s, 0.04 s, ... (the default: 0.5 s, doubling)
        await engine.add_model("pool", pool)
        restarted: list[StubServer] = []
        try:
            first = await engine.chat("pool", questions[0], PARAMS)  # both replicas up: answered
            await a.stop()
            await b.stop()
            tasks = [asyncio.create_task(engine.chat("pool", q, PARAMS)) for q in questions[1:]]
            for _ in range(500):  # until each replica is aside and has failed a probe (bounded)
                if all(r.failed_probes >= 1 for r in pool.replicas):
                    break
                await asyncio.sleep(0.01)
            during = (sum(t.done() for t in tasks), [r.healthy for r in pool.replicas])
            restarted = [StubServer(port=port) for port in ports]
            for server in restarted:
                await server.start()
            responses = [first, *await asyncio.gather(*tasks)]
        finally:
            await engine.close()
            engine.store.close()
            for server in restarted:
                await server.stop()
        return during, responses, engine.usage["pool"], pool.stats()

    during, responses, usage, stats = asyncio.run(main())
    assert during == (0, [False, False])  # every replica aside, and no request given up meanwhile
    assert [r.text for r in responses] == [expected_answer("stub-model", q, PARAMS) for q in questions]
    assert (usage.new, usage.failed, usage.retries) == (n, 0, 0)
    assert sum(s.answered for s in stats) == n and all(s.healthy for s in stats)


@pytest.mark.slow
def test_a_llama_cpp_replica_killed_mid_run_loses_no_request(tmp_path):
    """The same failover with real servers: two llama.cpp servers (the embedded model, one slot each,
    reproducible settings) behind one spec, one SIGKILLed after a third of the answers."""
    n = 12
    questions = _questions(n)
    params = GenParams(max_tokens=8)
    with ExitStack() as stack:
        procs = []
        for _ in range(2):
            proc = subprocess.Popen([sys.executable, "-m", "robusteval.testing.llama_server", "--parallel", "1",
                                     "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            stack.callback(_stop, proc)
            procs.append(proc)
        urls = []
        for proc in procs:
            line = proc.stdout.readline()
            assert line.strip().isdigit(), f"a llama.cpp server did not start: {line!r}"
            urls.append(f"http://127.0.0.1:{int(line)}/v1")
        killed = procs[1]

        responses, stats, usage = asyncio.run(_ask_pool(
            tmp_path, f"openai:smollm2?base_url={urls[0]},{urls[1]}", questions, params, _KillAfter(killed, n // 3)))
        assert killed.poll() == -signal.SIGKILL
    assert all(r.ok and r.text for r in responses)
    assert (usage.new, usage.failed) == (n, 0)
    assert sum(s.answered for s in stats) == n and stats[1].put_aside >= 1 and not stats[1].healthy
    store = Store(tmp_path / "s.sqlite")
    stored = store.stats()
    store.close()
    assert (stored.responses, stored.failures) == (n, 0)
