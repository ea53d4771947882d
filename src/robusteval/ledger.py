"""A small SQLite file beside the response store that records requests sent off to be answered later:
the Batch API's ledger (`models.openai_batch.BatchLedger`) and the export ledger
(`engine.exchange.ExportLedger`).

One piece of code opens the file, writes in transactions and reads by id, because the two must behave
the same where it matters: several processes may share a cache folder (a busy timeout, an immediate
transaction per write, so a crash or a concurrent writer never leaves half a batch recorded), an
unwritable folder is one message naming the file, and a lookup of many ids stays under SQLite's limit
on bound parameters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from robusteval.errors import UserError

CHUNK = 500  # ids bound in one query: below SQLite's limit on bound parameters (999 in older builds)
LEDGERS = ("exports", "batches")  # the ledgers beside a store: responses.exports.sqlite, responses.batches.sqlite


def beside(store_path: Path | str, kind: str) -> Path:
    """The ledger ``kind`` (one of `LEDGERS`) beside the store at ``store_path``: ``responses.<kind>.sqlite``."""
    store_path = Path(store_path)
    return store_path.with_name(f"{store_path.stem}.{kind}.sqlite")


def sqlite_files(path: Path) -> list[Path]:
    """An SQLite file and the files SQLite keeps beside it (-wal, -shm, -journal), present or not."""
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


class Ledger:
    """A SQLite file of ``schema`` (``CREATE TABLE IF NOT EXISTS ...``); ``what`` names it in messages."""

    def __init__(self, path: Path | str, schema: str, what: str):
        self.path = path
        try:
            self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
            self._db.executescript("PRAGMA busy_timeout=60000;\n" + schema)
        except sqlite3.Error as exc:
            raise UserError(f"cannot open the {what} {path} (SQLite: {exc}); make its folder writable "
                            "or use another --cache-dir") from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All the writes inside, or none of them (``BEGIN IMMEDIATE``: one writer at a time)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def rows_for(self, select: str, ids: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``select`` (a query ending in ``IN ({})``) for ``ids``, read in chunks."""
        for start in range(0, len(ids), CHUNK):
            chunk = list(ids[start:start + CHUNK])
            yield from self._db.execute(select.format(",".join("?" * len(chunk))), chunk)

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        self._db.close()
