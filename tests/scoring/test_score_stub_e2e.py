"""``robusteval score`` against the run that produced the replies: a stub run's replies exported to a
generic JSONL, and its verdicts to a correctness grid, scored with no model give the run's metrics
(every one, within a float tolerance; the grid carries no shown labels, so no position bias)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.metrics.mcq_sensitivity import is_unperturbed
from robusteval.testing.openai_stub import StubServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mcq_small.jsonl"


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("score-e2e")
    with StubServer() as stub:
        code = main(["run", "mcq", "--quiet", "--model", stub.model(), "--data",
                     str(FIXTURE), "--limit", "4", "--families", "order,format", "--cache-dir", str(root / "c"),
                     "--out", str(root / "runs"), "--run-id", "run"])
    assert code == 0
    folder = root / "runs" / "run"
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return root, json.loads((folder / "results.json").read_text()), samples


def assert_close(got, want, path="metrics"):
    """Every number of ``want`` equal in ``got`` within 1e-9 (None and n/a alike), key for key."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{path}: keys {set(got) ^ set(want)}"
        for key in want:
            assert_close(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for n, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{path}[{n}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got is not None and ((math.isnan(want) and math.isnan(got)) or got == pytest.approx(want, abs=1e-9)), \
            f"{path}: {got} != {want}"
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


def score(root: Path, *args: str) -> dict:
    code = main(["score", "--quiet", "--out", str(root / "runs"), "--overwrite", *args])
    assert code == 0
    run_id = args[list(args).index("--run-id") + 1]
    return json.loads((root / "runs" / run_id / "results.json").read_text())


def test_the_run_has_what_the_comparison_needs(stub_run):
    _, results, samples = stub_run
    statuses = {s["status"] for s in samples}
    assert {"ok", "invalid"} <= statuses  # both readable and unreadable replies are compared
    assert {s["family"] for s in samples} == {"order", "format"}
    assert any(s["correct"] for s in samples) and not all(s["correct"] for s in samples)
    assert results["metrics"]["openai:stub"]["order"]["categories"]  # 4 questions in 4 subjects


def test_generic_jsonl_replies_give_the_runs_metrics(stub_run):
    root, results, samples = stub_run
    replies = root / "replies.jsonl"
    replies.write_text("".join(json.dumps({"model": s["model"], "item_id": s["item_id"], "family": s["family"],
                                           "variant": s["variant"], "sample": s["sample"], "reply": s["response"]})
                               + "\n" for s in samples))
    scored = score(root, str(replies), "--data", str(FIXTURE), "--run-id", "from-replies")
    assert_close(scored["metrics"], results["metrics"])
    assert scored["scored"] == {"kind": "replies", "files": [str(replies)], "reader": "robusteval"}
    back = [json.loads(line) for line in (root / "runs" / "from-replies" / "samples.jsonl").read_text().splitlines()]
    keep = ("item_id", "family", "variant", "status", "answer_option", "correct", "gold_label", "order")
    assert [{k: s[k] for k in keep} for s in back] == [{k: s[k] for k in keep} for s in samples]
    # the dataset's fifth question has no reply: counted, not silently dropped
    audit = {s["source"]: s for s in scored["data"]["sources"]}
    assert audit[str(FIXTURE)]["rows_read"] == 5
    (missing,) = {json.loads(line)["id"] for line in FIXTURE.read_text().splitlines()} - {s["item_id"] for s in samples}
    assert audit[str(FIXTURE)]["notes"] == [
        f"1 of 5 items have no reply in the files: left out of every metric (e.g. {missing})"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_correctness_grid_gives_the_runs_metrics(stub_run, suffix):
    root, results, samples = stub_run
    rows = [{"model": s["model"], "item": s["item_id"], "family": s["family"], "variant": s["variant"],
             "correct": int(s["correct"]), "answer": "" if s["answer_option"] is None else s["answer_option"],
             "category": s["category"], "reference": int(is_unperturbed(s["variant"], s["order"]))}
            for s in samples]
    grid = root / f"grid{suffix}"
    if suffix == ".csv":
        with open(grid, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        grid.write_text("".join(json.dumps({**r, "answer": r["answer"] if r["answer"] != "" else None}) + "\n"
                                for r in rows))
    scored = score(root, str(grid), "--run-id", f"grid-{suffix[1:]}")
    want = results["metrics"]
    got = scored["metrics"]
    for model, families in want.items():
        for family, fm in families.items():
            # a grid shows no labels: no position a reply chose, and no reply read (no read_as); every
            # other metric is the run's
            assert got[model][family].pop("position_bias") == {} and "read_as" not in got[model][family]
            # the stub writes "The best answer is X": each reply read by the sentence, or not at all
            ways = {"label": fm["samples"] - fm["invalid"] - fm["failed"], "invalid": fm["invalid"]}
            assert fm["read_as"] == {way: n for way, n in ways.items() if n}
            assert_close(got[model][family], {k: v for k, v in fm.items() if k not in ("position_bias", "read_as")},
                         f"{model}.{family}")


def test_a_grid_without_answers_gives_every_correctness_measure_and_no_answer_comparison(stub_run):
    root, results, samples = stub_run
    grid = root / "bare.csv"
    grid.write_text("item,variant,family,correct\n" + "".join(
        f"{s['item_id']},{s['variant']},{s['family']},{int(s['correct'])}\n" for s in samples))
    got = score(root, str(grid), "--run-id", "bare")["metrics"]["bare"]["format"]
    want = results["metrics"]["openai:stub"]["format"]
    for key in ("accuracy", "spread", "std_across_variants"):
        assert_close(got[key], want[key], key)
    for measure in ("spread", "worst_case", "best_case", "drop_rate", "prompt_sensi_score", "max_p", "avg_p", "cps"):
        assert_close(got["sensitivity"][measure], want["sensitivity"][measure], measure)
    # no chosen options: nothing that compares answers is claimed
    assert got["consistency_rate"]["value"] is None
    assert got["sensitivity"]["consistency_rate"]["value"] is None and got["sensitivity"]["flip_rate"]["value"] is None


def test_accuracy_per_category_in_results_report_and_compare(stub_run):
    """Each subject's counts are its question's replies; the report and ``compare`` show them too."""
    from robusteval.compare import compare

    root, results, samples = stub_run
    for family in ("order", "format"):
        categories = results["metrics"]["openai:stub"][family]["categories"]
        mine = [s for s in samples if s["family"] == family]
        assert set(categories) == {s["category"] for s in mine}
        for name, c in categories.items():
            rows = [s for s in mine if s["category"] == name]
            assert c["answered"] == len(rows) and c["correct"] == sum(s["correct"] for s in rows)
            assert c["invalid"] == sum(s["status"] == "invalid" for s in rows)
            assert c["items"] == len({s["item_id"] for s in rows})
            assert c["accuracy"]["value"] == pytest.approx(c["correct"] / c["answered"])
            if c["items"] >= 2:  # an interval clustered by question needs two questions
                assert c["accuracy"]["ci_low"] <= c["accuracy"]["value"] <= c["accuracy"]["ci_high"]
            else:
                assert c["accuracy"]["ci_low"] is None
    report = (root / "runs" / "run" / "report.md").read_text()
    assert "openai:stub · order: accuracy per category" in report
    replies = root / "replies-cmp.jsonl"
    replies.write_text("".join(json.dumps({"model": s["model"], "item_id": s["item_id"], "family": s["family"],
                                           "variant": s["variant"], "reply": s["response"]}) + "\n"
                               for s in samples))
    score(root, str(replies), "--data", str(FIXTURE), "--run-id", "cmp")
    paired = compare(str(root / "runs" / "run"), str(root / "runs" / "cmp"))
    by_category = paired["order"]["categories"]
    assert set(by_category) == set(results["metrics"]["openai:stub"]["order"]["categories"])
    assert all(d["diff"] == 0 for d in by_category.values())
    assert sum(d["n"] for d in by_category.values()) == paired["order"]["questions"] == 4
