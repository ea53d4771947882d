"""tree suite end to end with the real embedded model: `tree build` (through its own parser, as
the CLI will wire it), then `run tree --trees FILE` closed-book and with RAG over a local corpus,
then the same run again from the cache."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from rich.console import Console

from robusteval.cli.tree import add_parser as add_build_command, run_command as run_build_command

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent.parent / "fixtures"


def _build(tmp_path) -> Path:
    parser = argparse.ArgumentParser(prog="robusteval")
    add_build_command(parser.add_subparsers(dest="command"), full=True)
    out = tmp_path / "trees.json"
    args = parser.parse_args(["tree", "build", "--data", str(FIXTURES / "popqa_small.jsonl"), "--limit", "1",
                              "--depth", "1", "--paraphrases", "1", "--lexical", "1", "--retries", "1",
                              "--quiet", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"),
                              "--run-id", "build", "--output", str(out)])
    assert run_build_command(args, Console(stderr=True)) == 0
    return out


EVALUATE = ("run", "tree", "--modes", "closed,rag", "--retrievers", "bm25", "--corpus",
            FIXTURES / "tree_corpus.jsonl", "--max-tokens", "16", "--quiet")


def test_build_then_evaluate_with_the_embedded_model(tmp_path, cli_run):
    trees_file = _build(tmp_path)
    doc = json.loads(trees_file.read_text())
    tree = doc["trees"][0]
    assert doc["version"] == 1 and doc["full_tree_nodes"] == 3 and len(tree["nodes"]) == 3
    assert doc["paraphraser"]["fingerprint"].startswith("llamacpp:SmolLM2-135M")
    root, para, lex = tree["nodes"]
    assert root["text"] == tree["item"]["question"] and lex["kind"] == "lexical" and lex["text"] != root["text"]
    assert para["status"] in ("ok", "rejected") and 1 <= doc["build_cost"]["total"]["requests"] <= 3
    assert tree["cost"]["prompt_tokens"] > 0
    evaluable = [n for n in tree["nodes"] if n["status"] == "ok"]

    results, samples = cli_run(*EVALUATE, "--trees", trees_file, "--run-id", "eval").written()
    assert len(samples) == 2 * len(evaluable)  # closed + rag-bm25 per node
    assert {s["mode"] for s in samples} == {"closed", "rag-bm25"}
    for s in samples:
        assert s["status"] in ("ok", "invalid") and s["response"] is not None
        assert s["correct"] is not None
    rag = [s for s in samples if s["mode"] == "rag-bm25"]
    assert all(s["failure_stage"] in ("correct", "entity_extraction", "search", "retrieval", "generator") for s in rag)
    assert all(s["ner_response"] is not None and s["search_queries"] for s in rag)
    m = results["metrics"]["llamacpp"]["modes"]
    closed = [s for s in samples if s["mode"] == "closed"]
    assert m["closed"]["accuracy"]["value"] == pytest.approx(sum(s["correct"] for s in closed) / len(closed))
    assert sum(v["count"] for v in m["rag-bm25"]["failure_stages"].values()) == len(rag)
    usage = results["models"]["llamacpp"]["usage"]
    assert usage["failed"] == 0 and usage["requests"] == 3 * len(evaluable)  # closed, NER, generator
    cost = results["cost"]["evaluate"]["llamacpp"]
    assert cost["total"]["requests"] == 3 * len(evaluable) and cost["extrapolated_to_dataset"]["questions"] == 6

    again, samples_again = cli_run(*EVALUATE, "--trees", trees_file, "--run-id", "eval2").written()
    assert again["models"]["llamacpp"]["usage"]["new"] == 0  # everything from the cache
    strip = lambda rows: [{k: v for k, v in r.items() if k != "cached"} for r in rows]  # noqa: E731
    assert strip(samples_again) == strip(samples)
