"""The store under damage: a changed answer is refused and asked again, a store written by an earlier
version is migrated, and a truncated, garbled, foreign, read-only or full store ends in one clear
UserError naming the file and what to do (in the CLI: a message and exit code, no traceback)."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from robusteval.engine import Engine, RetryPolicy
from robusteval.engine.store import SCHEMA_VERSION, Store, StoreError, StoreRow, cache_key, clear_store
from robusteval.engine.store_check import check_store
from robusteval.errors import UserError
from robusteval.testing.readonly import read_only
from robusteval.testing.stores import served
from robusteval.types import Completion, GenParams, Message, Request, TokenLogprob

FP = "scripted:model"


def _request(i: int) -> Request:
    return Request((Message("user", f"question {i}: " + "padding " * 30),), GenParams(max_tokens=8))


def _fill(path: Path, n: int, *, text=lambda i: f"answer {i}") -> list[str]:
    """n answers in a fresh store at ``path``; returns their keys."""
    store = Store(path)
    rows = [StoreRow(cache_key(FP, _request(i)), FP, _request(i),
                     Completion(text=text(i), prompt_tokens=10 + i, completion_tokens=2, finish_reason="stop"), 0.01)
            for i in range(n)]
    store.put_many(rows)
    store.close()
    _checkpoint(path)
    return [r.key for r in rows]


def _checkpoint(path: Path) -> None:
    """Move everything from the WAL into the main file (as the last connection closing does)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def _sql(path: Path, statement: str, *args) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute(statement, args)
    con.close()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robusteval.cli", *args], capture_output=True, text=True, timeout=120)


def _clean_error(proc: subprocess.CompletedProcess, code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in proc.stderr + proc.stdout, proc.stderr + proc.stdout


class Echo:
    """A backend answering "fresh <question>", counting what it was asked."""

    fingerprint = FP
    max_concurrency = 4

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def start(self) -> None: ...

    async def chat(self, messages, params) -> Completion:
        self.asked.append(messages[0].content)
        return Completion(text="fresh " + messages[0].content[:12], prompt_tokens=1, completion_tokens=1)

    async def close(self) -> None: ...


def _ask(path: Path, indices, backend=None) -> tuple[list, Echo, Engine]:
    backend = backend or Echo()

    async def main():
        store = Store(path)
        engine = Engine(store, retry=RetryPolicy(max_retries=0, backoff_base_s=0.0))
        await engine.add_model("m", backend)
        try:
            return [await engine.chat("m", _request(i).messages, _request(i).params) for i in indices], engine
        finally:
            await engine.close()
            store.close()

    responses, engine = asyncio.run(main())
    return responses, backend, engine


# --- checksums ---------------------------------------------------------------------------------

@pytest.mark.parametrize("change", [
    "UPDATE responses SET text = 'answer 1 (edited)' WHERE key = ?",
    "UPDATE responses SET text = 42 WHERE key = ?",  # TEXT affinity stores '42': same kind, other bytes
    "UPDATE responses SET completion_tokens = 3 WHERE key = ?",
    "UPDATE responses SET completion_tokens = 'two' WHERE key = ?",  # INTEGER affinity keeps it text
    "UPDATE responses SET finish_reason = 'length' WHERE key = ?",
    "UPDATE responses SET logprobs = '[]' WHERE key = ?",
    "UPDATE responses SET text = CAST(X'616e7377657220ff31' AS TEXT) WHERE key = ?",  # invalid UTF-8
    "UPDATE responses SET checksum = NULL WHERE key = ?",
])
def test_an_answer_whose_bytes_changed_is_refused_counted_and_asked_again(tmp_path, change):
    path = tmp_path / "responses.sqlite"
    keys = _fill(path, 3)
    _sql(path, change, keys[1])

    store = Store(path)
    assert store.get(keys[0]).completion.text == "answer 0"
    assert store.get(keys[1]) is None and store.rejected == 1
    store.close()

    responses, backend, engine = _ask(path, [0, 1, 2])
    assert [r.text for r in responses] == ["answer 0", "fresh " + _request(1).messages[0].content[:12], "answer 2"]
    assert len(backend.asked) == 1 and engine.usage["m"].store_rejected == 1
    assert engine.usage["m"].as_dict()["store_rejected"] == 1
    report = check_store(path)  # the new answer replaced the changed one
    assert report.ok and report.answers == 3 and report.changed == ()


# --- a stored answer is never silently replaced ---------------------------------------------------

def _row(i: int, text: str) -> StoreRow:
    return StoreRow(cache_key(FP, _request(i)), FP, _request(i), Completion(text=text, prompt_tokens=1), 0.0)


def _text(path: Path, i: int) -> str | None:
    return served(path, [cache_key(FP, _request(i))])[0]


def test_a_second_writer_never_replaces_an_answer_stored_after_its_lookup(tmp_path):
    """N4's race without timing: two handles (a live run, an import) both find key 0 missing, then
    both write; the second keeps the first's answer and says so. A damaged answer is replaced; a
    key given twice in one write keeps its first answer."""
    path = tmp_path / "responses.sqlite"
    run, other = Store(path), Store(path)
    assert run.get(_row(0, "x").key) is None and other.get(_row(0, "x").key) is None
    assert run.put_many([_row(0, "live"), _row(1, "live 1")]).stored == (_row(0, "x").key, _row(1, "x").key)
    written = other.put_many([_row(0, "imported"), _row(1, "live 1"), _row(2, "imported 2"), _row(2, "again")])
    assert written.stored == (_row(2, "x").key,)
    assert written.same == (_row(1, "x").key,)
    assert written.conflicts == (_row(0, "x").key, _row(2, "x").key)
    run.close()
    other.close()
    assert [_text(path, i) for i in range(3)] == ["live", "live 1", "imported 2"]
    _sql(path, "UPDATE responses SET checksum = NULL WHERE key = ?", _row(0, "x").key)
    store = Store(path)
    assert store.put_many([_row(0, "asked again")]).stored == (_row(0, "x").key,)  # damaged: replaced
    assert store.put_many([_row(1, "new")], replace=True).stored == (_row(1, "x").key,)  # --no-cache
    assert store.holds([_row(i, "x").key for i in range(4)]) == {_row(i, "x").key for i in range(3)}
    store.close()
    assert [_text(path, i) for i in range(3)] == ["asked again", "new", "imported 2"]


def test_a_run_serves_the_answer_another_process_stored_while_it_asked(tmp_path):
    """An import stores key 0 while the live run's request is on the wire: the run keeps and uses
    the stored answer, so the run's results and every rerun agree."""
    path = tmp_path / "responses.sqlite"
    Store(path).close()

    class Raced(Echo):
        async def chat(self, messages, params) -> Completion:
            importer = Store(path)
            importer.put_many([_row(0, "imported")])
            importer.close()
            return await super().chat(messages, params)

    responses, backend, _ = _ask(path, [0], Raced())
    assert len(backend.asked) == 1
    assert [r.text for r in responses] == ["imported"] and _text(path, 0) == "imported"


def test_no_cache_asks_again_and_replaces_the_stored_answer(tmp_path):
    """``--no-cache`` (use_cache=False) is the one way a verified answer is replaced: the user asked for new ones."""
    path = tmp_path / "responses.sqlite"
    keys = _fill(path, 2)

    async def main():
        store = Store(path)
        engine = Engine(store, use_cache=False, retry=RetryPolicy(max_retries=0, backoff_base_s=0.0))
        await engine.add_model("m", Echo())
        try:
            return [(await engine.chat("m", _request(i).messages, _request(i).params)).text for i in range(2)]
        finally:
            await engine.close()
            store.close()

    texts = asyncio.run(main())
    assert texts == ["fresh " + _request(i).messages[0].content[:12] for i in range(2)]
    assert served(path, keys) == texts


def test_cache_check_names_the_changed_answers(tmp_path):
    path = tmp_path / "responses.sqlite"
    keys = _fill(path, 5)
    _sql(path, "UPDATE responses SET text = 'B' WHERE key = ?", keys[3])
    report = check_store(path)
    assert not report.ok and report.problems == () and report.changed == (keys[3],) and report.answers == 5
    proc = _cli("cache", "check", "--cache-dir", str(tmp_path))
    _clean_error(proc, 1, "SQLite integrity check: ok", "4 match, 1 changed", keys[3])


def test_answers_round_trip_exactly_with_logprobs_loglik_and_odd_text(tmp_path):
    path = tmp_path / "responses.sqlite"
    store = Store(path)
    odd = "nul\x00 tab\t emoji 🙂 bidi \u202e line\u2028sep"
    rows = [
        StoreRow("k1", FP, _request(1), Completion(text=odd, prompt_tokens=0, completion_tokens=0), 0.5),
        StoreRow("k2", FP, _request(2),
                 Completion(text="A", logprobs=(TokenLogprob("A", -0.1, (("A", -0.1), ("B", -2.5))),),
                            finish_reason="length"), 0.5),
        StoreRow("k3", FP, _request(3), Completion(text="", loglik=-3.25, greedy=True), 0.5),
    ]
    store.put_many(rows)
    assert [store.get(k).completion for k in ("k1", "k2", "k3")] == [r.completion for r in rows]
    assert store.rejected == 0
    store.close()
    assert check_store(path).ok


# --- stores written by an earlier version --------------------------------------------------------

OLD_SCHEMA = """
CREATE TABLE responses (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, request TEXT NOT NULL, text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, finish_reason TEXT, logprobs TEXT,
    latency_s REAL NOT NULL, created_at REAL NOT NULL);
CREATE TABLE failures (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    error TEXT NOT NULL, attempts INTEGER NOT NULL, created_at REAL NOT NULL);
"""


def test_a_store_from_an_earlier_version_is_migrated_and_sealed(tmp_path):
    path = tmp_path / "responses.sqlite"
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    keys = [cache_key(FP, _request(i)) for i in range(4)]
    con.executemany("INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [(k, FP, "{}", f"old {i}", 5, 1, "stop", None, 0.1, 1.0) for i, k in enumerate(keys)])
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO failures (key, fingerprint, error, attempts, created_at) VALUES (?,?,?,?,?)",
                (keys[0], FP, "HTTP 500: echoed Authorization: Bearer sk-old0123456789abcdef", 1, 1.0))
    con.commit()
    con.close()
    before = check_store(path)
    assert before.ok and before.unsealed == 4  # nothing to verify yet; said so, not counted as damage

    store = Store(path)
    assert [store.get(k).completion.text for k in keys] == ["old 0", "old 1", "old 2", "old 3"]
    assert store.rejected == 0
    store.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("SELECT COUNT(*) FROM responses WHERE checksum IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT error FROM failures").fetchall() == [
        ("HTTP 500: echoed Authorization: Bearer [redacted]",)]
    con.close()
    after = check_store(path)
    assert after.ok and after.unsealed == 0 and after.answers == 4
    _sql(path, "UPDATE responses SET text = 'tampered' WHERE key = ?", keys[2])  # sealed from now on
    assert check_store(path).changed == (keys[2],)


def test_two_handles_opening_an_old_store_at_once_both_work(tmp_path):
    path = tmp_path / "responses.sqlite"
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    con.close()
    first, second = Store(path), Store(path)  # the second finds the migration done
    first.put_many([StoreRow("k", FP, _request(0), Completion(text="x"), 0.1)])
    assert second.get("k").completion.text == "x"
    first.close()
    second.close()


# --- damaged stores ------------------------------------------------------------------------------

def _truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def _garble(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:  # leave page 1 (header, schema) alone, overwrite pages in the middle
        f.seek(size // 3)
        f.write(b"\xa5\x5a" * 8192)


def _foreign(path: Path) -> None:
    path.write_text("this is a text file, not a SQLite database\n" * 100)


DAMAGE = {"truncated": _truncate, "garbled": _garble, "not SQLite": _foreign}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_store_is_reported_with_path_and_what_to_do_not_counted(tmp_path, damage):
    path = tmp_path / "responses.sqlite"
    keys = _fill(path, 1500)
    DAMAGE[damage](path)

    proc = _cli("cache", "stats", "--cache-dir", str(tmp_path))
    _clean_error(proc, 2, str(path), "is damaged", "robusteval cache check", "robusteval cache clear",
                 "--cache-dir")
    assert "responses:" not in proc.stdout  # no counts from a store SQLite calls malformed

    check = check_store(path)
    assert not check.ok and check.problems
    proc = _cli("cache", "check", "--cache-dir", str(tmp_path))
    _clean_error(proc, 1, str(path), "robusteval cache clear")

    with pytest.raises(StoreError) as caught:  # a run: at open, or at the first lookup that meets the damage
        store = Store(path)
        try:
            for key in keys:
                store.get(key)
            store.quick_check()
        finally:
            store.close()
    assert caught.value.damaged and str(path) in str(caught.value) and "cache check" in str(caught.value)

    assert "removed" in clear_store(path)  # `cache clear` starts afresh even where SQL cannot
    assert not path.exists()
    _fill(path, 2)
    assert check_store(path).ok


def test_a_run_on_a_damaged_store_ends_in_one_message_and_exit_2(tmp_path, mcq_file):
    from robusteval.testing.openai_stub import StubServer

    (tmp_path / "responses.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with StubServer() as stub:
        proc = _cli("run", "mcq", "--quiet", "--data", str(mcq_file), "--families", "format", "--model",
                    stub.model(), "--cache-dir", str(tmp_path),
                    "--out", str(tmp_path / "runs"))
        hits = stub.state.total
    _clean_error(proc, 2, str(tmp_path / "responses.sqlite"), "is damaged", "cache clear")
    assert hits == 0  # found before anything was asked


def test_a_read_only_store_is_refused_at_open_before_anything_is_asked(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "responses.sqlite"
    _fill(path, 3)
    for leftover in folder.glob("responses.sqlite-*"):
        leftover.unlink()
    with read_only([path, folder]) as locked:
        if not locked:
            pytest.skip("cannot make a file read-only here (root without chattr)")
        with pytest.raises(StoreError) as caught:
            Store(path)
        message = str(caught.value)
        assert str(path) in message and "read-only" in message and "--cache-dir" in message
        proc = _cli("cache", "stats", "--cache-dir", str(folder))  # reading still works
        assert proc.returncode == 0 and "responses: 3" in proc.stdout, proc.stderr


def test_a_full_disk_ends_in_one_message_and_keeps_what_was_stored(tmp_path):
    """SQLite's own page limit gives the same SQLITE_FULL as a full disk (a real full disk, a 1 MB
    tmpfs, was checked by hand: same message)."""
    path = tmp_path / "responses.sqlite"
    _fill(path, 2)

    class Full(Echo):
        async def chat(self, messages, params) -> Completion:
            return Completion(text="x" * 20000)  # 5 pages a reply

    async def main():
        store = Store(path)
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages + 2}")
        engine = Engine(store, retry=RetryPolicy(max_retries=0))
        await engine.add_model("m", Full())
        try:
            await engine.chat("m", _request(100).messages, _request(100).params)
        finally:
            await engine.close()
            store.close()

    with pytest.raises(UserError) as caught:
        asyncio.run(main())
    message = str(caught.value)
    assert str(path) in message and "full" in message and "--cache-dir" in message
    store = Store(path)
    assert store.stats().responses == 2
    store.close()


def test_a_store_folder_that_cannot_be_created_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open or write the response store"):
        Store(blocker / "sub" / "responses.sqlite")
