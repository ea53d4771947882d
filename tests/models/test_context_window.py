"""The context window of every backend through one path (`models.base.context_window`): the estimate
warns of prompts that would not fit it before a run, and a run whose prompts did not fit says the
same command would fail again. llama.cpp's is its ``n_ctx`` (tests/suites/test_persona_realdata.py);
here an OpenAI-compatible server's (the spec's ``context_window`` or what ``/models`` reports, on the
stub); a transformers model's (its configuration) in tests/models/test_hf.py."""

from __future__ import annotations

import asyncio
import json

from robusteval.cli import main
from robusteval.models import load_backend, parse_model_spec
from robusteval.models.base import context_window, over_window
from robusteval.models.openai_compat import OpenAIBackend, reported_window
from robusteval.models.pool import PoolBackend, Replica
from robusteval.testing.openai_stub import StubConfig, StubServer


def _mcq(model: str, tmp_path, mcq_file, *extra: str) -> list[str]:
    return ["run", "mcq", "--model", model, "--data", str(mcq_file), "--limit", "2", "--families", "format",
            "--max-tokens", "4", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"), *extra]


def _said(capsys) -> str:
    out = capsys.readouterr()
    return " ".join((out.out + out.err).split())


def test_what_the_window_rests_on():
    assert context_window(OpenAIBackend("m", "http://a/v1", "K", False)) is None
    assert context_window(OpenAIBackend("m", "http://a/v1", "K", False, context_window=4096)) == 4096
    assert context_window(object()) is None
    assert not over_window(4095, 4096) and over_window(4096, 4096)  # no room left for one token of reply
    assert over_window(4000, 4096, 100) and not over_window(3996, 4096, 100)  # where max_tokens must fit too
    assert not over_window(10**6, None)
    assert reported_window({"id": "m", "max_model_len": 32768}) == 32768  # vLLM
    assert reported_window({"id": "m", "context_length": 8192}) == 8192  # OpenRouter, LM Studio
    assert reported_window({"id": "m", "context_window": 131072}) == 131072  # Groq
    assert reported_window({"id": "m", "owned_by": "openai"}) is None  # OpenAI's own says nothing
    assert reported_window({"id": "m", "max_model_len": "big"}) is None and reported_window("m") is None


def test_a_pool_holds_the_least_window_of_its_replicas():
    replicas = [Replica(OpenAIBackend("m", f"http://{h}/v1", "K", False, context_window=w))
                for h, w in (("a", 8192), ("b", None), ("c", 4096))]
    assert PoolBackend(replicas, model="m").context_window == 4096
    assert PoolBackend(replicas[1:2], model="m").context_window is None


def test_an_openai_backend_reads_the_window_the_server_reports_and_the_spec_wins():
    async def window(spec: str) -> int | None:
        backend = load_backend(parse_model_spec(spec))
        await backend.start()
        await backend.close()
        return context_window(backend)

    with StubServer(StubConfig(max_model_len=2048)) as vllm_like, StubServer() as silent:
        assert asyncio.run(window(vllm_like.model("stub"))) == 2048
        assert asyncio.run(window(vllm_like.model("stub") + "&context_window=1024")) == 1024
        assert asyncio.run(window(silent.model("stub"))) is None
        assert asyncio.run(window(silent.model("stub") + "&context_window=1024")) == 1024
        assert asyncio.run(window(vllm_like.model("stub") + "&batch=1")) == 2048  # the Batch API's backend too


def test_the_estimate_warns_of_prompts_longer_than_an_openai_servers_window(tmp_path, mcq_file, capsys):
    with StubServer(StubConfig(max_model_len=40)) as server:
        assert main(_mcq(server.model("stub"), tmp_path, mcq_file, "--estimate")) == 0
        text = _said(capsys)
        assert ("warning: 12 of the 12 requests to openai:stub have prompts longer than its context window "
                "(40 tokens): they would fail") in text
        assert "a vLLM server: its --max-model-len" in text
        assert server.counters()["total"] == 0  # nothing was asked

        assert main(_mcq(server.model("stub") + "&context_window=4096", tmp_path, mcq_file, "--estimate")) == 0
        assert "context window" not in _said(capsys)


def test_for_an_openai_server_the_estimate_counts_max_tokens_in_the_window(tmp_path, mcq_file, capsys):
    """vLLM and OpenAI refuse a prompt + max_tokens over the window (llama.cpp only a prompt that fills
    it): the same prompts fit at 4 tokens of reply and do not at 64."""
    def _mcq_max(model, max_tokens):
        args = _mcq(model, tmp_path, mcq_file, "--estimate")
        args[args.index("--max-tokens") + 1] = max_tokens
        return args

    with StubServer(StubConfig(max_model_len=100)) as server:
        assert main(_mcq_max(server.model("stub"), "4")) == 0
        assert "context window" not in _said(capsys)
        assert main(_mcq_max(server.model("stub"), "64")) == 0
        assert "warning: 12 of the 12 requests to openai:stub have prompts longer than its context window " \
               "(100 tokens)" in _said(capsys)


def test_a_run_whose_prompts_a_server_refuses_says_a_rerun_would_fail_the_same_way(tmp_path, mcq_file, capsys):
    """The stub refuses as vLLM does (400, "maximum context length"): not retried, and the last line
    points at the window, not at a rerun."""
    with StubServer(StubConfig(max_model_len=10)) as server:
        code = main(_mcq(server.model("stub"), tmp_path, mcq_file, "--quiet", "--run-id", "long"))
        counters = server.counters()
    assert code == 3  # requests failed: the documented exit code
    assert counters["outcomes"] == {"too_long": 12}  # each asked once: a 400 is not retried
    text = _said(capsys)
    assert "the same command would fail the same way" in text and "run the same command again" not in text
    failures = json.loads((tmp_path / "runs" / "long" / "results.json").read_text())["failures"]
    assert len(failures) == 12 and all("maximum context length is 10 tokens" in f["error"] for f in failures)
