"""ledger.py: the one SQLite ledger code the Batch API's and the export's ledgers share: all of a
write or none of it, lookups of more ids than SQLite binds at once, one message for a folder it cannot
write, and a second process sees what the first committed."""

from __future__ import annotations

import pytest

from robusteval.engine.exchange import Exported, ExportLedger
from robusteval.errors import UserError
from robusteval.ledger import CHUNK, Ledger
from robusteval.models.openai_batch import BatchLedger
from robusteval.types import GenParams, Message, Request

SCHEMA = "CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, v INTEGER NOT NULL);"


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite", SCHEMA, "test ledger")
    with pytest.raises(RuntimeError), ledger.transaction() as db:
        db.execute("INSERT INTO t VALUES ('a', 1)")
        raise RuntimeError("crash halfway")
    assert ledger.query("SELECT COUNT(*) FROM t") == [(0,)]
    with ledger.transaction() as db:
        db.execute("INSERT INTO t VALUES ('a', 1)")
    assert ledger.query("SELECT id, v FROM t") == [("a", 1)]
    ledger.close()


def test_lookups_of_more_ids_than_one_query_binds(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite", SCHEMA, "test ledger")
    ids = [f"id{i}" for i in range(CHUNK * 2 + 7)]
    with ledger.transaction() as db:
        db.executemany("INSERT INTO t VALUES (?, ?)", [(k, i) for i, k in enumerate(ids)])
    rows = dict(ledger.rows_for("SELECT id, v FROM t WHERE id IN ({})", [*ids, "absent"]))
    assert len(rows) == len(ids) and rows["id0"] == 0 and rows[ids[-1]] == len(ids) - 1
    ledger.close()


@pytest.mark.parametrize(("cls", "what"), [(BatchLedger, "batch ledger"), (ExportLedger, "export ledger")])
def test_a_folder_it_cannot_write_is_one_message_naming_the_ledger(tmp_path, cls, what):
    (tmp_path / "a-file").write_text("not a folder")  # fails for root too, unlike a read-only folder
    with pytest.raises(UserError, match=f"cannot open the {what} .*a-file/x.sqlite .*make its folder writable"):
        cls(tmp_path / "a-file" / "x.sqlite")


def test_both_ledgers_write_through_the_shared_transaction(tmp_path):
    """What one ledger object committed, another (a second process's) reads; forget is one write."""
    batches = BatchLedger(tmp_path / "b.sqlite")
    batches.record("batch-1", "http://a/v1", [f"c{i}" for i in range(CHUNK + 3)])
    batches.forget("batch-1", ["c0", "c1"])
    again = BatchLedger(tmp_path / "b.sqlite")
    assert again.pending() == {"batch-1": CHUNK + 1}
    assert again.lookup(["c0", "c2", f"c{CHUNK + 2}"]) == {"c2": "batch-1", f"c{CHUNK + 2}": "batch-1"}
    batches.close(), again.close()

    request = Request((Message("user", "hi"),), GenParams(max_tokens=4))
    exports = ExportLedger(tmp_path / "e.sqlite")
    exports.record([Exported(f"k{i}", "fp", request, "run mcq") for i in range(3)])
    exports.forget(["k0"])
    other = ExportLedger(tmp_path / "e.sqlite")
    assert other.pending() == {"run mcq": 2}
    found = other.lookup(["k0", "k1"])
    assert list(found) == ["k1"] and found["k1"].request == request and found["k1"].fingerprint == "fp"
    exports.close(), other.close()


def test_an_export_ledger_of_an_earlier_version_gains_the_model_column(tmp_path):
    """A ledger written before the exported model name was recorded: its rows still import (the model
    is not checked for them) and new rows record it."""
    import sqlite3

    path = tmp_path / "e.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE exported (custom_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, "
                "request TEXT NOT NULL, run TEXT NOT NULL, exported_at REAL NOT NULL)")
    con.commit()
    con.close()
    request = Request((Message("user", "hi"),), GenParams(max_tokens=4))
    first, second = ExportLedger(path), ExportLedger(path)  # the second finds the column added
    first.record([Exported("k0", "fp", request, "run a", "m")])
    assert second.lookup(["k0"])["k0"].model == "m" and second.pending() == {"run a": 1}
    first.close(), second.close()
