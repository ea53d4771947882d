"""--scoring loglik: options ranked by log-likelihood, on three backends."""

from __future__ import annotations

import pytest

from robusteval.suites.mcq.ask import ANSWER_PREFIX
from robusteval.testing.openai_stub import StubServer, token_logprob

LOGLIK = ("run", "mcq", "--quiet", "--scoring", "loglik", "--run-id", "ll")


def test_loglik_over_openai_completions_echo(cli_run, mcq_file):
    with StubServer() as stub:
        results, samples = cli_run(*LOGLIK, "--model", stub.model(), "--data", mcq_file, "--families",
                                   "order").written()
    families = set(results["metrics"]["openai:stub"])
    assert families == {"order/loglik-label", "order/loglik-text", "order/loglik-text-norm"}
    # the stub's log-probabilities are known: check the label rule picks the most likely label
    for s in (s for s in samples if s["family"] == "order/loglik-label"):
        best = max(s["labels"], key=lambda lab: token_logprob(f" {lab}"))
        assert s["answer_label"] == best and s["status"] == "ok"
    # text-norm divides by length: it can disagree with text; both are reported
    text = {(s["item_id"], s["variant"]): s["answer_option"] for s in samples if s["family"] == "order/loglik-text"}
    assert len(text) == 19


def test_loglik_on_hf_tiny_model(cli_run, mcq_file, tiny_hf_model):
    results, samples = cli_run(*LOGLIK, "--model", f"hf:{tiny_hf_model}", "--data", mcq_file, "--families", "format",
                               "--limit", "2").written()
    metrics = results["metrics"][f"hf:{tiny_hf_model}"]
    assert set(metrics) == {"format/loglik-label", "format/loglik-text", "format/loglik-text-norm"}
    assert len(samples) == 3 * 12 and all(s["status"] == "ok" for s in samples)
    usage = results["models"][f"hf:{tiny_hf_model}"]["usage"]
    assert usage["failed"] == 0 and usage["new"] > 0


@pytest.mark.slow
def test_loglik_labels_on_embedded_model(cli_run, mcq_file):
    results, samples = cli_run(*LOGLIK, "--model", "llamacpp", "--data", mcq_file, "--families", "format",
                               "--limit", "2").written()
    assert set(results["metrics"]["llamacpp"]) == {"format/loglik-label"}  # no prompt logprobs: labels only
    assert len(samples) == 12 and all(s["status"] == "ok" for s in samples)
    assert all(s["response"].count("=") == len(s["labels"]) for s in samples)
    assert ANSWER_PREFIX == "The best answer is"
