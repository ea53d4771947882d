"""Group commit: an answer is committed before its caller gets it, concurrent answers share one
transaction, and failures are still recorded."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.errors import BackendError
from robusteval.types import Completion, Message

FAST = RetryPolicy(backoff_base_s=0.001, backoff_cap_s=0.01, max_retries=0)


class ObservedStore(Store):
    """A real SQLite store that records each transaction's keys and can hold a commit back."""

    def __init__(self, path):
        super().__init__(path)
        self.transactions: list[list[str]] = []
        self.release = threading.Event()
        self.release.set()

    def put_many(self, rows, *, replace=False):
        self.release.wait(10)
        written = super().put_many(rows, replace=replace)
        self.transactions.append([r.key for r in rows])
        return written


class Together:
    """Answers after a common short delay, so many completions arrive in the same loop turn;
    a message containing "fail" is refused (not retryable)."""

    fingerprint = "together:v1"
    max_concurrency = 32

    async def start(self):
        pass

    async def close(self):
        pass

    async def chat(self, messages, params):
        await asyncio.sleep(0.02)
        if "fail" in messages[-1].content:
            raise BackendError("refused", retryable=False)
        return Completion(text="ok " + messages[-1].content, prompt_tokens=3, completion_tokens=1)


def _committed(path, key) -> bool:
    """Seen from another connection, i.e. committed (uncommitted rows are invisible to it)."""
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT COUNT(*) FROM responses WHERE key = ?", (key,)).fetchone()[0] == 1
    finally:
        con.close()


def _run(path, body, *, hold=False):
    """Run ``body(engine, store)`` on an engine over an ObservedStore; returns (its result, transactions)."""

    async def main():
        store = ObservedStore(path)
        if hold:
            store.release.clear()
        engine = Engine(store, retry=FAST)
        await engine.add_model("m", Together())
        try:
            return await body(engine, store), store.transactions
        finally:
            await engine.close()
            store.close()

    return asyncio.run(main())


def test_each_response_is_committed_before_it_is_returned_and_concurrent_ones_share_a_commit(tmp_path):
    path = tmp_path / "s.sqlite"

    async def body(engine, store):
        async def ask(i):
            r = await engine.chat("m", (Message("user", f"q{i}"),))
            return r, _committed(path, r.key)

        return await asyncio.gather(*(ask(i) for i in range(24)))

    results, transactions = _run(path, body)
    assert all(r.ok and seen for r, seen in results)
    assert sorted(k for t in transactions for k in t) == sorted(r.key for r, _ in results)
    assert len(transactions) < 24 / 2  # completions of one loop turn went into one transaction
    assert max(len(t) for t in transactions) > 1


def test_a_caller_waits_while_its_commit_is_held_back(tmp_path):
    path = tmp_path / "s.sqlite"

    async def body(engine, store):
        task = asyncio.ensure_future(engine.chat("m", (Message("user", "held"),)))
        await asyncio.sleep(0.3)  # the backend answered long ago; the commit is held
        waiting = not task.done()
        store.release.set()
        return waiting, await task

    (waiting, response), _ = _run(path, body, hold=True)
    assert waiting
    assert response.ok and _committed(path, response.key)


def test_failures_are_recorded_beside_batched_successes(tmp_path):
    path = tmp_path / "s.sqlite"

    async def body(engine, store):
        return await asyncio.gather(*(engine.chat("m", (Message("user", f"{'fail' if i % 4 == 0 else 'q'}{i}"),))
                                      for i in range(12)))

    out, _ = _run(path, body)
    assert [r.ok for r in out] == [i % 4 != 0 for i in range(12)]
    con = sqlite3.connect(path)
    try:
        assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 9
        assert con.execute("SELECT COUNT(*) FROM failures").fetchone()[0] == 3
    finally:
        con.close()
