"""tree end to end through the deterministic stub (exact numbers), with an ``ocr`` lexical leaf:
build, answer closed-book and through RAG over the fixture corpus, the typed record, the report
section of that run, and ``--trees FILE`` with ``--limit`` and ``--data``.

The stub always replies "Let me think. The best answer is X.": never a question, so every
paraphrase is rejected (``--retries 0``), and never a gold answer, so every accuracy is 0. The
NER reply names nothing of the question, so RAG searches the question itself; the corpus has
Marla Quenby's job (the generator is to blame for her three nodes) and nothing on Vessa Lind
(the entities missed her name: entity extraction is blamed)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from robusteval.probes.tree import lexical_fn
from robusteval.report.model import Run
from robusteval.results.codec import encode
from robusteval.results.records import read_run
from robusteval.results.tree import ModeMetrics
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parent.parent / "fixtures"
ZERO = {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 2}


def _tree(stub, run_id: str) -> tuple:
    """``run tree`` against the stub, closed-book and through BM25 over the fixture corpus, as ``run_id``."""
    return ("run", "tree", "--model", stub.model(), "--retries", "0", "--modes", "closed,rag", "--retrievers", "bm25",
            "--corpus", FIXTURES / "tree_corpus.jsonl", "--max-tokens", "16", "--quiet", "--run-id", run_id)


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory, cli_run_in):
    tmp = tmp_path_factory.mktemp("tree-stub")
    with StubServer() as stub:
        code = cli_run_in(tmp, *_tree(stub, "stub"), "--data", FIXTURES / "popqa_small.jsonl", "--limit", "2",
                          "--depth", "1", "--paraphrases", "1", "--lexical", "2", "--lexical-kinds", "ocr,visual").code
        assert code == 0
        yield tmp, stub


def test_exact_metrics_with_an_ocr_leaf(stub_run):
    tmp, _ = stub_run
    folder = tmp / "runs" / "stub"
    results = json.loads((folder / "results.json").read_text())
    trees = json.loads((folder / "trees.json").read_text())
    leaves = {(t["item"]["id"], n["id"]): n for t in trees["trees"] for n in t["nodes"]}
    assert [(k, n["perturbation"], n["status"]) for k, n in leaves.items()] == [
        (("105", "r"), "root", "ok"), (("105", "r.p1"), "paraphrase", "rejected"), (("105", "r.l1"), "ocr", "ok"),
        (("105", "r.l2"), "visual", "ok"), (("101", "r"), "root", "ok"), (("101", "r.p1"), "paraphrase", "rejected"),
        (("101", "r.l1"), "ocr", "ok"), (("101", "r.l2"), "visual", "ok")]
    assert leaves["105", "r.l1"]["text"] == "In what eountry is Vessa Lind?"
    assert leaves["101", "r.l1"]["text"] == "What is Marla Quenby's occupati0n?"
    for item in ("105", "101"):  # the registry's ocr at the default --typo-prob, seeded by node
        root = leaves[item, "r"]["text"]
        assert leaves[item, "r.l1"]["text"] == lexical_fn("ocr", 0.1)(root, random.Random(f"0:{item}:r.l1"))
    assert trees["nodes"]["rejection_reasons"] == {"not_a_question": 2}

    m = results["metrics"]["openai:stub"]
    closed, rag = m["modes"]["closed"], m["modes"]["rag-bm25"]
    for mode in (closed, rag):
        assert mode["accuracy"] == {**ZERO, "samples": 6} and mode["f1"] == {**ZERO, "samples": 6}
        assert (mode["samples"], mode["invalid"], mode["failed"]) == (6, 0, 0)
        assert mode["by_level"] == {"0": {"accuracy": {**ZERO, "samples": 2}, "f1": {**ZERO, "samples": 2}},
                                    "1": {"accuracy": {**ZERO, "samples": 4}, "f1": {**ZERO, "samples": 4}}}
        assert mode["by_perturbation"] == {p: {**ZERO, "samples": 2} for p in ("ocr", "root", "visual")}
        assert set(mode["by_kind"]) == {"lexical", "root"}
        assert mode["drop_root_to_deepest"] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 2}
        assert mode["by_popularity"] == {"<100": {**ZERO, "samples": 6}}  # s_pop 12 and 45
    assert "failure_stages" not in closed and "context_recall" not in closed
    assert rag["failure_stages"] == {"correct": {"count": 0, "share": 0.0},
                                     "entity_extraction": {"count": 3, "share": 0.5},
                                     "search": {"count": 0, "share": 0.0}, "retrieval": {"count": 0, "share": 0.0},
                                     "generator": {"count": 3, "share": 0.5}, "api": {"count": 0, "share": 0.0}}
    assert rag["subject_found"]["value"] == 0.0 and rag["subject_found"]["samples"] == 6
    assert rag["context_recall"]["value"] == 0.5 and rag["search_recall"]["value"] == 0.5
    assert m["comparisons"] == {"closed - rag-bm25": {"accuracy_difference": {**ZERO}}}

    usage = results["models"]["openai:stub"]["usage"]
    assert usage["requests"] == 2 + 6 * 3  # a paraphrase batch per tree; closed, NER, generator per node
    cost = results["cost"]
    assert cost["build"]["local_models"]["embedding"]["calls"] == 8  # root, candidate, two leaves; two trees
    assert cost["evaluate"]["openai:stub"]["local_models"]["retrieval:bm25"]["calls"] == 6
    assert cost["evaluate"]["openai:stub"]["total"]["requests"] == 18

    record = read_run(folder)  # the typed record reads the run back, and encodes to the same JSON
    mode = record.metrics["openai:stub"].modes["rag-bm25"]
    assert isinstance(mode, ModeMetrics) and mode.failure_stages["generator"].count == 3
    assert {k: encode(v) for k, v in record.metrics.items()} == results["metrics"]
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 12 and all(s["variant"] == s["node"] for s in samples)


def test_report_section_of_the_run(stub_run):
    from robusteval.report.sections import headlines, sections

    tmp, _ = stub_run
    folder = tmp / "runs" / "stub"
    results = json.loads((folder / "results.json").read_text())
    section, data = sections(Run(folder, results))  # results first, the data audit after them
    assert data.title == "Data" and section.title == "tree · openai:stub"
    assert [f.name for f in section.figures] == ["level-openai_stub-closed", "level-openai_stub-rag-bm25",
                                                 "stages-openai_stub"]
    overview, by_perturbation, sensitivity, *per_group = section.tables
    # every answer wrong: nothing varies, and the root (never right) gives no drop rate
    assert sensitivity.columns == ("measure", "closed · kinds (vs root)", "closed · levels (vs 0)",
                                   "rag-bm25 · kinds (vs root)", "rag-bm25 · levels (vs 0)")
    rows = {r[0]: r[1:] for r in sensitivity.rows}
    assert rows["spread (best - worst variant)"][0].startswith("0.000 [0.000, ")
    assert rows["worst-case accuracy"][0].startswith("0.000")
    assert rows["performance drop rate (mean)"] == ("n/a",) * 4
    assert rows["flip rate vs reference"][0].startswith("0.000")
    assert per_group[0].title == "openai:stub · closed · kinds: each group against the root (reference: root)"
    assert overview.rows[0] == ("closed", "0.000 [0.000, 0.000]", "0.000 [0.000, 0.000]", "0.000 [0.000, 0.000]",
                                "0.000 [0.000, 0.000]", "lexical: 0.000 [0.000, 0.000]; root: 0.000 [0.000, 0.000]",
                                "0.000 [0.000, 0.000]")
    assert [row[0] for row in by_perturbation.rows] == ["ocr", "root", "visual"]
    assert by_perturbation.columns == ("perturbation", "closed", "rag-bm25")
    assert [(h.metric, h.value) for h in headlines(results)] == [("closed accuracy", 0.0), ("rag-bm25 accuracy", 0.0)]
    report = (folder / "report.md").read_text()
    assert "accuracy by perturbation" in report and "| ocr |" in report


def test_stored_trees_take_limit_and_refuse_data(stub_run, cli_run_in, capsys):
    tmp, _ = stub_run
    trees = tmp / "runs" / "stub" / "trees.json"
    with StubServer() as stub:
        assert cli_run_in(tmp, *_tree(stub, "limited"), "--trees", trees, "--limit", "1").code == 0
        results = json.loads((tmp / "runs" / "limited" / "results.json").read_text())
        assert results["tree_shapes"]["trees"] == 1 and results["metrics"]["openai:stub"]["modes"]["closed"][
            "samples"] == 3
        (source,) = [s for s in results["data"]["sources"] if s["source"].startswith("trees ")]
        assert (source["rows_read"], source["rows_used"]) == (2, 1)
        assert any("--limit 1" in note and "--all" in note for note in source["notes"])
        assert cli_run_in(tmp, *_tree(stub, "all"), "--trees", trees, "--all").code == 0
        assert json.loads((tmp / "runs" / "all" / "results.json").read_text())["tree_shapes"]["trees"] == 2
        refused = cli_run_in(tmp, *_tree(stub, "data"), "--trees", trees, "--data", "squad", capsys=capsys)
        assert refused.code == 2
    err = " ".join(refused.err.split())
    assert f"--trees {trees} holds its own questions; --data cannot change them" in err
    assert "Traceback" not in err and not (tmp / "runs" / "data").exists()
