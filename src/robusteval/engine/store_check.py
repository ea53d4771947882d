"""`robusteval cache check`: is the response store whole, and is every answer the one that was stored?

Two checks, read-only (a damaged store is inspected, never changed): SQLite's own ``PRAGMA
integrity_check`` (pages, indexes, free list), then every answer's checksum against its stored bytes
(`store.answer_checksum`). A store SQLite cannot open at all is reported as such.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from robusteval.engine.store import CHECKED_FIELDS, SCHEMA_VERSION, answer_checksum, connect_readonly

MAX_PROBLEMS = 20  # integrity_check lines kept: enough to see what kind of damage it is


@dataclass(frozen=True)
class StoreCheck:
    path: str
    problems: tuple[str, ...]  # SQLite's findings (or why it could not be opened); empty when whole
    answers: int  # rows read in the checksum pass
    changed: tuple[str, ...]  # keys whose bytes no longer match their checksum (served never again)
    unsealed: int  # answers without a checksum yet: written by an earlier version, sealed at the next run

    @property
    def ok(self) -> bool:
        return not self.problems and not self.changed


def check_store(path: Path) -> StoreCheck:
    """Run both checks on the store at ``path`` without writing to it."""
    try:
        db = connect_readonly(path)
    except sqlite3.Error as exc:
        return StoreCheck(str(path), (f"SQLite cannot open it: {exc}",), 0, (), 0)
    try:
        return _check(db, path)
    finally:
        db.close()


def _check(db: sqlite3.Connection, path: Path) -> StoreCheck:
    try:
        problems = tuple(row[0] for row in db.execute(f"PRAGMA integrity_check({MAX_PROBLEMS})"))
    except sqlite3.Error as exc:
        return StoreCheck(str(path), (f"SQLite cannot read it: {exc}",), 0, (), 0)
    problems = () if problems == ("ok",) else problems
    answers, unsealed, changed = 0, 0, []
    try:
        if not is_sealed(db):
            answers = unsealed = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        else:
            for row in db.execute(f"SELECT {CHECKED_FIELDS}, checksum FROM responses"):
                answers += 1
                if row[7] != answer_checksum(*row[:7]):
                    changed.append(str(row[0]))
    except sqlite3.Error as exc:
        problems += (f"reading the answers stopped after {answers}: {exc}",)
    return StoreCheck(str(path), problems, answers, tuple(changed), unsealed)


def is_sealed(db: sqlite3.Connection, schema: str = "main") -> bool:
    """Whether the store ``schema`` names on ``db`` seals every answer with a checksum (its version has
    them): then an answer whose checksum is missing or wrong is changed. An earlier version's answers
    have none yet; opening that store for writing seals them as they are."""
    columns = {r[1] for r in db.execute(f"PRAGMA {schema}.table_info(responses)")}
    return "checksum" in columns and db.execute(f"PRAGMA {schema}.user_version").fetchone()[0] >= SCHEMA_VERSION


def describe(check: StoreCheck) -> list[str]:
    """The report `cache check` prints, one line each."""
    cache_dir = Path(check.path).parent
    lines = [f"store: {check.path}"]
    lines.append("SQLite integrity check: ok" if not check.problems else
                 f"SQLite integrity check: {len(check.problems)} problem(s)")
    lines += [f"  {p}" for p in check.problems]
    if check.problems and not check.answers:  # nothing could be read: no answers line to speak of
        lines.append(f"to start afresh: robusteval cache clear --cache-dir {cache_dir} (deletes every stored "
                     f"answer), or use a new --cache-dir")
        return lines
    lines.append(f"answers: {check.answers}; checksums: {check.answers - len(check.changed) - check.unsealed} match, "
                 f"{len(check.changed)} changed" + (f", {check.unsealed} not yet sealed (written by an earlier "
                                                    "version; the next run adds their checksums)"
                                                    if check.unsealed else ""))
    lines += [f"  changed: {key}" for key in check.changed[:MAX_PROBLEMS]]
    if check.changed and not check.problems:
        lines.append("changed answers are never served: the next run asks them again and stores the new answer")
    if check.problems:
        lines.append(f"to start afresh: robusteval cache clear --cache-dir {cache_dir} (deletes every stored "
                     f"answer), or use a new --cache-dir")
    return lines
