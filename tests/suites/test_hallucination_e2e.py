"""The hallucination suite end to end through the CLI with the real embedded model (and the tiny
NLI model as judge and baseline): all three steps, a majority vote, the written files, a resume."""

from __future__ import annotations

import pytest
from sklearn.metrics import precision_recall_fscore_support

from robusteval.cli import main

pytestmark = pytest.mark.slow


HALLUCINATION = ("run", "hallucination", "--quiet", "--limit", "2", "--max-tokens", "24", "--label-max-tokens", "6",
                 "--prompts", "incorrect,support", "--bootstrap", "200")


def test_embedded_model_all_steps(cli_run, tiny_nli_model):
    args = ("--nli-model", tiny_nli_model, "--ensemble", "llamacpp/incorrect+llamacpp/support")
    out = cli_run(*HALLUCINATION, "--run-id", "a", *args)
    results, samples = out.written()
    by_step = {step: [s for s in samples if s["step"] == step]
               for step in ("generation", "judge", "detection", "cross")}
    assert len(by_step["generation"]) == 2
    for g in by_step["generation"]:
        assert g["status"] in ("ok", "invalid") and len(g["responses"]) == 2 and all(g["responses"])
        assert (g["status"] == "ok") == (g["hyp_plus"] is not None and g["hyp_minus"] is not None and not g["reason"])
    valid = [g for g in by_step["generation"] if g["status"] == "ok"]
    # the LLM judge and the NLI judge each see hyp+ and hyp- of every valid generation
    assert len(by_step["judge"]) == 4 * len(valid)
    configs = ["llamacpp/incorrect", "llamacpp/support", "nli", "vote(llamacpp/incorrect+llamacpp/support)"]
    assert sorted({s["config"] for s in by_step["detection"]}) == sorted(configs)
    assert len(by_step["detection"]) == 2 * len(configs)
    assert len(by_step["cross"]) == len(valid) * len(configs)
    for s in by_step["detection"] + by_step["cross"]:
        assert s["status"] in ("ok", "invalid")  # nothing failed against a healthy model
        assert s["correct"] == (s["predicted"] == s["gold"])
    # the F1 in results.json is the macro F1 scikit-learn computes from the samples (invalid = wrong)
    metrics = results["metrics"]
    for config in configs:
        rows = [s for s in by_step["detection"] if s["config"] == config]
        gold = [s["gold"] for s in rows]
        pred = [s["predicted"] or "invalid" for s in rows]
        labels = sorted(set(gold) | (set(pred) - {"invalid"}))
        f1 = precision_recall_fscore_support(gold, pred, labels=labels, average="macro", zero_division=0)[2]
        assert metrics["detection"]["detectors"][config]["f1"]["value"] == pytest.approx(f1)
        assert metrics["detection"]["detectors"][config]["invalid"] == sum(s["status"] == "invalid" for s in rows)
    assert set(metrics) == {"generation", "detection", "cross"}
    assert metrics["generation"]["llamacpp"]["items"] == 2
    usage = results["models"]["llamacpp"]["usage"]
    asked = 2 * 2 + 2 * len(valid) + 2 * 2 + len(valid) * 2  # generation, judge, detection, cross
    assert usage["requests"] == asked and usage["failed"] == 0 and usage["completion_tokens"] > 0
    assert results["hallucination"]["detector_configs"] == ["llamacpp/incorrect", "llamacpp/support", "nli"]
    summary = (out.folder / "summary.md").read_text()
    assert "## generation" in summary and "## detection" in summary and "## generator x detector (F1)" in summary
    assert (out.folder / "matrix.csv").read_text().startswith("generator,detector,f1")

    again, _ = cli_run(*HALLUCINATION, "--run-id", "b", *args).written()
    usage = again["models"]["llamacpp"]["usage"]
    assert usage["new"] == 0 and usage["cached"] == usage["requests"]  # a rerun asks nothing
    assert again["metrics"] == results["metrics"]


def test_user_errors_end_in_one_message(tmp_path, capsys):
    code = main(["run", "hallucination", "--ensemble", "llamacpp/incorrect+nli", "--cache-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown detector configuration nli" in err and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "source": "s", "hyp1": "a", "hyp2": "b", "label": "hyp9"}\n')
    assert main(["run", "hallucination", "--step", "detection", "--data", str(bad), "--cache-dir", str(tmp_path)]) == 2
    assert "bad.jsonl:1: label 'hyp9' is not hyp1 or hyp2" in capsys.readouterr().err
