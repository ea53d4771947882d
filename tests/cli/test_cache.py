"""`robusteval cache clear`: the store's answers and both ledgers beside it (B5, N11)."""

from __future__ import annotations

from robusteval.cli import main
from robusteval.engine.exchange import Exported, ExportLedger
from robusteval.engine.store import Store
from robusteval.models.openai_batch import BatchLedger
from robusteval.types import Completion, GenParams, Message, Request


def test_clear_forgets_the_exported_requests_and_pending_batches_too(tmp_path, capsys):
    request = Request((Message("user", "hi"),), GenParams(max_tokens=4))
    store = Store(tmp_path / "responses.sqlite")
    store.put("k0", "openai:m", request, Completion(text="x"), 0.1)
    store.close()
    exports = ExportLedger(tmp_path / "responses.exports.sqlite")
    exports.record([Exported("k1", "openai:m", request, "run mcq")])
    exports.close()
    batches = BatchLedger(tmp_path / "responses.batches.sqlite")
    batches.record("batch_1", "http://127.0.0.1:1/v1", ["k2"])
    batches.close()
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "deleted 1 responses" in out and "responses.exports.sqlite" in out and "responses.batches.sqlite" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.sqlite"]
    # a ledger left alone, its store already gone, is cleared all the same
    ledger = ExportLedger(tmp_path / "responses.exports.sqlite")
    ledger.record([Exported("k1", "openai:m", request, "run mcq")])
    ledger.close()
    (tmp_path / "responses.sqlite").unlink()
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "removed the ledgers" in capsys.readouterr().out and not list(tmp_path.iterdir())
