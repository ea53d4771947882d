"""``robusteval score`` on inspect_ai logs (`scoring.inspect_log`). The logs in tests/fixtures/inspect/
were written by inspect_ai 0.3.285 itself (``make_logs.py`` there: a multiple_choice task of the five
questions of mcq_small.jsonl, 3 epochs, ``mockllm/model`` with scripted replies), as ``.eval`` (a zip
of zstd members) and ``.json``; the figures compared are the ones inspect wrote into them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.data.audit import DataAudit
from robusteval.data.mcq import REPEATED_TEXT
from robusteval.errors import UserError
from robusteval.scoring import inspect_log
from robusteval.scoring.flow import kind_of
from robusteval.scoring.inspect_log import MANY_TARGETS, NO_SAMPLES, NOT_MCQ, SAMPLE_ERROR, read_inspect_log

LOGS = Path(__file__).parents[1] / "fixtures" / "inspect"
JSON_LOG = LOGS / "mcq_small.json"


def inspect_accuracy(path: Path) -> float:
    """The accuracy inspect wrote into the log (``results.scores[choice].metrics.accuracy``)."""
    header = inspect_log._eval_log(path)[0] if path.suffix == ".eval" else json.loads(path.read_text())
    (choice,) = [s for s in header["results"]["scores"] if s["name"] == "choice"]
    return choice["metrics"]["accuracy"]["value"]


def score(path: Path, tmp_path: Path, *extra: str) -> dict:
    assert main(["score", str(path), "--out", str(tmp_path), "--run-id", "r", "--quiet", *extra]) == 0
    return json.loads((tmp_path / "r" / "results.json").read_text())


@pytest.mark.parametrize("name", ["mcq_small.eval", "mcq_small.json"])
def test_an_inspect_log_scores_as_inspect_scored_it(name, tmp_path):
    path = LOGS / name
    assert kind_of(path) == "inspect"
    results = score(path, tmp_path)
    assert results["scored"] == {"kind": "inspect", "files": [str(path)], "reader": "inspect"}
    family = results["metrics"]["mockllm/model"]["mcq_small"]
    assert family["samples"] == 15 and family["failed"] == 0 and family["invalid"] == 3  # 5 questions x 3 epochs
    assert family["accuracy"]["value"] == pytest.approx(inspect_accuracy(path), abs=1e-9)
    assert family["accuracy"]["value"] == pytest.approx(10 / 15, abs=1e-9)
    assert list(family["variants"]) == ["base"] and family["accuracy"]["n"] == 5
    # across each question's 3 epochs, the share of pairs that agree (an unreadable reply agrees with none):
    # q1 B,B,C 1/3; q2 A,A,A 1; q3 C,-,C 1/3; q4 A,D,D 1/3; q5 -,-,A 0
    assert family["consistency_rate"]["value"] == pytest.approx(2 / 5, abs=1e-9)
    (source,) = results["data"]["sources"]
    assert (source["rows_read"], source["rows_used"], source["left_out"]) == (15, 15, {})
    assert "3 epoch(s)" in source["notes"][0] and "choice accuracy 0.6667" in source["notes"][0]


def test_every_reply_is_right_where_inspect_marked_it_correct(tmp_path):
    log = json.loads(JSON_LOG.read_text())
    marked = {(s["id"], s["epoch"] - 1): s["scores"]["choice"]["value"] == "C" for s in log["samples"]}
    score(JSON_LOG, tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "r" / "samples.jsonl").read_text().splitlines()]
    ours = {(r["item_id"], r["sample"]): r["correct"] for r in rows}
    assert ours == marked and sorted({r["sample"] for r in rows}) == [0, 1, 2]
    assert {r["category"] for r in rows} == {"astronomy", "arithmetic", "biology", "physics"}


def test_samples_that_are_not_single_answer_multiple_choice_are_counted(tmp_path):
    log = json.loads(JSON_LOG.read_text())
    samples = log["samples"]
    del samples[0]["choices"]  # q1 epoch 1
    samples[1]["target"] = ["A", "B"]  # q2 epoch 1: two correct choices
    samples[2]["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}  # q3 epoch 1
    for s in samples:
        if s["id"] == "q4":  # "Five", "Seven", "Eight", "Six": a repeated option text, in every epoch
            s["choices"][1] = "Five"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(log))
    audit = DataAudit()
    placed = list(read_inspect_log(edited, audit, None))
    (source,) = audit.sources
    assert (source.rows_read, source.rows_used) == (15, 13)
    assert source.left_out == {NOT_MCQ: 1, MANY_TARGETS: 1}
    assert source.anomalies == {SAMPLE_ERROR: 1, REPEATED_TEXT: 1}  # the loader's, once per question
    failed = [p for p in placed if p.text is None]
    assert [(p.item.id, p.sample) for p in failed] == [("q3", 0)]


def test_a_log_without_samples_says_so(tmp_path, capsys):
    log = json.loads(JSON_LOG.read_text())
    log["samples"] = []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(log, indent=2))  # as inspect indents it: still told from its first bytes
    assert kind_of(empty) == "inspect"
    assert main(["score", str(empty), "--out", str(tmp_path), "--quiet"]) == 2
    assert NO_SAMPLES in capsys.readouterr().err


def test_broken_logs_are_one_message(tmp_path):
    not_zip = tmp_path / "x.eval"
    not_zip.write_text("hello")
    no_header = tmp_path / "y.eval"
    with zipfile.ZipFile(no_header, "w") as z:
        z.writestr("samples/1_epoch_1.json", "{}")
    for path, message in ((not_zip, "not a zip file"), (no_header, "no header.json")):
        with pytest.raises(UserError, match=message):
            list(read_inspect_log(path, DataAudit(), None))
        assert main(["score", str(path), "--out", str(tmp_path), "--quiet"]) == 2


def test_a_zstd_log_without_a_zstd_decoder_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(UserError, match=r"zstd-compressed .* `pip install zstandard`"):
        list(read_inspect_log(LOGS / "mcq_small.eval", DataAudit(), None))


def test_epochs_that_inspect_reduces_by_mode_are_said_to_differ(tmp_path):
    """inspect's accuracy of mcq_small_mode.eval is over each question's vote of its 3 epochs (0.8);
    robusteval's is over every reply (the same 15 replies as mcq_small: 10/15), and the audit says why."""
    path = LOGS / "mcq_small_mode.eval"
    results = score(path, tmp_path)
    assert inspect_accuracy(path) == pytest.approx(0.8, abs=1e-9)
    assert results["metrics"]["mockllm/model"]["mcq_small_mode"]["accuracy"]["value"] == pytest.approx(10 / 15)
    (note,) = results["data"]["sources"][0]["notes"]
    assert "choice accuracy 0.8000 (epochs reduced by mode)" in note
    assert "inspect reduces each question's 3 epochs by mode before its accuracy" in note


INSPECT_PYTHON = Path(__file__).parents[2] / ".venv-inspect" / "bin" / "python"


def test_logs_inspect_ai_writes_now_score_as_inspect_scored_them(tmp_path):
    """Fresh logs, made in this test by inspect_ai 0.3.285 itself (`make inspect-peer`: a venv of its own,
    its pins clash with ours) with ``make_logs.py``, score as inspect scored them: the kept fixtures are
    not a stale copy of what inspect writes."""
    if not INSPECT_PYTHON.exists():
        why = f"{INSPECT_PYTHON} not found (make inspect-peer installs inspect-ai in a venv of its own)"
        if os.environ.get("ROBUSTEVAL_REQUIRE_INSPECT"):
            pytest.fail(why)  # CI: logs made by inspect itself must be scored, never skipped
        pytest.skip(why)
    made = tmp_path / "logs"
    made.mkdir()
    subprocess.run([str(INSPECT_PYTHON), str(LOGS / "make_logs.py"), str(made)], check=True, timeout=600,
                   capture_output=True, env={**os.environ, "INSPECT_LOG_DIR": str(tmp_path / "inspect")})
    for name, inspects in (("mcq_small.eval", 10 / 15), ("mcq_small.json", 10 / 15), ("mcq_small_mode.eval", 0.8)):
        path = made / name
        assert inspect_accuracy(path) == pytest.approx(inspects, abs=1e-9)  # inspect's own figure, as written
        family = score(path, tmp_path / name)["metrics"]["mockllm/model"][path.stem]
        assert family["samples"] == 15
        # robusteval averages every reply; inspect's mode reducer votes per question first (the audit says so)
        assert family["accuracy"]["value"] == pytest.approx(10 / 15, abs=1e-9)
