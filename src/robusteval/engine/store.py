"""The response store: SQLite in WAL mode, written before any answer is used.

Why SQLite: it is crash-safe (a SIGKILL mid-run leaves every committed response intact), several
processes can share one file (WAL lets readers and one writer proceed together; `busy_timeout`
serialises writers), and it needs no server.

Only successful responses are cache hits. Failures are recorded in their own table for accounting
and never returned as cached, so a rerun retries them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from robusteval.types import Completion, Request, TokenLogprob

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
    extra TEXT
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
    """A thread-safe handle on one SQLite cache file."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout=60000")
        _retry_locked(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        # NORMAL in WAL mode survives a process crash (only an OS crash can lose the last commits).
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            _retry_locked(lambda: self._db.executescript(SCHEMA))
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(responses)")}
            if "extra" not in columns:  # a store written by an earlier version
                _retry_locked(lambda: self._db.execute("ALTER TABLE responses ADD COLUMN extra TEXT"))

    def get(self, key: str) -> StoredResponse | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason, logprobs, latency_s, extra "
                "FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        text, pt, ct, finish, logprobs, latency, extra = row
        extra = json.loads(extra) if extra else {}
        return StoredResponse(
            Completion(text=text, prompt_tokens=pt, completion_tokens=ct, finish_reason=finish,
                       logprobs=_decode_logprobs(logprobs), loglik=extra.get("loglik"), greedy=extra.get("greedy")),
            latency,
        )

    def put(self, key: str, fingerprint: str, request: Request, completion: Completion,
            latency_s: float) -> None:
        """Commit one response; returns only once it is durable in the WAL."""
        self.put_many([StoreRow(key, fingerprint, request, completion, latency_s)])

    def put_many(self, rows: list[StoreRow]) -> None:
        """Commit several responses in ONE transaction (a group commit); returns once all are durable.

        One commit per batch instead of per row is what lets the engine write every answer before
        use without paying SQLite's per-transaction cost for each of them."""
        now = time.time()
        values = [_row_values(r, now) for r in rows]  # serialised outside the lock
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)", values)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def record_failure(self, key: str, fingerprint: str, error: str, attempts: int) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO failures (key, fingerprint, error, attempts, created_at) VALUES (?,?,?,?,?)",
                (key, fingerprint, error, attempts, time.time()),
            )

    def stats(self) -> StoreStats:
        with self._lock:
            n = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            f = self._db.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
            models = dict(self._db.execute(
                "SELECT fingerprint, COUNT(*) FROM responses GROUP BY fingerprint ORDER BY 2 DESC"
            ).fetchall())
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return StoreStats(str(self.path), n, f, models, size)

    def history(self, fingerprint: str, *, last: int = 2000) -> list[PastAnswer]:
        """The model's latest stored answers (generations only, not log-likelihood scores)."""
        query = ("SELECT latency_s, completion_tokens, prompt_tokens, request FROM responses WHERE fingerprint = ?"
                 " AND extra IS NULL ORDER BY created_at DESC LIMIT ?")
        with self._lock:
            rows = self._db.execute(query, (fingerprint, last)).fetchall()
        past = []
        for latency, completion, prompt, raw in rows:
            request = json.loads(raw)
            messages = request.get("messages", [])
            past.append(PastAnswer(sum(len(m.get("content", "")) for m in messages),
                                   request.get("params", {}).get("max_tokens", 0), prompt, completion, latency))
        return past

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
            self._db.close()


def _retry_locked(action, attempts: int = 200) -> None:
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


def _row_values(row: StoreRow, created_at: float) -> tuple:
    request, completion = row.request, row.completion
    req = {"messages": request.messages_as_dicts(), "params": request.params.as_dict(), "sample": request.sample}
    if request.continuation is not None:
        req |= {"continuation": request.continuation, "prefix": request.prefix}
    lp = None if completion.logprobs is None else json.dumps([asdict(t) for t in completion.logprobs])
    extra = None if completion.loglik is None else json.dumps({"loglik": completion.loglik, "greedy": completion.greedy})
    return (row.key, row.fingerprint, json.dumps(req, ensure_ascii=False), completion.text, completion.prompt_tokens,
            completion.completion_tokens, completion.finish_reason, lp, row.latency_s, created_at, extra)


def _decode_logprobs(raw: str | None) -> tuple[TokenLogprob, ...] | None:
    if raw is None:
        return None
    return tuple(
        TokenLogprob(t["token"], t["logprob"], tuple(tuple(x) for x in t["top"])) for t in json.loads(raw)
    )
