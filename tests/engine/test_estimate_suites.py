"""``--estimate`` of every suite against the requests the same command then sends to the
deterministic stub. The dry run answers each request with a stand-in reply, so later stages (a
conversation's next turn, the questionnaire after it, the oracle on the answers, the judge and the
detectors on generated pairs, a tree's deeper levels) are counted. Where what a suite asks does
not depend on the replies' content, the estimate equals the run; where it does, the difference is
exactly what the stub's replies removed (pairs that did not parse, identical answers)."""

from __future__ import annotations

import json
from pathlib import Path

from robusteval.cli import build_parser, main
from robusteval.cli.run import config_from_args
from robusteval.engine.loop import run as run_loop
from robusteval.run import estimate_suite

FIXTURES = Path(__file__).parents[1] / "fixtures"
SETS = [{"id": "s1", "variation": "formality", "variants": [{"language": "en", "prompt": "Name a primary colour."},
                                                          {"language": "en", "prompt": "pls name a primary color"},
                                                          {"language": "en", "prompt": "Name one primary colour!"}]},
        {"id": "s2", "variation": "language",
         "variants": [{"language": "en", "prompt": "What is 2 + 2?"}, {"language": "de", "prompt": "Was ist 2 + 2?"}]}]


def estimate_then_run(tmp_path: Path, stub, args: list[str]) -> tuple[dict, dict, Path]:
    """(estimate by model, the run's usage by model, the run folder); each on a fresh store, so
    nothing is cached and every planned request is one the run sends."""
    common = ["--quiet", "--out", str(tmp_path / "runs"), "--run-id", "r"]
    before = stub.counters()["total"]
    parsed = build_parser(["run", *args]).parse_args(["run", *args, *common, "--cache-dir", str(tmp_path / "dry")])
    estimates = {e.model: e for e in run_loop(estimate_suite(config_from_args(parsed)))}
    assert stub.counters()["total"] == before  # the estimate sent nothing
    assert main(["run", *args, *common, "--cache-dir", str(tmp_path / "real")]) == 0
    results = json.loads((tmp_path / "runs" / "r" / "results.json").read_text())
    usage = {model: m["usage"] for model, m in results["models"].items()}
    return estimates, usage, tmp_path / "runs" / "r"


def samples(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]


def test_mcq_estimate_equals_the_run(tmp_path, stub):
    model = f"openai:stub?base_url={stub.base_url}"
    est, used, _ = estimate_then_run(tmp_path, stub, ["mcq", "--data", str(FIXTURES / "mcq_small.jsonl"),
                                                      "--families", "order,format", "--model", model])
    e, u = est["openai:stub"], used["openai:stub"]
    assert (e.requests, e.to_send, e.duplicates) == (u["requests"], u["new"], u["cached"])
    assert e.to_send > 0


def test_persona_estimate_counts_conversations_and_every_questionnaire_item(tmp_path, stub):
    model = f"openai:stub?base_url={stub.base_url}"
    persona = FIXTURES / "persona"
    est, used, folder = estimate_then_run(tmp_path, stub, [
        "persona", "--model", model, "--population", str(persona / "population.jsonl"), "--personas", "4",
        "--questionnaire", str(persona / "questionnaire.yaml"), "--contexts", "no_conv,fixed:chess,fixed:grammar",
        "--turns", "2", "--bootstrap", "50"])
    e, u = est["openai:stub"], used["openai:stub"]
    items = len({s["item_id"] for s in samples(folder)})
    # 4 personas x (2 conversations x 3 turns + 3 contexts x the questionnaire's items)
    assert e.requests == u["requests"] == 4 * (2 * 3 + 3 * items)
    assert e.to_send == u["new"]


def test_tree_estimate_counts_the_build_and_the_answers(tmp_path, stub):
    model = f"openai:stub?base_url={stub.base_url}"
    est, used, _ = estimate_then_run(tmp_path, stub, [
        "tree", "--model", model, "--modes", "closed,rag", "--retrievers", "bm25", "--corpus",
        str(FIXTURES / "tree_corpus.jsonl"), "--max-tokens", "16", "--data", str(FIXTURES / "popqa_small.jsonl"),
        "--limit", "2", "--depth", "2", "--paraphrases", "0", "--lexical", "2", "--lexical-kinds", "ocr,visual"])
    e, u = est["openai:stub"], used["openai:stub"]
    assert (e.requests, e.to_send) == (u["requests"], u["new"])


def test_tree_estimate_plans_every_paraphrase_as_kept(tmp_path, stub):
    """With paraphrases the tree's shape depends on which the model's replies pass: the estimate
    plans the full tree (each batch kept), the stub's replies are all rejected and re-asked."""
    model = f"openai:stub?base_url={stub.base_url}"
    args = ["tree", "--model", model, "--modes", "closed", "--max-tokens", "16", "--data",
            str(FIXTURES / "popqa_small.jsonl"), "--limit", "2", "--depth", "2", "--paraphrases", "2",
            "--lexical", "0", "--retries", "1"]
    est, used, _ = estimate_then_run(tmp_path, stub, args)
    e = est["openai:stub"]
    # per item: a batch at the root and one under each of its 2 kept paraphrases (3 build requests),
    # then one closed-book answer per node: the root, 2 children, 4 grandchildren
    assert e.requests == e.to_send == 2 * (3 + 7)
    assert used["openai:stub"]["requests"] < e.requests


def test_consistency_estimate_counts_answers_and_every_oracle_request(tmp_path, stub):
    model = f"openai:stub?base_url={stub.base_url}"
    sets = tmp_path / "sets.jsonl"
    sets.write_text("".join(json.dumps(s) + "\n" for s in SETS))
    est, used, _ = estimate_then_run(tmp_path, stub, [
        "consistency", "--model", model, "--model", f"openai:other?base_url={stub.base_url}", "--data", str(sets),
        "--judge", "oracle", "--oracle", model, "--oracle-mode", "pairwise", "--oracle-retries", "1",
        "--max-tokens", "24"])
    # answers: 5 variants per model; the oracle (openai:stub): per model 3 + 1 pairs, each tried twice
    # (the stub never writes a rating, so every first try is re-asked, as the estimate plans)
    assert est["openai:other"].requests == used["openai:other"]["requests"] == 5
    assert est["openai:stub"].requests == used["openai:stub"]["requests"] == 5 + 2 * 4 * 2
    # the stub answers many prompts alike, and alike answers share the oracle's request: the run
    # sends fewer than the estimate's distinct requests, never more
    assert est["openai:stub"].to_send == est["openai:stub"].requests
    assert used["openai:stub"]["new"] + used["openai:stub"]["cached"] == est["openai:stub"].to_send


def test_hallucination_estimate_counts_generation_detection_and_cross(tmp_path, stub):
    model = f"openai:stub?base_url={stub.base_url}"
    est, used, folder = estimate_then_run(tmp_path, stub, [
        "hallucination", "--model", model, "--judge", model, "--limit", "4", "--prompts", "incorrect,support",
        "--orders", "both", "--bootstrap", "100"])
    e, u = est["openai:stub"], used["openai:stub"]
    # generation 4 x 2, the judge 4 x 2, detection 4 x 2 prompts x 2 orders, cross the same on 4 pairs
    assert e.requests == e.to_send == 8 + 8 + 16 + 16
    unparsed = sum(s["step"] == "generation" and s["status"] != "ok" for s in samples(folder))
    # a pair the stub's replies did not parse is neither judged (2) nor cross-detected (4)
    assert u["requests"] == e.requests - unparsed * (2 + 4)
