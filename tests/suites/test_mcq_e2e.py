"""End to end through the CLI with the real embedded model, in-process and over real HTTP."""

from __future__ import annotations

import json

import pytest

from robusteval.cli import main

pytestmark = pytest.mark.slow


def _run(tmp_path, *extra: str, run_id: str) -> dict:
    code = main(["run", "mcq", "--quiet", "--max-tokens", "48", "--cache-dir", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "runs"), "--run-id", run_id, *extra])
    assert code == 0
    folder = tmp_path / "runs" / run_id
    results = json.loads((folder / "results.json").read_text())
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return {"results": results, "samples": samples}


def _check_consistent(out: dict, n_items: int, n_order: int) -> None:
    samples, results = out["samples"], out["results"]
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


def test_embedded_model_end_to_end_and_resume(tmp_path, mcq_file):
    first = _run(tmp_path, "--data", str(mcq_file), run_id="a")
    # 5 items: 4 with 4 options, 1 with 3 -> 4*4+3 order variants; one per item equals a format variant.
    _check_consistent(first, 5, 19)
    usage = first["results"]["models"]["llamacpp"]["usage"]
    assert usage["requests"] == 5 * 6 + 19
    assert usage["new"] == 5 * 6 + 19 - 5  # the identity order variant is asked once, not twice
    assert usage["failed"] == 0 and usage["prompt_tokens"] > 0
    assert first["results"]["models"]["llamacpp"]["fingerprint"].startswith("llamacpp:SmolLM2-135M")

    again = _run(tmp_path, "--data", str(mcq_file), run_id="b")
    usage = again["results"]["models"]["llamacpp"]["usage"]
    assert usage["new"] == 0 and usage["cached"] == usage["requests"]  # a rerun asks nothing
    strip = lambda rows: [{k: v for k, v in r.items() if k != "cached"} for r in rows]  # noqa: E731
    assert strip(again["samples"]) == strip(first["samples"])
    assert again["results"]["metrics"] == first["results"]["metrics"]


def test_real_llama_cpp_http_server(tmp_path, mcq_file, llama_http):
    out = _run(tmp_path, "--data", str(mcq_file), "--limit", "2", "--families", "format",
               "--model", f"openai:smollm?base_url={llama_http}", run_id="http")
    assert len(out["samples"]) == 2 * 6
    model = out["results"]["models"]["openai:smollm"]
    assert model["fingerprint"].startswith(f"openai:{llama_http}:smollm:")
    assert model["usage"]["new"] == 12 and model["usage"]["completion_tokens"] > 0
    assert all(s["response"] for s in out["samples"])


def test_offline_mmlu_default_dataset(tmp_path):
    out = _run(tmp_path, "--limit", "2", "--families", "order", run_id="mmlu")
    assert len(out["samples"]) == 8
    assert {s["category"] for s in out["samples"]} and all(s["category"] for s in out["samples"])


def test_sampled_repeats_are_distinct_requests(tmp_path, mcq_file):
    out = _run(tmp_path, "--data", str(mcq_file), "--limit", "1", "--families", "format", "--temperature", "0.9",
               "--samples", "3", run_id="samples")
    usage = out["results"]["models"]["llamacpp"]["usage"]
    assert len(out["samples"]) == 18 and usage["new"] == 18  # 6 variants x 3 samples, none collapsed
    assert len({s["key"] for s in out["samples"]}) == 18
    assert {s["sample"] for s in out["samples"]} == {0, 1, 2}
