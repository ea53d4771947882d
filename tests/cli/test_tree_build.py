"""`robusteval tree build` (cli/tree.py): exit codes like `run`'s."""

from __future__ import annotations

import json
import re
from pathlib import Path

from robusteval.cli import EXIT_FAILED_REQUESTS
from robusteval.testing.openai_stub import StubConfig, StubServer

POPQA = Path(__file__).parent.parent / "fixtures" / "popqa_small.jsonl"


def test_tree_build_exits_3_when_requests_failed_and_still_writes_the_trees(tmp_path, cli_run):
    """Every paraphrase request fails (the server answers 500; no retry, no re-request): the trees hold their roots
    only, the file is written, and the command exits 3 as a run does, saying how many failed."""
    out = tmp_path / "trees.json"
    with StubServer(StubConfig(p_500=1.0)) as stub:
        result = cli_run("tree", "build", "--model", stub.model(), "--data", POPQA,
                         "--limit", "2", "--depth", "1", "--paraphrases", "1", "--lexical", "0", "--max-retries", "0",
                         "--retries", "0",                          "--quiet", "--run-id", "build", "--output", out)
    assert result.code == EXIT_FAILED_REQUESTS == 3, result.err
    assert re.search(r"(^| )2 requests failed after all retries", " ".join(result.err.split())), result.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["trees"]) == 2 and doc["nodes"]["ok"] == 2  # the two roots
    assert result.folder == tmp_path / "runs" / "build" and (result.folder / "trees.json").is_file()
    usage = result.results()["models"]
    assert sum(m["usage"]["failed"] for m in usage.values()) == 2
