"""`robusteval cache merge SRC... --into DST`: combine response stores (shards run on other machines,
a colleague's cache) into one.

An answer is copied with its bytes and its checksum as they are, so the merged store serves exactly
what the source stored and `cache check` still vouches for it. Nothing is overwritten: a key DST
already holds keeps DST's answer (the first source given wins over later ones); where the other
answer differs (its checksum differs: another text or token count) it is a conflict, counted and
listed, not a silent replacement. A source answer whose bytes no longer match its checksum (or
whose checksum is missing) is damaged and not copied: every row is verified again, as `cache check`
does. A source is only read (on a read-only file system too: `store.readonly_uri`). Recorded
failures are not copied (they are one run's accounting; a rerun retries them anyway), nor are
pending batches (`responses.batches.sqlite`).

All sources are checked (they exist, are not DST, SQLite finds them sound) before DST is written;
each source is merged in one transaction, so an interrupted merge leaves DST as it was after the
last whole source.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from robusteval.engine.store import (
    STORE_FILE,
    Store,
    StoreError,
    answer_checksum,
    connect_readonly,
    readonly_uri,
    store_error,
)
from robusteval.engine.store_check import is_sealed
from robusteval.errors import UserError

EXAMPLES = 20  # conflicts and damaged answers listed per source (all are counted)
COLUMNS = ("key, fingerprint, request, text, prompt_tokens, completion_tokens, finish_reason, logprobs, latency_s, "
           "created_at, extra, checksum")


@dataclass(frozen=True)
class MergedSource:
    path: Path
    answers: int  # answers in the source
    added: int  # copied into DST
    same: int  # DST already held the same answer
    conflicts: int  # DST already held another answer for the key: kept, this one not copied
    damaged: int  # bytes no longer match the checksum: not copied
    examples: tuple[tuple[str, str, str], ...]  # (kind, key, fingerprint) of the first conflicts and damaged


def store_path(text: str | Path) -> Path:
    """A store named by its file (``*.sqlite``) or by its folder (a ``--cache-dir``)."""
    path = Path(text).expanduser()
    return path if path.suffix == ".sqlite" else path / STORE_FILE


def merge_stores(sources: list[Path], into: Path) -> list[MergedSource]:
    """Copy every answer of ``sources`` that ``into`` lacks; what each source gave, in order."""
    if not sources:
        raise UserError("cache merge: name at least one store to merge (SRC...)")
    for source in sources:
        _check_source(source, into)
    Store(into).close()  # DST created, or brought up to the current schema, by the one code that does it
    try:
        db = sqlite3.connect(into.resolve().as_uri(), uri=True, timeout=60, isolation_level=None)
    except sqlite3.Error as exc:
        raise store_error(into, exc, "opening it to merge into") from None
    try:
        db.execute("PRAGMA busy_timeout=60000")
        db.create_function("robusteval_checksum", 7, answer_checksum, deterministic=True)
        return [_merge_one(db, source, into) for source in sources]
    finally:
        db.close()


def _check_source(source: Path, into: Path) -> None:
    if not source.is_file():
        raise UserError(f"cache merge: no store at {source}; name a store file (*.sqlite) or its --cache-dir folder")
    if into.exists() and source.resolve() == into.resolve():
        raise UserError(f"cache merge: {source} is also the store merged into (--into); name it once")
    try:
        db = connect_readonly(source)
    except sqlite3.Error as exc:
        raise store_error(source, exc, "opening it to merge") from None
    try:
        problems = [r[0] for r in db.execute("PRAGMA quick_check(5)")]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise store_error(source, exc, "checking it before the merge") from None
    finally:
        db.close()
    if problems != ["ok"]:
        raise StoreError(f"cache merge: the store {source} is damaged ({'; '.join(problems)}); see "
                         f"`robusteval cache check --cache-dir {source.parent}`; nothing was merged", damaged=True)
    if "responses" not in tables:
        raise UserError(f"cache merge: {source} is an SQLite file but not a response store (no responses table)")


def _merge_one(db: sqlite3.Connection, source: Path, into: Path) -> MergedSource:
    try:
        db.execute("ATTACH DATABASE ? AS src", (readonly_uri(source),))
    except sqlite3.Error as exc:
        raise store_error(source, exc, "opening it to merge") from None
    try:
        columns = {r[1] for r in db.execute("PRAGMA src.table_info(responses)")}
        extra = "s.extra" if "extra" in columns else "NULL"
        # `answer_checksum` over the source row's stored bytes (the order of store.CHECKED_FIELDS)
        fresh = (f"robusteval_checksum(s.key, CAST(s.text AS BLOB), s.prompt_tokens, s.completion_tokens, "
                 f"CAST(s.finish_reason AS BLOB), CAST(s.logprobs AS BLOB), CAST({extra} AS BLOB))")
        # every answer is verified again, as `cache check` does: a missing checksum is damaged, except in a
        # store from before checksums, whose answers are sealed as they are (as opening that store would)
        good = f"s.checksum IS {fresh}" if is_sealed(db, "src") else "1"
        db.execute("BEGIN IMMEDIATE")
        try:
            answers = db.execute("SELECT COUNT(*) FROM src.responses").fetchone()[0]
            damaged = db.execute(f"SELECT 'damaged', s.key, s.fingerprint FROM src.responses s WHERE NOT ({good}) "
                                 "ORDER BY s.key").fetchall()
            compared = db.execute(
                f"SELECT {fresh} = m.checksum, s.key, s.fingerprint FROM src.responses s "
                f"JOIN main.responses m ON m.key = s.key WHERE {good} ORDER BY s.key").fetchall()
            conflicts = [("conflict", key, fp) for same, key, fp in compared if not same]
            added = db.execute(
                f"INSERT OR IGNORE INTO main.responses ({COLUMNS}) SELECT s.key, s.fingerprint, s.request, s.text, "
                f"s.prompt_tokens, s.completion_tokens, s.finish_reason, s.logprobs, s.latency_s, s.created_at, "
                f"{extra}, {fresh} FROM src.responses s WHERE {good}").rowcount
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise store_error(into, exc, f"merging {source} into it") from None
    finally:
        db.execute("DETACH DATABASE src")
    return MergedSource(source, answers, added, len(compared) - len(conflicts), len(conflicts), len(damaged),
                        tuple(conflicts[:EXAMPLES] + damaged[:EXAMPLES]))


def describe(merged: list[MergedSource], into: Path) -> list[str]:
    """What the merge did, one line per source, then each conflict and damaged answer listed."""
    lines = []
    for m in merged:
        lines.append(f"{m.path}: {m.answers} answers: {m.added} added, {m.same} already there, "
                     f"{m.conflicts} conflicting (kept the one in {into}), {m.damaged} damaged (not copied)")
        for kind, key, fingerprint in m.examples:
            lines.append(f"  {kind}: {key} ({fingerprint})")
        if len(m.examples) < m.conflicts + m.damaged:
            lines.append(f"  ... {m.conflicts + m.damaged - len(m.examples)} more not listed")
    return lines
