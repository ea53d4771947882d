"""The `formats` and `circular` families end to end through the deterministic stub: the formats drawn
from the run's seed and recorded, each asked in its own layout and label style, the CircularEval
figures recounted from the samples, the report's rows, and the reader check before any request."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
DATA = FIXTURES / "mcq_small.jsonl"


def _mcq(stub, run_id: str, *extra) -> tuple:
    return ("run", "mcq", "--quiet", "--data", DATA, "--model", stub.model(), "--run-id", run_id, *extra)


def test_formats_and_circular_end_to_end(cli_run, tmp_path):
    with StubServer() as stub:
        results, samples = cli_run(*_mcq(stub, "f", "--families", "formats:5,circular")).written()
        again, _ = cli_run(*_mcq(stub, "g", "--families", "formats:3")).written()
        asked = stub.counters()["total"]
    formats = results["design"]["formats"]
    assert list(formats) == ["f01", "f02", "f03", "f04", "f05"]
    assert {k: again["design"]["formats"][k] for k in ("f01", "f02", "f03")} == {
        k: formats[k] for k in ("f01", "f02", "f03")}  # the same seed draws the same formats first
    rotations = sum(len(json.loads(line)["choices"]) for line in DATA.read_text().splitlines())
    assert asked == 5 * 5 + rotations  # the second run's three formats were all cached
    metrics = results["metrics"][next(iter(results["metrics"]))]
    assert list(metrics["formats:5"]["variants"]) == list(formats)
    # each format's prompt: the instruction, then the question in the format's own layout
    for s in (s for s in samples if s["family"] == "formats:5"):
        layout = formats[s["variant"]]["layout"]
        head, _, tail = layout.partition("{question}")
        assert head in s["prompt"] and s["prompt"].endswith(tail.partition("{options}")[2])
        # the stub's "A".."D" read back under every label style (a D to a 3-option question names no option)
        assert s["status"] == "ok" or (len(s["labels"]) == 3 and s["response"].endswith("is D."))
    # CircularEval recounted from the samples: a question counts when all four rotations are right
    by_item = defaultdict(list)
    for s in samples:
        if s["family"] == "circular":
            by_item[s["item_id"]].append(bool(s["correct"]))
    circular = metrics["circular"]["circular"]
    assert circular["accuracy"]["value"] == pytest.approx(sum(all(v) for v in by_item.values()) / len(by_item))
    four = [v for v in by_item.values() if len(v) == 4]  # "at least j of n" is per n (one question has 3)
    for j in (1, 2, 3):
        assert circular["at_least"][f"{j}/4"]["value"] == pytest.approx(sum(sum(v) >= j for v in four) / len(four))
    assert list(metrics["circular"]["variants"]) == ["rot0", "rot1", "rot2", "rot3"]
    # the report: every format's accuracy, the best and worst shown, CircularEval beside each rotation
    run = Run(Path(tmp_path), results)
    titles = [t.title for section in sections(run) for t in section.tables]
    assert any("accuracy per format, best first" in t for t in titles)
    best_worst = next(t for section in sections(run) for t in section.tables if "best and worst format" in t.title)
    assert [row[0] for row in best_worst.rows] == ["best", "worst", "spread (best - worst)"]
    assert "Which planet is closest to the Sun?" in best_worst.rows[0][3]
    table = next(t for section in sections(run) for t in section.tables if "CircularEval" in t.title)
    assert table.rows[0][0] == "circular accuracy (every rotation right)"


def test_a_reader_that_cannot_read_a_format_stops_before_any_request(cli_run, tmp_path):
    with StubServer() as stub:
        code, _, _, err = cli_run(*_mcq(stub, "x", "--families", "formats:5", "--reader", "inspect"))
        asked = stub.counters()["total"]
    assert code == 2 and asked == 0 and "Traceback" not in err
    assert "does not match --reader inspect" in err and "'f0" in err


def test_a_bad_formats_count_is_one_line(cli_run):
    with StubServer() as stub:
        code, _, _, err = cli_run(*_mcq(stub, "y", "--families", "formats:zero"))
    assert code == 2 and "formats:N" in err and "Traceback" not in err


def test_option_transforms_keep_the_gold_and_count_refused_copies(cli_run):
    with StubServer() as stub:
        results, samples = cli_run(*_mcq(stub, "o", "--families", "add_distractor,irrelevant_context")).written()
    counts = results["perturbations"]
    # of mcq_small's five questions only q2 and q4 share a subject (arithmetic): the others' copies are refused
    assert counts["add_distractor"]["kept"] == 4 and counts["add_distractor"]["reasons"] == {"no_distractor": 6}
    added = {s["prompt"].rsplit("\n", 1)[1] for s in samples if s["variant"].startswith("add_distractor")}
    assert added and all(a.startswith("E. ") for a in added)
    assert {a[3:] for a in added} <= {"42", "36", "48", "54", "Five", "Seven", "Eight", "Six"}
    assert counts["irrelevant_context"]["kept"] == 10 and counts["irrelevant_context"]["kind"] == "item"
    originals = {s["item_id"]: s for s in samples if s["variant"] == "original"}
    for s in samples:
        assert s["gold_option"] == originals[s["item_id"]]["gold_option"]
        if s["variant"].startswith("irrelevant_context"):
            assert s["prompt"].count("\n\n") > originals[s["item_id"]]["prompt"].count("\n\n")


def test_a_distractor_from_the_same_subject_is_asked_as_one_more_option(cli_run, tmp_path):
    rows = [{"id": f"m{n}", "question": f"What is {n} + {n}?", "choices": [str(2 * n), str(2 * n + 1), "0"],
             "answer": 0, "subject": "arithmetic"} for n in range(1, 4)]
    data = tmp_path / "same_subject.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with StubServer() as stub:
        results, samples = cli_run("run", "mcq", "--quiet", "--data", data, "--model", stub.model(), "--run-id", "d",
                                   "--families", "add_distractor", "--perturbations-per-family", "1").written()
    assert results["perturbations"]["add_distractor"]["kept"] == 3
    copies = [s for s in samples if s["variant"] == "add_distractor#1"]
    assert len(copies) == 3 and all(len(s["labels"]) == 4 and s["gold_option"] == 0 for s in copies)
    for s in copies:  # the stub answers A-D: a D is the added option, read and wrong
        if s["answer_label"] == "D":
            assert s["answer_option"] == 3 and s["correct"] is False


def test_formats_cross_with_another_layout_is_refused(cli_run):
    with StubServer() as stub:
        code, _, _, err = cli_run(*_mcq(stub, "z", "--families", "order", "--cross", "formats:3,prompt"))
        asked = stub.counters()["total"]
    assert code == 2 and asked == 0 and "its own prompt and label style" in err and "Traceback" not in err
