"""A file none of whose replies is given (each one failed, null, blank or without its field) is one
message naming the fields looked for and exit 2, whatever kind of file ``score`` reads: scored, it
would be a run of n/a that exits 0, as if the file had been read. One given reply is enough (the
others are failed requests, counted failed as a run counts them). MMLU-Pro's released files are
checked on the real releases in test_score_mmlu_pro_releases.py; here a generic replies file, an
lm-evaluation-harness sample log (rows as SCORE's option-order task writes them, test_score_inputs.py)
and a grid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.data.mcq import load_items

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mcq_small.jsonl"
LOG = "samples_score_option_order_robustness_mmlu_pro_2024-11-26T00-00-00.123456.jsonl"
LETTERS = "ABCDEFGHIJ"
GENERIC_FIELDS = "('reply' or 'response' or 'text' or 'generated_text' missing, null or blank in every row)"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def generic(replies: list) -> list[dict]:
    return [{"item_id": q, "variant": "gold@A", **({} if r == "drop" else {"reply": r})}
            for q, r in zip(("q1", "q2", "q3"), replies)]


@pytest.mark.parametrize("replies", [[None, None, None], ["", " ", "\n"], ["drop", "drop", "drop"],
                                     [None, "", "drop"]], ids=["null", "blank", "absent", "mixed"])
def test_generic_replies_without_one_reply(tmp_path, cli_run, replies):
    path = write_jsonl(tmp_path / "r.jsonl", generic(replies))
    line = cli_run("score", path, "--data", FIXTURE, "--families", "order", "--out", tmp_path / "runs").refusal()
    assert f"{path}: none of its 3 rows gives a reply {GENERIC_FIELDS}: nothing to score" in line, line


def test_generic_replies_with_one_reply_score_the_rest_as_failed(tmp_path, cli_run):
    path = write_jsonl(tmp_path / "r.jsonl", generic([None, "The best answer is B", "drop"]))
    results, _ = cli_run("score", path, "--data", FIXTURE, "--families", "order", "--out", tmp_path / "runs",
                         "--run-id", "r", "--quiet").written()
    order = results["metrics"]["r"]["order"]
    assert (order["samples"], order["failed"]) == (2, 1)


def lm_eval_rows(resps: list) -> list[dict]:
    """One row per reply, each on its own question (gold not moved), as SCORE's option-order task writes it."""
    rows = []
    for n, (item, r) in enumerate(zip(load_items(str(FIXTURE)), resps)):
        doc = {"question_id": item.id, "question": item.question, "options": list(item.options),
               "answer": LETTERS[item.answer], "answer_index": item.answer, "original_answer_index": item.answer,
               "always_same_option": LETTERS[item.answer], "category": "misc"}
        rows.append({"doc_id": n, "doc": doc, "target": LETTERS[item.answer], "arguments": [["p", {"max_gen_toks": 8}]],
                     "resps": r, "filtered_resps": r[0] if r else [], "filter": "none"})
    return rows


@pytest.mark.parametrize("resps", [[[[""]]], [[], [[]]], [[["  "]], [[None]]]], ids=["empty", "none", "blank"])
def test_an_lm_eval_log_without_one_reply(tmp_path, cli_run, resps):
    path = write_jsonl(tmp_path / LOG, lm_eval_rows(resps))
    line = cli_run("score", path, "--model", "m", "--out", tmp_path / "runs").refusal()
    assert f"{path}: none of its {len(resps)} rows gives a reply ('resps' missing, null or blank" in line, line


def test_an_lm_eval_log_with_one_reply_scores(tmp_path, cli_run):
    path = write_jsonl(tmp_path / LOG, lm_eval_rows([[], [[""]], [["The best answer is B"]]]))
    results, _ = cli_run("score", path, "--model", "m", "--out", tmp_path / "runs", "--run-id", "r",
                         "--quiet").written()
    order = results["metrics"]["m"]["order"]
    assert (order["samples"], order["failed"], order["invalid"]) == (3, 1, 1)  # no resps: failed; "": unreadable


def test_a_grid_without_one_verdict(tmp_path, cli_run):
    """A grid holds verdicts, not replies: one with no readable ``correct`` is refused as before."""
    grid = tmp_path / "g.csv"
    grid.write_text("item,variant,correct\nq1,A.,\nq2,A.,\n")
    assert "no usable grid rows among 2" in cli_run("score", grid, "--out", tmp_path / "runs").refusal()


def test_a_json_list_that_is_not_a_release_and_replies_placed_nowhere_are_one_line(tmp_path, cli_run):
    """A ``.json`` list is read as MMLU-Pro's released answers (the zip's member, unzipped): one of
    generic replies says so; generic replies of which none can be placed give the audit on one line."""
    listed = tmp_path / "r.json"
    listed.write_text(json.dumps(generic(["The best answer is A"] * 3)), encoding="utf-8")
    assert cli_run("score", listed, "--out", tmp_path / "runs").refusal() == (
        f"error: {listed}: no row is an MMLU-Pro question with its options and gold (3 x no question); a .zip or a "
        ".json list is read as MMLU-Pro's released answers (generic replies are JSONL: an object per line)")
    nowhere = write_jsonl(tmp_path / "r.jsonl", [{"item_id": "nope", "variant": "gold@A", "reply": "A"}])
    line = cli_run("score", nowhere, "--data", FIXTURE, "--families", "order", "--out", tmp_path / "runs").refusal()
    assert line.startswith("error: score: no reply could be placed on an item and variant; the data audit: ")
    assert f"{nowhere}: 1 rows read, 0 used; left out 1: item id not in the dataset (e.g. line 1)" in line
