"""What ``robusteval score`` takes in, and what it refuses or counts: generic replies whose item,
variant or reply is missing or repeated (counted in the data audit, never dropped silently),
lm-evaluation-harness SCORE sample logs (variants recovered from their docs), and user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.data.audit import DataAudit
from robusteval.data.mcq import load_items
from robusteval.probes.design import expand
from robusteval.scoring.flow import kind_of
from robusteval.scoring.grid import BAD_CORRECT, NO_ITEM, REPEATED_CELL, load_grid
from robusteval.scoring.replies import NO_REPLY_FIELD, UNKNOWN_ITEM, UNKNOWN_VARIANT, read_lm_eval

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mcq_small.jsonl"
LETTERS = "ABCDEFGHIJ"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_generic_replies_that_cannot_be_placed_are_counted(tmp_path, capsys):
    replies = write_jsonl(tmp_path / "replies.jsonl", [
        {"item_id": "q1", "variant": "gold@A", "reply": "The best answer is B"},  # Mercury (gold) moved to A: wrong
        {"item_id": "q1", "variant": "gold@B", "reply": "The best answer is B"},  # published order: right
        {"item_id": "q1", "variant": "gold@B", "reply": "The best answer is C"},  # the same cell again
        {"item_id": "nope", "variant": "gold@A", "reply": "The best answer is A"},
        {"item_id": "q2", "variant": "gold@Z", "reply": "The best answer is A"},
        {"item_id": "q2", "variant": "gold@A"},
        {"item_id": "q3", "variant": "gold@C", "reply": None},  # a failed request: failed, never wrong
    ])
    assert main(["score", str(replies), "--data", str(FIXTURE), "--families", "order", "--out", str(tmp_path),
                 "--run-id", "r", "--quiet"]) == 0
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    audit = {s["source"]: s for s in results["data"]["sources"]}
    mine = audit[str(replies)]
    assert mine["rows_read"] == 7 and mine["rows_used"] == 4
    assert mine["left_out"] == {UNKNOWN_ITEM: 1, UNKNOWN_VARIANT: 1, NO_REPLY_FIELD: 1}
    assert audit["replies"]["left_out"] == {
        "a second reply to the same (model, family, item, variant, sample): the first kept": 1}
    order = results["metrics"]["replies"]["order"]
    assert order["samples"] == 3 and order["failed"] == 1 and order["accuracy"]["value"] == pytest.approx(0.5)
    assert results["failures"] and results["failures"][0]["item_id"] == "q3"
    printed = capsys.readouterr()
    assert "left out 1: item id not in the dataset" in printed.out + printed.err


def test_grid_rows_left_out_are_counted(tmp_path):
    grid = tmp_path / "g.csv"
    grid.write_text("item,variant,correct\nq1,A.,1\n,A.,1\nq1,A.,0\nq2,A.,maybe\nq2,A.,no\n")
    audit = DataAudit().source("g")
    cells = load_grid(grid, audit)
    assert [(c.item_id, c.correct) for c in cells] == [("q1", True), ("q2", False)]
    assert dict(audit.left_out) == {NO_ITEM: 1, REPEATED_CELL: 1, BAD_CORRECT: 1}
    assert audit.examples[REPEATED_CELL] == ["line 4"]


def score_doc(item, swapped_to: int, category: str = "misc") -> dict:
    """A doc as SCORE's option-order task writes it: the gold swapped with the option at ``swapped_to``."""
    options = list(item.options)
    options[swapped_to], options[item.answer] = options[item.answer], options[swapped_to]
    return {"question_id": item.id, "question": item.question, "options": options, "answer": LETTERS[swapped_to],
            "answer_index": swapped_to, "original_answer_index": item.answer, "always_same_option": LETTERS[swapped_to],
            "category": category, "prompt": "...", "options_format": "\n{letter}: {option}"}


def test_lm_eval_score_option_order_logs_recover_the_variants(tmp_path):
    items = load_items(str(FIXTURE))[:3]
    rows, n = [], 0
    for item in items:
        for to in range(len(item.options)):
            reply = f"The best answer is {LETTERS[to] if to % 2 == 0 else 'A'}"  # right at A, C; A otherwise
            rows.append({"doc_id": n, "doc": score_doc(item, to), "target": LETTERS[to],
                         "arguments": [[f"prompt {n}", {"max_gen_toks": 1024}]], "resps": [[reply]],
                         "filtered_resps": [reply], "filter": "none", "metrics": ["options_consistency_rate"]})
            n += 1
    path = write_jsonl(tmp_path / "samples_score_option_order_robustness_mmlu_pro_2024-11-26T00-00-00.123456.jsonl",
                       rows)
    assert kind_of(path) == "lm-eval"
    placed = list(read_lm_eval(path, DataAudit(), "m", {}))
    assert len(placed) == len(rows)
    for p, item in zip(placed, [i for i in items for _ in i.options]):
        ours = {v.name: v for v in expand(item, ("order",))}
        # the item is recovered as published, and each variant is the one `--families order` asks
        assert (p.item.options, p.item.answer) == (item.options, item.answer)
        assert p.variant.family == "order" and p.variant.order == ours[p.variant.name].order
    assert main(["score", str(path), "--model", "m", "--out", str(tmp_path), "--run-id", "r", "--quiet"]) == 0
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    fm = results["metrics"]["m"]["order"]
    assert set(fm["variants"]) == {"gold@A", "gold@B", "gold@C", "gold@D"}
    assert fm["variants"]["gold@A"]["accuracy"]["value"] == 1.0 and fm["variants"]["gold@B"]["accuracy"]["value"] == 0
    assert fm["variants"]["gold@C"]["accuracy"]["value"] == 1.0


def test_lm_eval_prompt_logs_name_variants_by_prompt_id_and_read_numeral_labels(tmp_path):
    item = load_items(str(FIXTURE))[0]
    rows = [{"doc_id": k, "doc": {"question_id": item.id, "question": item.question, "options": list(item.options),
                                  "answer": LETTERS[item.answer], "answer_index": item.answer, "prompt_id": k,
                                  "options_format": fmt},
             "arguments": [["p", {}]], "resps": [[f"The best answer is {label}"]]}
            for k, (fmt, label) in enumerate([("\n{letter}. {option}", "B"), ("\n{numeral}) {option}", "2"),
                                              ("\n{roman_numeral}: {option}", "I")])]
    path = write_jsonl(tmp_path / "samples_option_format_robustness_mmlu_pro_2024-11-26T00-00-00.jsonl", rows)
    assert main(["score", str(path), "--model", "m", "--out", str(tmp_path), "--run-id", "r", "--quiet"]) == 0
    variants = json.loads((tmp_path / "r" / "results.json").read_text())["metrics"]["m"]["format"]["variants"]
    assert {name: v["accuracy"]["value"] for name, v in variants.items()} == {
        "score-format-0": 1.0, "score-format-1": 1.0, "score-format-2": 0.0}  # gold is Mercury, the second


def test_user_errors_end_in_one_message(tmp_path, capsys):
    replies = write_jsonl(tmp_path / "r.jsonl", [{"item_id": "q1", "variant": "A.", "reply": "x"}])
    grid = tmp_path / "g.csv"
    grid.write_text("item,variant,correct\nq1,A.,1\n")
    for args, message in [
        ([str(replies)], "need --data"),
        ([str(tmp_path / "missing.jsonl")], "no such file"),
        ([str(replies), str(grid), "--data", str(FIXTURE)], "different kinds"),
        ([str(grid), "--reader", "mmlu-pro"], "--reader does not apply"),
        ([str(replies), "--data", str(FIXTURE), "--reader", "nope"], "unknown --reader"),
        ([str(replies), "--data", str(FIXTURE), "--families", "typo"], "cannot be rebuilt without a model"),
    ]:
        assert main(["score", *args, "--out", str(tmp_path / "runs")]) == 2, args
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (args, err)


def test_lm_eval_non_greedy_logs_are_draws_named_by_their_seed_folder(tmp_path):
    """SCORE's non-greedy instructions run each seed into OUT/seed_N; lm-eval writes OUT/seed_N/<model>/."""
    item = load_items(str(FIXTURE))[0]
    doc = {"question_id": item.id, "question": item.question, "options": list(item.options),
           "answer": LETTERS[item.answer], "answer_index": item.answer, "category": "astronomy"}
    paths = []
    for seed, reply in ((1, "The best answer is B"), (2, "The best answer is C")):
        folder = tmp_path / f"seed_{seed}" / "org__model"
        folder.mkdir(parents=True)
        paths.append(str(write_jsonl(folder / "samples_score_non_greedy_robustness_mmlu_pro_2024-11-26T00-00-00.jsonl",
                                     [{"doc_id": 0, "doc": doc, "arguments": [["p", {}]], "resps": [[reply]]}])))
    assert main(["score", *paths, "--out", str(tmp_path / "runs"), "--run-id", "r", "--quiet"]) == 0
    fm = json.loads((tmp_path / "runs" / "r" / "results.json").read_text())["metrics"]["org__model"]["seeds"]
    assert {name: v["accuracy"]["value"] for name, v in fm["variants"].items()} == {"seed1": 1.0, "seed2": 0.0}
    assert fm["consistency_rate"]["value"] == 0.0  # the two draws chose different options
