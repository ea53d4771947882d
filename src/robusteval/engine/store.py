"""The response store: SQLite in WAL mode, written before any answer is used.

Why SQLite: it is crash-safe (a SIGKILL mid-run leaves every committed response intact), several
processes can share one file (WAL lets readers and one writer proceed together; `busy_timeout`
serialises writers), and it needs no server.

Only successful responses are cache hits. Failures are recorded in their own table for accounting
and never returned as cached, so a rerun retries them.

Every answer carries a checksum (SHA-256 of its key and the stored bytes of everything served from
it); a lookup whose bytes no longer match is refused and counted (`Store.rejected`), so the engine
asks again instead of serving a changed answer. Any SQLite failure (a damaged, read-only or full
store) ends in one `StoreError` that names the file and what to do, never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from robusteval.errors import UserError
from robusteval.ledger import CHUNK, sqlite_files
from robusteval.redact import redact
from robusteval.types import Completion, Request, TokenLogprob

P = ParamSpec("P")
R = TypeVar("R")

# PRAGMA user_version: 2 = every answer has a checksum (stores of version 0 get them on first open).
SCHEMA_VERSION = 2
STORE_FILE = "responses.sqlite"  # a --cache-dir's store: <cache dir>/responses.sqlite

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    logprobs TEXT,
    latency_s REAL NOT NULL,
    created_at REAL NOT NULL,
    extra TEXT,
    checksum TEXT
);
CREATE INDEX IF NOT EXISTS responses_fingerprint ON responses(fingerprint);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    error TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created_at REAL NOT NULL
);
"""


def cache_key(fingerprint: str, request: Request) -> str:
    """Hash of everything that can change an answer: model, full messages, all params, sample."""
    payload = {
        "fingerprint": fingerprint,
        "messages": request.messages_as_dicts(),
        "params": request.params.as_dict(),
        "sample": request.sample,
    }
    if request.continuation is not None:  # only then, so generation keys stay as they were
        payload |= {"continuation": request.continuation, "prefix": request.prefix}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class StoreError(UserError):
    """The store cannot be used as it is; the message names the file and what to do.

    ``damaged``: SQLite found the file corrupt or not a database (`cache clear` then removes it)."""

    def __init__(self, message: str, *, damaged: bool = False):
        super().__init__(message)
        self.damaged = damaged


def store_error(path: Path, exc: BaseException, doing: str) -> StoreError:
    """One clear message for a failure of SQLite (or the file system) on the store at ``path``."""
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    detail = f"SQLite: {exc}" if isinstance(exc, sqlite3.Error) else f"{type(exc).__name__}: {exc}"
    where = f"--cache-dir {path.parent}"
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in str(exc):
        return StoreError(
            f"the response store {path} is damaged ({detail}) while {doing}. See what is wrong with "
            f"`robusteval cache check {where}`; start afresh with `robusteval cache clear {where}` (deletes "
            f"every stored answer), or use a new --cache-dir", damaged=True)
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM) or isinstance(exc, OSError):
        return StoreError(f"cannot open or write the response store {path} ({detail}) while {doing}: the file or "
                          f"its folder is read-only (or missing); make both writable, or use another --cache-dir")
    if code == sqlite3.SQLITE_FULL:
        return StoreError(f"the disk holding the response store {path} is full ({detail}) while {doing}: free some "
                          f"space or use a --cache-dir on another disk; every answer stored so far is kept, "
                          f"and the same command resumes")
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(f"the response store {path} stayed locked by another process ({detail}) while {doing}; "
                          f"try again when the other run has finished, or use another --cache-dir")
    return StoreError(f"the response store {path} failed ({detail}) while {doing}; check it with "
                      f"`robusteval cache check {where}`, or use another --cache-dir")


def _guarded(doing: str) -> Callable[[Callable[Concatenate[Store, P], R]], Callable[Concatenate[Store, P], R]]:
    """Turn a SQLite failure inside a Store method into a `StoreError` naming the file."""

    def wrap(method: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
        @functools.wraps(method)
        def guarded(self: Store, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(self, *args, **kwargs)
            except (sqlite3.Error, OSError) as exc:
                raise store_error(self.path, exc, doing) from None

        return guarded

    return wrap


def answer_checksum(key: str, text: bytes | None, prompt_tokens: object, completion_tokens: object,
                    finish_reason: bytes | None, logprobs: bytes | None, extra: bytes | None) -> str:
    """SHA-256 over the key and the stored bytes of everything an answer is served from.

    The tuple's repr is an unambiguous encoding (bytes are quoted and escaped, 3, 3.0 and b'3' all
    differ), so a count turned into text or a real, or one changed byte of a reply, changes it."""
    return hashlib.sha256(repr((key, text, prompt_tokens, completion_tokens, finish_reason, logprobs,
                                extra)).encode()).hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    completion: Completion
    latency_s: float


@dataclass(frozen=True)
class StoreRow:
    """One successful response on its way into the store."""

    key: str
    fingerprint: str
    request: Request
    completion: Completion
    latency_s: float


@dataclass(frozen=True)
class Written:
    """What `Store.put_many` did with its rows, by key: stored; the same answer already held; another
    answer already held (kept: a conflict the caller reports, or serves instead of its own)."""

    stored: tuple[str, ...] = ()
    same: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoreStats:
    path: str
    responses: int
    failures: int
    models: dict[str, int]
    size_bytes: int


@dataclass(frozen=True)
class PastAnswer:
    """One stored answer of a model, reduced to what run estimates are fitted on."""

    chars: int  # characters in the request's messages
    max_tokens: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float


class Store:
    """A thread-safe handle on one SQLite cache file.

    ``readonly`` opens it for reading only (`cache stats`, `cache check`): nothing is created,
    migrated or written, so a damaged or read-only store can still be inspected."""

    def __init__(self, path: Path | str, *, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self.rejected = 0  # lookups refused because the answer's bytes no longer match its checksum
        self._lock = threading.Lock()
        self._db = self._connect()
        try:
            if not readonly:
                self._prepare()
        except BaseException:
            self._db.close()
            raise

    @_guarded("opening it")
    def _connect(self) -> sqlite3.Connection:
        if self.readonly:
            return connect_readonly(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)

    @_guarded("opening it")
    def _prepare(self) -> None:
        self._db.execute("PRAGMA busy_timeout=60000")
        _retry_locked(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        # NORMAL in WAL mode survives a process crash (only an OS crash can lose the last commits).
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            _retry_locked(lambda: self._db.executescript(SCHEMA))
            self._migrate()

    def _migrate(self) -> None:
        """Bring a store written by an earlier version up to `SCHEMA_VERSION`, in one transaction (two
        processes opening it at once: the second finds it done). Setting user_version writes the file,
        which also proves it writable before any request is sent."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(responses)")}
            if "extra" not in columns:
                self._db.execute("ALTER TABLE responses ADD COLUMN extra TEXT")
            if "checksum" not in columns:
                self._db.execute("ALTER TABLE responses ADD COLUMN checksum TEXT")
            if version < SCHEMA_VERSION:  # answers stored before checksums: sealed as they are now
                self._db.create_function("robusteval_checksum", 7, answer_checksum, deterministic=True)
                self._db.execute(f"UPDATE responses SET checksum = robusteval_checksum({CHECKED_FIELDS}) "
                                 "WHERE checksum IS NULL")
                # Failures an earlier version recorded may hold an echoed key: scrubbed once, here.
                self._db.create_function("robusteval_redact", 1, redact, deterministic=True)
                self._db.execute("UPDATE failures SET error = robusteval_redact(error)")
            self._db.execute(f"PRAGMA user_version={max(version, SCHEMA_VERSION)}")
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def get(self, key: str) -> StoredResponse | None:
        """The stored answer for ``key``; None if there is none, or if its bytes changed since it was
        stored (then `rejected` grows by one and the caller asks again)."""
        try:  # inline, not @_guarded: this is the cached rerun's hot path
            with self._lock:
                row = self._db.execute(GET_QUERY, (key,)).fetchone()
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "looking up an answer") from None
        if row is None:
            return None
        _, text, pt, ct, finish, logprobs, extra, latency, checksum = row
        if checksum != answer_checksum(*row[:7]):
            self.rejected += 1
            return None
        try:
            extra = json.loads(extra) if extra else {}
            completion = Completion(text=text.decode(), prompt_tokens=pt, completion_tokens=ct,
                                    finish_reason=None if finish is None else finish.decode(),
                                    logprobs=_decode_logprobs(logprobs), loglik=extra.get("loglik"),
                                    greedy=extra.get("greedy"))
        except (ValueError, TypeError, KeyError, AttributeError):  # sealed as written: only a bug gets here
            self.rejected += 1
            return None
        return StoredResponse(completion, latency)

    def put(self, key: str, fingerprint: str, request: Request, completion: Completion,
            latency_s: float) -> Written:
        """Commit one response; returns only once it is durable in the WAL."""
        return self.put_many([StoreRow(key, fingerprint, request, completion, latency_s)])

    @_guarded("storing answers")
    def put_many(self, rows: list[StoreRow], *, replace: bool = False) -> Written:
        """Commit several responses in ONE transaction (a group commit); returns once all are durable,
        with what became of each row.

        One commit per batch instead of per row is what lets the engine write every answer before
        use without paying SQLite's per-transaction cost for each of them.

        A stored answer is never silently replaced: a key whose stored answer still matches its
        checksum keeps it (the row is `Written.same`, or a `Written.conflicts` when it differs), checked
        inside the write's own transaction, so a writer racing another (an import during a live run)
        cannot replace what the other stored after its lookup. Only an answer whose bytes no longer
        match (served never again) is replaced, or every row with ``replace`` (``--no-cache``: the
        user asked for new answers)."""
        now = time.time()
        values = [_row_values(r, now) for r in rows]  # serialised outside the lock
        stored: list[str] = []
        same: list[str] = []
        conflicts: list[str] = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                held = {} if replace else self._verified(list(dict.fromkeys(v[0] for v in values)))
                writes = []
                for v in values:
                    key, checksum = v[0], v[-1]
                    if key in held:
                        (same if held[key] == checksum else conflicts).append(key)
                        continue
                    held[key] = checksum  # a key given twice in one call: the first stands
                    writes.append(v)
                    stored.append(key)
                self._db.executemany(
                    "INSERT OR REPLACE INTO responses (key, fingerprint, request, text, prompt_tokens, "
                    "completion_tokens, finish_reason, logprobs, latency_s, created_at, extra, checksum) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", writes)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        return Written(tuple(stored), tuple(same), tuple(conflicts))

    def _verified(self, keys: list[str]) -> dict[str, str]:
        """key -> checksum of each of ``keys`` whose stored answer still matches its checksum."""
        held = {}
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start:start + CHUNK]
            query = f"SELECT {CHECKED_FIELDS}, checksum FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
            for row in self._db.execute(query, chunk):
                if row[7] == answer_checksum(*row[:7]):
                    held[row[0]] = row[7]
        return held

    @_guarded("looking up answers")
    def holds(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` the store answers (an answer that still matches its checksum)."""
        with self._lock:
            return set(self._verified(keys))

    @_guarded("recording a failed request")
    def record_failure(self, key: str, fingerprint: str, error: str, attempts: int) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO failures (key, fingerprint, error, attempts, created_at) VALUES (?,?,?,?,?)",
                (key, redact(fingerprint, patterns=False), redact(error), attempts, time.time()),
            )

    @_guarded("checking it")
    def quick_check(self) -> None:
        """SQLite's quick check (every page read once, no index cross-check); raises a damaged
        `StoreError` when it finds anything."""
        with self._lock:
            problems = [r[0] for r in self._db.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError(f"database disk image is malformed: {'; '.join(problems)}")

    @_guarded("counting its answers")
    def stats(self) -> StoreStats:
        """Counts, after SQLite's quick check: a damaged store's counts would be wrong, so it raises."""
        self.quick_check()
        with self._lock:
            n = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            f = self._db.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
            models = dict(self._db.execute(
                "SELECT fingerprint, COUNT(*) FROM responses GROUP BY fingerprint ORDER BY 2 DESC"
            ).fetchall())
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return StoreStats(str(self.path), n, f, models, size)

    @_guarded("reading past answers")
    def history(self, fingerprint: str, *, last: int = 2000) -> list[PastAnswer]:
        """The model's latest stored answers (generations only, not log-likelihood scores)."""
        query = ("SELECT latency_s, completion_tokens, prompt_tokens, request FROM responses WHERE fingerprint = ?"
                 " AND extra IS NULL ORDER BY created_at DESC LIMIT ?")
        with self._lock:
            rows = self._db.execute(query, (fingerprint, last)).fetchall()
        past = []
        for latency, completion, prompt, raw in rows:
            try:
                request = json.loads(raw)
                messages = request.get("messages", [])
                past.append(PastAnswer(sum(len(m.get("content", "")) for m in messages),
                                       request.get("params", {}).get("max_tokens", 0), prompt, completion, latency))
            except (ValueError, TypeError, AttributeError):  # a damaged row says nothing about the model
                continue
        return past

    @_guarded("deleting answers")
    def clear(self, fingerprint_prefix: str | None = None) -> int:
        """Delete cached responses (all, or those whose fingerprint starts with a prefix)."""
        with self._lock:
            if fingerprint_prefix is None:
                cur = self._db.execute("DELETE FROM responses")
                self._db.execute("DELETE FROM failures")
            else:
                cur = self._db.execute("DELETE FROM responses WHERE fingerprint LIKE ?",
                                       (fingerprint_prefix + "%",))
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()  # a second close is a no-op


# The columns an answer is served from, in `answer_checksum`'s order (text columns as their bytes).
CHECKED_FIELDS = ("key, CAST(text AS BLOB), prompt_tokens, completion_tokens, CAST(finish_reason AS BLOB), "
                  "CAST(logprobs AS BLOB), CAST(extra AS BLOB)")
GET_QUERY = f"SELECT {CHECKED_FIELDS}, latency_s, checksum FROM responses WHERE key = ?"


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A connection that never writes (see `readonly_uri`)."""
    return sqlite3.connect(readonly_uri(path), uri=True, timeout=60, check_same_thread=False, isolation_level=None)


def readonly_uri(path: Path) -> str:
    """The URI that opens ``path`` for reading only (to connect, or to ATTACH). A WAL store in a read-only
    folder (or file system) has no -shm SQLite may create; if nothing waits in its WAL, it is read as an
    immutable file instead."""
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60)
    try:
        db.execute("PRAGMA schema_version").fetchone()
        return f"{uri}?mode=ro"
    except sqlite3.OperationalError:
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise
    finally:
        db.close()
    return f"{uri}?immutable=1"


def clear_store(path: Path, fingerprint_prefix: str | None = None) -> str:
    """`robusteval cache clear`: delete the answers (all, or one model's); a store SQLite finds damaged
    cannot be cleared row by row, so clearing it all removes its files. Returns what was done."""
    try:
        store = Store(path)
        try:
            if fingerprint_prefix is None:
                store.quick_check()
            n = store.clear(fingerprint_prefix)
        finally:
            store.close()
        return f"deleted {n} responses from {path}"
    except StoreError as exc:
        if not exc.damaged or fingerprint_prefix is not None:
            raise
    removed = remove_store_files(path)
    return f"the store was damaged; removed {', '.join(str(p) for p in removed)}"


def remove_store_files(path: Path) -> list[Path]:
    """Delete a store and its -wal/-shm files (for a store SQLite cannot open or repair)."""
    removed = []
    for candidate in sqlite_files(path):
        if candidate.exists():
            candidate.unlink()
            removed.append(candidate)
    return removed


def _retry_locked(action: Callable[[], object], attempts: int = 200) -> None:
    """Run a set-up statement that SQLite may refuse with "locked" while another process creates
    the same file (switching to WAL takes an exclusive lock and bypasses the busy handler)."""
    for attempt in range(attempts):
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _row_values(row: StoreRow, created_at: float) -> tuple[Any, ...]:
    request, completion = row.request, row.completion
    req = {"messages": request.messages_as_dicts(), "params": request.params.as_dict(), "sample": request.sample}
    if request.continuation is not None:
        req |= {"continuation": request.continuation, "prefix": request.prefix}
    lp = None if completion.logprobs is None else json.dumps([asdict(t) for t in completion.logprobs])
    extra = (None if completion.loglik is None
             else json.dumps({"loglik": completion.loglik, "greedy": completion.greedy}))
    checksum = answer_checksum(row.key, completion.text.encode(), completion.prompt_tokens,
                               completion.completion_tokens, _utf8(completion.finish_reason), _utf8(lp), _utf8(extra))
    # The door where text enters the store: no API key, whatever a server echoed (the text is redacted,
    # before its checksum, where the engine receives it).
    return (row.key, redact(row.fingerprint, patterns=False), json.dumps(req, ensure_ascii=False), completion.text,
            completion.prompt_tokens, completion.completion_tokens, completion.finish_reason, lp, row.latency_s,
            created_at, extra, checksum)


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _decode_logprobs(raw: bytes | str | None) -> tuple[TokenLogprob, ...] | None:
    if raw is None:
        return None
    return tuple(
        TokenLogprob(t["token"], t["logprob"], tuple(tuple(x) for x in t["top"])) for t in json.loads(raw)
    )
