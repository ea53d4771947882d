"""`scoring.replies`: every field ``robusteval score`` reads from a replies file, an lm-eval sample log or
an MMLU-Pro zip is checked, and a bad one is exit 2 and one line naming the file and its line (or
row), never a traceback or a number read through ``str()``/``int()``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.scoring import replies

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mcq_small.jsonl"
# q2/q3 under --families order, two right and two wrong each (README N5's r_base.jsonl)
BASE = [{"item_id": q, "variant": f"gold@{at}", "reply": f"The best answer is {says}"}
        for q in ("q2", "q3") for at, says in (("A", "A"), ("B", "D"), ("C", "C"), ("D", "B"))]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def refused(capsys, *argv: str | Path) -> str:
    """The one line ``robusteval ARGV`` prints on exit 2 (asserted: exit 2, one line, no traceback)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in out + err and len(lines) == 1, (code, err)
    return lines[0]


def score(path: Path, tmp_path: Path, *more: str) -> list[str]:
    return ["score", str(path), "--data", str(FIXTURE), "--families", "order", "--out", str(tmp_path / "runs"),
            "--quiet", *more]


@pytest.mark.parametrize(("sample", "says"), [
    (-1, "sample=-1: out of range; it must be in [0, 9999]"),  # once: the previous variant's answer overwritten
    (-5, "sample=-5: out of range"),
    (10**4, "sample=10000: out of range"),
    (1e30, "'sample' must be a draw's number, an integer from 0, got a number (1e+30)"),
    ("1st", "got text (\"1st\")"),
    ("x", "got text (\"x\")"),
    ([1], "got a list ([1])"),
    (True, "got a boolean (true)"),
    (2.0, "got a number (2.0)"),
])
def test_a_sample_that_is_not_a_draws_number_is_refused_with_its_line(tmp_path, capsys, sample, says):
    path = write_jsonl(tmp_path / "r.jsonl", [*BASE, {**BASE[2], "reply": "The best answer is D", "sample": sample}])
    line = refused(capsys, *score(path, tmp_path))
    assert f"{path} line 9: " in line and says in line


def test_a_second_draw_is_still_scored_beside_the_first(tmp_path, capsys):
    path = write_jsonl(tmp_path / "r.jsonl", [*BASE, {**BASE[2], "reply": "The best answer is D", "sample": 1}])
    assert main(score(path, tmp_path, "--run-id", "s1")) == 0
    order = json.loads((tmp_path / "runs" / "s1" / "results.json").read_text())["metrics"]["r"]["order"]
    assert order["samples"] == 9


@pytest.mark.parametrize(("reply", "shown"), [
    (["The best answer is A"], 'a list (["The best answer is A"])'), (42, "a number (42)"),
    (True, "a boolean (true)"), ({"text": "A"}, 'an object ({"text": "A"})'),
])
def test_a_reply_that_is_not_text_is_refused(tmp_path, capsys, reply, shown):
    path = write_jsonl(tmp_path / "r.jsonl", [*BASE[:3], {**BASE[3], "reply": reply}])
    line = refused(capsys, *score(path, tmp_path))
    assert f"{path} line 4: 'reply' must be the reply's text" in line and shown in line


def test_an_item_id_given_as_an_object_is_refused(tmp_path, capsys):
    path = write_jsonl(tmp_path / "r.jsonl", [{**BASE[0], "item_id": {"x": 1}}])
    line = refused(capsys, *score(path, tmp_path))
    assert f"{path} line 1: 'item_id' must be text or a number, got an object" in line


# ------------------------------------------------------------------ lm-eval --log_samples docs

def order_doc(**fields) -> dict:
    """A row of SCORE's option-order log (q1's gold, Mercury, moved from B to A), with ``fields`` changed
    (None: the field left out)."""
    doc = {"question_id": "q1", "question": "Which planet is closest to the Sun?",
           "options": ["Mercury", "Venus", "Earth", "Mars"], "answer": "A", "answer_index": 0,
           "original_answer_index": 1, "always_same_option": "A", "prompt": "..."}
    doc = {k: v for k, v in {**doc, **fields}.items() if v is not None}
    return {"doc_id": 0, "doc": doc, "arguments": [["p", {}]], "resps": [["The best answer is A"]]}


LOG = "samples_score_option_order_robustness_mmlu_pro_2024-11-26T00-00-00.jsonl"


@pytest.mark.parametrize(("fields", "says"), [
    ({"answer_index": 7}, "doc 'answer_index' must be the index of one of its 4 options (an integer from 0 to 3), "
                          "got a number (7)"),
    ({"answer_index": "x"}, "doc 'answer_index' must be the index of one of its 4 options"),
    ({"original_answer_index": -1}, "doc 'original_answer_index' must be the index"),
    ({"answer_index": None, "always_same_option": None}, "has neither"),
    ({"always_same_option": "Z"}, "doc 'always_same_option' must be one of the option letters A, B, C, D, got"),
    ({"always_same_option": "AB"}, "doc 'always_same_option' must be one of the option letters"),
])
def test_an_lm_eval_doc_with_a_bad_option_field_is_refused_with_its_line(tmp_path, capsys, fields, says):
    good = order_doc()
    path = write_jsonl(tmp_path / LOG, [good, {**order_doc(**fields), "doc_id": 1}])
    line = refused(capsys, "score", path, "--out", tmp_path / "runs")
    assert f"{path} line 2: " in line and says in line, line


def test_a_doc_without_always_same_option_is_named_by_where_the_gold_was_moved(tmp_path, capsys):
    path = write_jsonl(tmp_path / LOG, [order_doc(always_same_option=None)])
    placed = list(replies.read_lm_eval(path, replies.DataAudit(), "m", {}))
    assert [p.variant.name for p in placed] == ["gold@A"]  # answer_index 0 (swapped), not the original 1


# ------------------------------------------------------------------ MMLU-Pro released zips

ROW = {"question_id": 70, "question": "Which planet is closest to the Sun?", "options": ["Mercury", "Venus"],
       "answer": "A", "answer_index": 0, "category": "physics", "generated_text": "The answer is (A)"}


def released_zip(tmp_path: Path, member: str | bytes) -> Path:
    path = tmp_path / "model_outputs_m_5shots.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("model_outputs_m_5shots.json", member)
    return path


def test_a_zip_member_nested_100000_deep_is_refused(tmp_path, capsys):
    path = released_zip(tmp_path, "[" * 100_000 + "]" * 100_000)
    line = refused(capsys, "score", path, "--out", tmp_path / "runs")
    assert f"{path}:model_outputs_m_5shots.json: JSON nested 100000 deep" in line


def test_a_zip_member_over_the_cap_is_refused_before_it_is_read_whole(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(replies, "MAX_ZIP_MEMBER", 1000)
    path = released_zip(tmp_path, json.dumps([ROW]) + " " * 1000)
    line = refused(capsys, "score", path, "--out", tmp_path / "runs")
    assert f"{path}: model_outputs_m_5shots.json unpacks to more than 1,000 bytes" in line


@pytest.mark.parametrize("text", [["The answer is (A)"], 7])
def test_a_released_reply_that_is_not_text_is_refused(tmp_path, capsys, text):
    path = released_zip(tmp_path, json.dumps([ROW, {**ROW, "question_id": 71, "generated_text": text}]))
    line = refused(capsys, "score", path, "--out", tmp_path / "runs")
    assert f"{path} row 2: 'generated_text' must be the reply's text" in line


def test_a_released_zip_still_scores(tmp_path, capsys):
    path = released_zip(tmp_path, json.dumps([ROW, {**ROW, "question_id": 71, "generated_text": None}]))
    assert main(["score", str(path), "--out", str(tmp_path / "runs"), "--run-id", "z", "--quiet"]) == 0
    metrics = json.loads((tmp_path / "runs" / "z" / "results.json").read_text())["metrics"]["m"]["released"]
    assert metrics["samples"] == 2 and metrics["failed"] == 1
