"""``--shard I/N`` in every suite: shards 1/2 and 2/2 ask disjoint items that together are the
unsharded run's, and `robusteval merge` of the two gives exactly the unsharded run's metrics.

Each suite runs through the deterministic stub: the shards share one store, the unsharded run has
a store of its own (so it asks everything itself), and the merge asks nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parent / "fixtures"


PROMPTS = ["Which planet is closest to the Sun?", "Write a short poem about the sea.", "Name three rivers in Africa.",
           "How do I boil an egg?", "Explain photosynthesis in one sentence.", "What is the capital of Peru?"]


def _suite_args(suite: str, spec: str, tmp: Path) -> list[str]:
    if suite == "consistency":
        return ["--judge", "oracle,embedding", "--oracle", spec, "--limit", "6"]
    if suite == "consistency --variations":  # the sets are generated from the shard's requests
        prompts = tmp / "prompts.jsonl"
        prompts.write_text("".join(json.dumps({"id": f"q{n}", "prompt": p}) + "\n" for n, p in enumerate(PROMPTS)))
        return ["--data", str(prompts), "--variations", "typo,ocr", "--judge", "embedding"]
    if suite == "hallucination":
        return ["--judge", spec, "--limit", "6", "--prompts", "incorrect,support", "--orders", "both",
                "--bootstrap", "100"]
    if suite == "tree":
        return ["--data", str(FIXTURES / "popqa_small.jsonl"), "--all", "--depth", "1", "--paraphrases", "1",
                "--lexical", "2", "--retries", "0", "--modes", "closed,rag", "--retrievers", "bm25",
                "--corpus", str(FIXTURES / "tree_corpus.jsonl"), "--max-tokens", "16"]
    assert suite == "persona"
    persona = FIXTURES / "persona"
    return ["--population", str(persona / "population.jsonl"), "--personas", "4", "--questionnaire",
            str(persona / "questionnaire.yaml"), "--contexts", "no_conv,fixed:chess,chunk:0", "--turns", "1",
            "--bootstrap", "50"]


# the unit a shard holds, as samples.jsonl names it
ITEM_FIELD = {"consistency": "item_id", "consistency --variations": "item_id", "hallucination": "item_id",
              "tree": "item_id", "persona": "persona_id"}


def _run_args(stub, tmp: Path, suite: str) -> list[str]:
    """``run SUITE`` against the stub with the suite's own flags (`_suite_args`)."""
    spec = stub.model()
    if suite.startswith("consistency"):
        pytest.importorskip("sentence_transformers")
    return ["run", suite.split()[0], "--quiet", "--model", spec, *_suite_args(suite, spec, tmp)]


def _items(tmp: Path, suite: str, run_id: str) -> set[str]:
    lines = (tmp / "runs" / run_id / "samples.jsonl").read_text().splitlines()
    return {row[ITEM_FIELD[suite]] for row in map(json.loads, lines)}


def _results(tmp: Path, run_id: str) -> dict:
    return json.loads((tmp / "runs" / run_id / "results.json").read_text())


@pytest.mark.parametrize("suite", ["consistency", "consistency --variations", "hallucination", "tree", "persona"])
def test_two_shards_merge_into_the_unsharded_run(tmp_path, cli_run, suite):
    with StubServer() as stub:
        args = _run_args(stub, tmp_path, suite)
        for i in (1, 2):  # the shards share tmp_path/cache
            assert cli_run(*args, "--run-id", f"s{i}", "--shard", f"{i}/2").code == 0
        asked = stub.counters()["total"]
        assert main(["merge", str(tmp_path / "runs" / "s2"), str(tmp_path / "runs" / "s1"), "--out",
                     str(tmp_path / "runs"), "--run-id", "merged", "--quiet"]) == 0
        assert stub.counters()["total"] == asked  # the merge asked nothing
        assert cli_run(*args, "--run-id", "whole", "--cache-dir", tmp_path / "other-cache").code == 0
    first, second, whole = (_items(tmp_path, suite, r) for r in ("s1", "s2", "whole"))
    assert first and second and not first & second  # each shard asked some items, none twice
    assert first | second == whole == _items(tmp_path, suite, "merged")
    merged = _results(tmp_path, "merged")
    assert merged["metrics"] == _results(tmp_path, "whole")["metrics"]
    assert merged["config"]["shard"] is None
    # each shard's own metrics cover its items only
    assert _results(tmp_path, "s1")["metrics"] != merged["metrics"]
