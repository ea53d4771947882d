"""End to end through the CLI with the real embedded model, in-process and over real HTTP."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

MCQ = ("run", "mcq", "--quiet", "--max-tokens", "48")


def _check_consistent(results: dict, samples: list[dict], n_items: int, n_order: int) -> None:
    assert len(samples) == n_items * 6 + n_order
    for s in samples:
        assert s["status"] in ("ok", "invalid")  # nothing failed against a healthy model
        assert s["correct"] == (s["answer_option"] == s["gold_option"])
        assert s["prompt"] and s["response"] is not None
    metrics = next(iter(results["metrics"].values()))
    for family in ("order", "format"):
        fam = [s for s in samples if s["family"] == family]
        acc = sum(s["correct"] for s in fam) / len(fam)
        assert metrics[family]["accuracy"]["value"] == pytest.approx(acc)
        lo, hi = metrics[family]["accuracy"]["ci_low"], metrics[family]["accuracy"]["ci_high"]
        assert lo <= acc <= hi


def test_embedded_model_end_to_end_and_resume(cli_run, mcq_file):
    results, samples = cli_run(*MCQ, "--run-id", "a", "--data", mcq_file).written()
    # 5 items: 4 with 4 options, 1 with 3 -> 4*4+3 order variants; one per item equals a format variant.
    _check_consistent(results, samples, 5, 19)
    usage = results["models"]["llamacpp"]["usage"]
    assert usage["requests"] == 5 * 6 + 19
    assert usage["new"] == 5 * 6 + 19 - 5  # the identity order variant is asked once, not twice
    assert usage["failed"] == 0 and usage["prompt_tokens"] > 0
    assert results["models"]["llamacpp"]["fingerprint"].startswith("llamacpp:SmolLM2-135M")

    again, samples_again = cli_run(*MCQ, "--run-id", "b", "--data", mcq_file).written()
    usage = again["models"]["llamacpp"]["usage"]
    assert usage["new"] == 0 and usage["cached"] == usage["requests"]  # a rerun asks nothing
    strip = lambda rows: [{k: v for k, v in r.items() if k != "cached"} for r in rows]  # noqa: E731
    assert strip(samples_again) == strip(samples)
    assert again["metrics"] == results["metrics"]


def test_real_llama_cpp_http_server(cli_run, mcq_file, llama_http):
    results, samples = cli_run(*MCQ, "--run-id", "http", "--data", mcq_file, "--limit", "2", "--families", "format",
                               "--model", f"openai:smollm?base_url={llama_http}").written()
    assert len(samples) == 2 * 6
    model = results["models"]["openai:smollm"]
    assert model["fingerprint"].startswith(f"openai:{llama_http}:smollm:")
    assert model["usage"]["new"] == 12 and model["usage"]["completion_tokens"] > 0
    assert all(s["response"] for s in samples)


def test_offline_mmlu_default_dataset(cli_run):
    _, samples = cli_run(*MCQ, "--run-id", "mmlu", "--limit", "2", "--families", "order").written()
    assert len(samples) == 8
    assert {s["category"] for s in samples} and all(s["category"] for s in samples)


def test_sampled_repeats_are_distinct_requests(cli_run, mcq_file):
    results, samples = cli_run(*MCQ, "--run-id", "samples", "--data", mcq_file, "--limit", "1", "--families",
                               "format", "--temperature", "0.9", "--samples", "3").written()
    usage = results["models"]["llamacpp"]["usage"]
    assert len(samples) == 18 and usage["new"] == 18  # 6 variants x 3 samples, none collapsed
    assert len({s["key"] for s in samples}) == 18
    assert {s["sample"] for s in samples} == {0, 1, 2}
