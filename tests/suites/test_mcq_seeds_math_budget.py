"""mcq's seeds family, open-answer math and --budget, end to end through the deterministic stub
(offline): exact counts and numbers, the cache across K and across a budgeted and a full run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from robusteval.configure import build_config
from robusteval.data.math import is_math_source
from robusteval.probes.design import Design, expand
from robusteval.probes.math_prompts import expand_math, load_math_templates
from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections
from robusteval.suites.mcq.ask import decoding
from robusteval.types import GenParams, Item

FIXTURES = Path(__file__).parents[1] / "fixtures"
GSM8K = FIXTURES / "gsm8k_small.jsonl"


def _model(stub) -> str:
    return f"openai:stub?base_url={stub.base_url}"


def test_seeds_family_draws_are_distinct_cached_samples(cli_run, stub):
    first = cli_run("run", "mcq", "--model", _model(stub), "--families", "seeds", "--limit", "20", "--run-id", "k5")
    assert first.code == 0, first.err
    samples = first.samples()
    assert len(samples) == 20 * 5
    assert {s["variant"] for s in samples} == {f"seed{k}" for k in range(5)}
    assert len({s["key"] for s in samples}) == 100  # no two draws collapse into one request
    assert stub.state.total == 100
    results = first.results()
    assert results["design"]["seeds"] == 5 and results["design"]["seed_temperature"] == 0.7
    seeds = results["metrics"]["openai:stub"]["seeds"]
    assert set(seeds["variants"]) == {f"seed{k}" for k in range(5)}
    # the stub's replies are a hash of the request (temperature and seed included): pinned
    assert seeds["accuracy"]["value"] == pytest.approx(PINNED_SEEDS_ACCURACY)
    assert seeds["consistency_rate"]["value"] == pytest.approx(PINNED_SEEDS_CONSISTENCY)

    # K=7 asks only the 2 new draws per question; the first 5 are the same requests, cached
    more = cli_run("run", "mcq", "--model", _model(stub), "--families", "seeds", "--seeds", "7", "--limit", "20",
                   "--run-id", "k7")
    usage = more.results()["models"]["openai:stub"]["usage"]
    assert usage["requests"] == 140 and usage["new"] == 40 and usage["cached"] == 100
    k7 = {(s["item_id"], s["variant"]): s["key"] for s in more.samples()}
    assert all(k7[(s["item_id"], s["variant"])] == s["key"] for s in samples)


def test_a_draw_is_asked_at_the_family_temperature_with_its_own_seed_and_sample():
    item = Item("q", "Which?", ("a", "b", "c"), 0)
    design = Design(seeds=3, seed_temperature=0.5)
    draws = expand(item, ("seeds",), design)
    assert [v.name for v in draws] == ["seed0", "seed1", "seed2"] and [v.draw for v in draws] == [0, 1, 2]
    assert len({v.messages for v in draws}) == 1  # one prompt: the base one
    params = GenParams(temperature=0.0, seed=10, max_tokens=33)
    drawn, index = decoding(params, draws[2], design, 0)
    assert index == 2 and drawn.for_sample(index) == GenParams(temperature=0.5, seed=12, max_tokens=33)  # as sent
    greedy = expand(item, ("format",), design)[0]
    assert decoding(params, greedy, design, 0) == (params, 0)


def _bodies(path: Path) -> list[dict]:
    return [json.loads(line)["body"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_samples_are_k_draws_each_with_its_own_seed(cli_run, tmp_path, mcq_file):
    """--samples 3 at temperature 1: each variant's three requests are three bodies, seeds 0, 1, 2 (one
    seed three times is one reply three times from llama.cpp or vLLM); exported without a server."""
    requests = tmp_path / "requests.jsonl"
    out = cli_run("run", "mcq", "--model", "batchfile:M", "--data", mcq_file, "--samples", "3", "--temperature", "1.0",
                  "--limit", "1", "--families", "order", "--export-requests", requests, "--quiet")
    assert out.code == 0, out.err
    bodies = _bodies(requests)
    assert len(bodies) == 12 and len({json.dumps(b, sort_keys=True) for b in bodies}) == 12
    by_prompt: dict[str, list[int]] = {}
    for body in bodies:
        by_prompt.setdefault(json.dumps(body["messages"]), []).append(body["seed"])
    assert len(by_prompt) == 4 and all(sorted(seeds) == [0, 1, 2] for seeds in by_prompt.values())


def test_open_answer_math_prompt_and_seeds(cli_run, stub):
    out = cli_run("run", "mcq", "--model", _model(stub), "--data", GSM8K, "--families", "prompt,seeds",
                  "--run-id", "math")
    assert out.code == 0, out.err
    samples = out.samples()
    assert len(samples) == 4 * (8 + 5)  # 8 bundled math templates, 5 draws
    for s in samples:
        assert s["response"].startswith("Let me think. The final answer is")
        assert s["extraction"] == "final-answer" and s["status"] == "ok"
        assert s["correct"] == (s["answer_text"] == s["gold_answer"])
        assert (s["answer_option"] == 0) == s["correct"]
    assert {s["gold_answer"] for s in samples} == {"7", "6", "4", "8"}
    metrics = out.results()["metrics"]["openai:stub"]
    assert set(metrics) == {"prompt", "seeds"}
    right = sum(s["correct"] for s in samples if s["family"] == "prompt")
    assert metrics["prompt"]["accuracy"]["value"] == pytest.approx(right / 32)
    assert right == PINNED_MATH_PROMPT_RIGHT
    assert metrics["prompt"]["position_bias"] == {}
    assert out.results()["design"]["answers"] == "open (math)"


def test_offline_gsm8k_from_the_data_package(cli_run, stub):
    out = cli_run("run", "mcq", "--model", _model(stub), "--data", "gsm8k", "--families", "prompt,seeds",
                  "--limit", "3", "--run-id", "gsm8k")
    assert out.code == 0, out.err
    assert len(out.samples()) == 3 * 13
    assert all(s["item_id"].startswith("gsm8k-") for s in out.samples())


def test_math_says_when_it_replaces_the_default_families(cli_run, stub):
    """mcq's default families (order,format) need options; math asks prompt,seeds instead and says so
    in the data audit (terminal, results.json, report), never silently."""
    import json

    out = cli_run("run", "mcq", "--model", _model(stub), "--data", "gsm8k", "--limit", "1", "--run-id", "default")
    assert out.code == 0, out.err
    data = json.loads((out.folder / "results.json").read_text())["data"]
    notes = [n for source in data["sources"] for n in source["notes"]]
    assert "open-answer math has no options: families prompt,seeds instead of order,format" in notes
    assert {s["family"] for s in out.samples()} == {"prompt", "seeds"}


@pytest.mark.parametrize("flags, message", [
    (("--families", "order"), "open-answer math (no options): order cannot apply"),
    (("--families", "prompt,typo"), "typo cannot apply"),
    (("--families", "prompt", "--scoring", "loglik"), "--scoring generate only"),
])
def test_math_refuses_families_that_need_options(cli_run, flags, message):
    out = cli_run("run", "mcq", "--data", GSM8K, *flags)
    assert out.code != 0 and out.folder is None
    assert message in out.err and "Traceback" not in out.err


@pytest.mark.parametrize("flags, message", [
    (("--families", "seeds", "--seeds", "1"), "--seeds 1: out of range; it must be in [2, 1000]"),
    (("--families", "seeds", "--seed-temperature", "0"), "--seed-temperature 0: out of range; it must be in (0, 10]"),
    (("--families", "seeds", "--temperature", "0.5", "--samples", "2"), "give the draws with --seeds K"),
    (("--budget", "0"), "--budget 0: out of range; it must be in (0, 1]"),
    (("--budget", "1.5"), "--budget 1.5: out of range; it must be in (0, 1]"),
    (("--budget", "0.1", "--budget-design", "greedy"), "--budget-design must be one of stratified, adaptive"),
    (("--budget-design", "adaptive"), "--budget-design applies with --budget"),
])
def test_bad_seeds_and_budget_flags_are_one_message(cli_run, flags, message):
    out = cli_run("run", "mcq", "--data", FIXTURES / "mcq_small.jsonl", *flags)
    assert out.code != 0 and message in out.err and "Traceback" not in out.err


def test_math_sources_are_told_from_multiple_choice_files():
    assert is_math_source("gsm8k") and is_math_source("math500") and is_math_source(str(GSM8K))
    assert is_math_source(str(FIXTURES / "math_small.jsonl"))
    assert not is_math_source(str(FIXTURES / "mcq_small.jsonl")) and not is_math_source("mmlu")
    assert not is_math_source(None)


def test_math_templates_and_variants():
    templates = load_math_templates()
    assert templates[0].name == "base" and len(templates) == 8
    problem = Item("p1", "What is 2+2?", (), 0)
    variants = expand_math(problem, ("prompt", "seeds"), Design(templates, seeds=3))
    assert [v.family for v in variants] == ["prompt"] * 8 + ["seeds"] * 3
    assert all("What is 2+2?" in v.messages[-1].content and v.labels == () for v in variants)
    assert "\\boxed{}" in next(v for v in variants if v.name == "boxed").messages[-1].content


def test_budget_asks_a_share_and_the_full_run_finds_it_cached(cli_run, stub):
    flags = ("--model", _model(stub), "--families", "prompt", "--limit", "30")
    part = cli_run("run", "mcq", *flags, "--budget", "0.2", "--run-id", "part")
    assert part.code == 0, part.err
    asked = part.samples()
    assert len(asked) == 60  # 20% of 30 questions x 10 templates: two templates per question
    assert {s["item_id"] for s in asked}.__len__() == 30
    counts = {}
    for s in asked:
        counts[s["variant"]] = counts.get(s["variant"], 0) + 1
    assert len(counts) == 10 and max(counts.values()) - min(counts.values()) <= 1
    est = part.results()["budget"]["openai:stub"]["prompt"]
    assert est["asked"] == 60 and est["cells"] == 300 and est["budget"] == 0.2
    assert set(est["variants"]) == set(counts) and set(est["quantiles"]) == {"5%", "50%", "95%"}
    for e in (*est["variants"].values(), *est["quantiles"].values(), est["spread"]):
        assert e["ci_low"] <= e["value"] <= e["ci_high"]
    report = [s for s in sections(Run(part.folder, part.results())) if s.title == "mcq · budgeted estimate"]
    assert len(report) == 1 and len(report[0].tables[0].rows) == 10 + 3 + 1
    assert "estimate of the full grid from 60 of 300 cells" in part.out
    # the terminal says the family metrics above the estimate are of the asked cells only
    assert "of the asked cells only" in " ".join(part.out.split())

    full = cli_run("run", "mcq", *flags, "--run-id", "full")
    usage = full.results()["models"]["openai:stub"]["usage"]
    assert usage["requests"] == 300 and usage["cached"] == 60 and usage["new"] == 240
    cached = {s["key"] for s in full.samples() if s["cached"]}
    assert cached == {s["key"] for s in asked}  # every budgeted cell, and only those, was a cache hit
    assert "budget" not in full.results()


def test_the_adaptive_design_asks_the_budget_in_two_stages_and_a_rerun_the_same_cells(cli_run, stub):
    flags = ("--model", _model(stub), "--families", "prompt", "--limit", "30", "--budget", "0.2",
             "--budget-design", "adaptive")
    first = cli_run("run", "mcq", *flags, "--run-id", "a1")
    assert first.code == 0, first.err
    asked = first.samples()
    assert len(asked) == 60 and first.results()["design"]["budget_design"] == "adaptive"
    stratified = cli_run("run", "mcq", *flags[:-1], "stratified", "--run-id", "s1").samples()
    assert len(stratified) == 60 and {s["key"] for s in stratified} != {s["key"] for s in asked}
    again = cli_run("run", "mcq", *flags, "--run-id", "a2")
    usage = again.results()["models"]["openai:stub"]["usage"]
    assert usage["requests"] == 60 and usage["cached"] == 60 and usage["new"] == 0
    assert [s["key"] for s in again.samples()] == [s["key"] for s in asked]  # the same cells, same order


def test_budget_under_loglik_scores_a_share_and_estimates_every_rule(cli_run, stub):
    flags = ("--model", _model(stub), "--families", "order", "--limit", "30", "--scoring", "loglik")
    part = cli_run("run", "mcq", *flags, "--budget", "0.25", "--run-id", "part")
    assert part.code == 0, part.err
    asked = part.samples()
    rules = {s["family"] for s in asked}
    assert rules == {"order/loglik-label", "order/loglik-text", "order/loglik-text-norm"}  # the stub scores text
    cells = {(s["item_id"], s["variant"]) for s in asked}
    assert len(asked) == 3 * len(cells)  # each asked cell scored under every rule, no other cell
    estimates = part.results()["budget"]["openai:stub"]
    assert set(estimates) == rules
    for family, est in estimates.items():
        assert est["asked"] == len(cells) and est["budget"] == 0.25
        assert est["asked"] == round(0.25 * est["cells"])
        assert set(est["variants"]) == {s["variant"] for s in asked if s["family"] == family}

    full = cli_run("run", "mcq", *flags, "--run-id", "full")
    assert full.code == 0, full.err
    whole = {(s["item_id"], s["variant"]) for s in full.samples()}
    assert cells < whole and len(whole) == estimates["order/loglik-label"]["cells"]
    # the budgeted cells' scores came from the store: the same requests
    assert all(s["cached"] for s in full.samples() if (s["item_id"], s["variant"]) in cells)
    assert not any(s["cached"] for s in full.samples() if (s["item_id"], s["variant"]) not in cells)


def test_estimate_counts_only_the_budgeted_cells(tmp_path, stub):
    from robusteval.run import estimate_suite

    config = build_config({}, {"suite": "mcq", "families": ("prompt",), "limit": 30, "budget": 0.2,
                               "models": (_model(stub),), "cache_dir": str(tmp_path / "cache"),
                               "out_dir": str(tmp_path / "runs")})
    (by_model,) = asyncio.run(estimate_suite(config))
    assert by_model.to_send == 60 and stub.state.total == 0


PINNED_SEEDS_ACCURACY = 0.28
PINNED_SEEDS_CONSISTENCY = 0.26
PINNED_MATH_PROMPT_RIGHT = 3
