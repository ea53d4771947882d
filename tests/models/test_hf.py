"""The transformers backend on a tiny randomly initialised model built and saved by the test."""

from __future__ import annotations

import asyncio
import math

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from robusteval.errors import BackendError, UserError  # noqa: E402
from robusteval.models import load_backend, parse_model_spec  # noqa: E402
from robusteval.models.base import context_window  # noqa: E402
from robusteval.types import GenParams, Message  # noqa: E402


async def _with_backend(path, fn):
    backend = load_backend(parse_model_spec(f"hf:{path}"))
    await backend.start()
    try:
        return backend, await fn(backend)
    finally:
        await backend.close()


MSG = (Message("user", "the cat sat on the mat"),)


def test_greedy_generation_is_deterministic_with_logprobs(tiny_hf_model):
    params = GenParams(max_tokens=6, logprobs=True, top_logprobs=3)

    async def go(b):
        return await b.chat(MSG, params), await b.chat(MSG, params)

    backend, (a, b) = asyncio.run(_with_backend(tiny_hf_model, go))
    assert a == b
    assert backend.fingerprint.startswith(f"hf:{tiny_hf_model}:")
    assert a.finish_reason in ("stop", "length") and a.completion_tokens <= 6
    assert a.prompt_tokens == len("user : the cat sat on the mat assistant :".split())
    assert len(a.logprobs) == a.completion_tokens
    for t in a.logprobs:
        assert t.logprob <= 0 and len(t.top) == 3
        values = [v for _, v in t.top]
        assert values == sorted(values, reverse=True)
        assert t.logprob == pytest.approx(values[0], abs=1e-5)  # greedy picks the most likely token


def test_sampling_depends_on_seed(tiny_hf_model):
    async def go(b):
        return [(await b.chat(MSG, GenParams(temperature=1.0, max_tokens=8, seed=s))).text for s in range(6)]

    _, texts = asyncio.run(_with_backend(tiny_hf_model, go))
    assert len(set(texts)) >= 2

    _, again = asyncio.run(_with_backend(tiny_hf_model, go))
    assert again == texts  # the same seed gives the same sample


def test_stop_string_truncates(tiny_hf_model):
    async def go(b):
        full = await b.chat(MSG, GenParams(max_tokens=8))
        word = full.text.split()[1] if len(full.text.split()) > 1 else full.text.split()[0]
        cut = await b.chat(MSG, GenParams(max_tokens=8, stop=(word,), logprobs=True))
        return full, word, cut

    _, (full, word, cut) = asyncio.run(_with_backend(tiny_hf_model, go))
    assert word not in cut.text and full.text.startswith(cut.text)
    assert cut.finish_reason == "stop" and len(cut.logprobs) == cut.completion_tokens < full.completion_tokens


def test_loglikelihood(tiny_hf_model):
    async def go(b):
        greedy = await b.chat(MSG, GenParams(max_tokens=1, logprobs=True, top_logprobs=1))
        return greedy, await b.loglikelihood(MSG, "", " " + greedy.text), await b.loglikelihood(MSG, "", " red blue")

    _, (greedy, first, other) = asyncio.run(_with_backend(tiny_hf_model, go))
    assert first.greedy and first.loglik == pytest.approx(greedy.logprobs[0].logprob, abs=1e-4)
    assert math.isfinite(other.loglik) and other.loglik < 0 and not other.greedy


def test_fingerprint_tracks_weights(tiny_hf_model, tmp_path, save_tiny_hf_model):
    save_tiny_hf_model(tmp_path, seed=1)

    async def nothing(b):
        return None

    a, _ = asyncio.run(_with_backend(tiny_hf_model, nothing))
    b, _ = asyncio.run(_with_backend(tmp_path, nothing))
    assert a.fingerprint.split(":")[-1] != b.fingerprint.split(":")[-1]


def test_missing_model_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        asyncio.run(_with_backend(tmp_path / "nope" / "model", lambda b: None))


def test_mcq_suite_runs_on_hf_backend(tiny_hf_model, tmp_path, mcq_file):
    import json

    from robusteval.cli import main

    code = main(["run", "mcq", "--quiet", "--model", f"hf:{tiny_hf_model}", "--data", str(mcq_file), "--limit", "2",
                 "--families", "format", "--max-tokens", "4", "--cache-dir", str(tmp_path / "c"),
                 "--out", str(tmp_path / "runs"), "--run-id", "hf"])
    assert code == 0
    results = json.loads((tmp_path / "runs" / "hf" / "results.json").read_text())
    usage = results["models"][f"hf:{tiny_hf_model}"]["usage"]
    assert usage["new"] == 12 and usage["failed"] == 0
    # a random model never writes "The best answer is": every reply is invalid, none failed
    assert results["metrics"][f"hf:{tiny_hf_model}"]["format"]["invalid"] == 12


def _words(n: int) -> tuple[Message, ...]:
    return (Message("user", " ".join(["cat"] * n)),)


def test_an_hf_models_window_is_its_configurations(tiny_hf_model):
    """The tiny model is built with 128 positions (tests/conftest.py); its word-level tokenizer makes
    one token a word, and the template adds 4 ("user :" and "assistant :"). A reply may take only the
    positions the prompt left (the random model stops early anyway, so what generate was asked is read)."""
    asked: list[int] = []

    async def go(b):
        generate = b._model.generate
        b._model.generate = lambda **kw: asked.append(kw["max_new_tokens"]) or generate(**kw)
        return (await b.count_prompt_tokens(_words(100)),
                await b.chat(_words(100), GenParams(max_tokens=40)),
                await b.chat(_words(10), GenParams(max_tokens=3)))

    backend, (counted, near_the_end, short) = asyncio.run(_with_backend(tiny_hf_model, go))
    assert context_window(backend) == 128
    assert counted == near_the_end.prompt_tokens == 104 and short.prompt_tokens == 14
    assert asked == [24, 3]  # 128 - 104 positions left of the 40 asked for; 3 where they fit


def test_an_hf_prompt_longer_than_the_window_fails_and_is_not_retried(tiny_hf_model):
    async def go(b):
        outcomes = []
        for call in (lambda: b.chat(_words(124), GenParams(max_tokens=4)),  # 128 tokens: no room for a reply
                     lambda: b.loglikelihood(_words(124), "", " cat")):
            with pytest.raises(BackendError) as caught:
                await call()
            outcomes.append(caught.value)
        return outcomes

    _, errors = asyncio.run(_with_backend(tiny_hf_model, go))
    for error, tokens in zip(errors, (128, 129), strict=True):  # the scored continuation is one more token
        assert not error.retryable
        assert str(error) == (f"the prompt is {tokens} tokens: no room for a reply in the model's context "
                              "window (128 tokens)")


def test_the_estimate_warns_of_prompts_longer_than_an_hf_models_window(tiny_hf_model, tmp_path, capsys):
    """Counted by the model's own tokenizer (`count_prompt_tokens`), before anything is asked; the
    same warning as llama.cpp's (`models.base.context_window`, tests/models/test_context_window.py)."""
    import json

    from robusteval.cli import main

    data = tmp_path / "long.jsonl"
    rows = [{"question": " ".join(["cat"] * words), "choices": ["red", "blue", "green", "dog"], "answer": "A"}
            for words in (10, 200, 20)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["run", "mcq", "--model", f"hf:{tiny_hf_model}", "--data", str(data), "--families", "format",
            "--max-tokens", "4", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"),
            "--estimate"]
    assert main(args) == 0
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert "prompt tokens counted by the model's tokenizer" in text
    assert f"warning: 6 of the 18 requests to hf:{tiny_hf_model} have prompts longer than its context window " \
           "(128 tokens): they would fail" in text
    assert "hf: a model with a longer one" in text
