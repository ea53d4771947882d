"""Shared fixtures: a real llama.cpp HTTP server on loopback, and small datasets we wrote ourselves."""

from __future__ import annotations

import functools
import json
import os
import signal
from pathlib import Path
from typing import NamedTuple

import pytest

# A report that cannot be written is a warning for users (their results are safe) but an error in
# every test's run, in-process or in a subprocess (which inherits the environment).
os.environ["ROBUSTEVAL_STRICT_REPORT"] = "1"

# A script that starts pytest in the background (`cmd &` without job control) leaves SIGINT ignored,
# and every child inherits that: the tests that stop a run or `serve` with SIGINT, as a user's
# Ctrl-C does, would wait forever. Handled here, SIGINT is the default again in every child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

FIXTURES = Path(__file__).parent / "fixtures"
# Real files from the public releases, beside the repository (never copied into it).
REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


@pytest.fixture(scope="session")
def realdata() -> Path:
    """``../shared/realdata``; skips where it is absent (a user's clone), fails where CI requires it."""
    if not REALDATA.is_dir():
        if os.environ.get("ROBUSTEVAL_REQUIRE_REALDATA"):
            pytest.fail(f"{REALDATA} is missing and ROBUSTEVAL_REQUIRE_REALDATA is set (CI must test real files)")
        pytest.skip(f"{REALDATA} not found (real release files; see docs)")
    return REALDATA


@pytest.fixture(scope="session")
def llama_http():
    """A real llama.cpp OpenAI-compatible server (embedded SmolLM2) in its own process; yields base_url."""
    from robusteval.testing.llama_server import in_subprocess

    with in_subprocess(parallel=2) as base_url:
        yield base_url


class CliRun(NamedTuple):
    """What one in-process ``robusteval`` command gave: its exit code, the run folder it wrote (None
    if none), and what it printed (empty where it was not captured: `run_cli` without ``capsys``)."""

    code: int
    folder: Path | None
    out: str
    err: str

    def results(self) -> dict:
        assert self.folder is not None, f"no run folder (exit {self.code}): {self.err}"
        return json.loads((self.folder / "results.json").read_text(encoding="utf-8"))

    def samples(self) -> list[dict]:
        assert self.folder is not None, f"no run folder (exit {self.code}): {self.err}"
        return [json.loads(line) for line in (self.folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]

    def written(self) -> tuple[dict, list[dict]]:
        """``(results, samples)`` of a run that must have succeeded (exit 0)."""
        assert self.code == 0, f"exit {self.code}: {self.err}"
        return self.results(), self.samples()

    def refusal(self) -> str:
        """The one line a refused command printed (asserted: exit 2, one line, no traceback)."""
        lines = [line for line in self.err.splitlines() if line.strip()]
        assert self.code == 2 and "Traceback" not in self.out + self.err and len(lines) == 1, (self.code, self.err)
        return lines[0]


def run_cli(root: Path, *args: str | Path, capsys=None) -> CliRun:
    """`robusteval.cli.main` in this process; a command that runs a suite (``run``, ``tree build``) gets
    ``--out ROOT/runs --cache-dir ROOT/cache`` (later flags win). The folder is ``--run-id``'s, else the
    one new folder in ROOT/runs. What it prints is captured where ``capsys`` is given."""
    from robusteval.cli import main

    runs = root / "runs"
    argv = [str(a) for a in args]
    if argv[:1] == ["run"] or argv[:2] == ["tree", "build"]:
        argv[2:2] = ["--out", str(runs), "--cache-dir", str(root / "cache")]
    before = set(runs.iterdir()) if runs.is_dir() else set()
    if capsys is not None:
        capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    new = sorted(set(runs.iterdir()) - before) if runs.is_dir() else []
    named = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--run-id"]
    folder = runs / named[-1] if named and (runs / named[-1]).is_dir() else (new[0] if len(new) == 1 else None)
    return CliRun(code, folder, out, err)


@pytest.fixture
def cli_run(tmp_path, capsys):
    """``cli_run("run", "mcq", ...) -> CliRun(code, folder, out, err)``: `run_cli` in this test's
    tmp_path, its output captured."""
    return functools.partial(run_cli, tmp_path, capsys=capsys)


@pytest.fixture(scope="session")
def cli_run_in():
    """``cli_run_in(root, "run", "mcq", ...) -> CliRun``: `run_cli` in a folder of the caller's (a module
    fixture's ``tmp_path_factory`` folder), output not captured."""
    return run_cli


def bare_context(engine, models=(), *, suite: str = "mcq", options=None, samples=None, params=None):
    """A `SuiteContext` around an engine the test made (its models added), for calling a suite's
    steps without a run folder: ``options`` default to the suite's, samples are kept in a writer
    with no file (``samples``: one the test reads)."""
    from rich.console import Console

    from robusteval.config import RunConfig
    from robusteval.suites import get_suite
    from robusteval.suites.base import SuiteContext
    from robusteval.types import GenParams

    options = get_suite(suite).Options() if options is None else options
    extra = {} if samples is None else {"samples": samples}
    return SuiteContext(config=RunConfig(suite=suite, models=tuple(models), options=options), options=options,
                        engine=engine, models=list(models), params=params or GenParams(),
                        console=Console(quiet=True), **extra)


@pytest.fixture
def stub():
    """The deterministic OpenAI-compatible stub (`testing.openai_stub`) on loopback, with fresh hit
    counters; ``stub.model("NAME")`` is a ``--model`` on it (each NAME answers its own way)."""
    from robusteval.testing.openai_stub import StubServer

    with StubServer() as server:
        yield server


@pytest.fixture
def suite_context():
    """`bare_context`, for a test that calls a suite's steps on its own engine."""
    return bare_context


@pytest.fixture
def mcq_file() -> Path:
    return FIXTURES / "mcq_small.jsonl"



TINY_WORDS = "the a cat dog sat on mat ran far away red blue green user assistant system : answer is".split()
TINY_TEMPLATE = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}assistant : {% endif %}")


def _save_tiny_hf_model(path, seed: int) -> None:
    """A randomly initialised two-layer Llama with a word-level tokenizer, built offline."""
    from robusteval.testing.tiny_hf import save_tiny_llama

    save_tiny_llama(path, TINY_WORDS, TINY_TEMPLATE, seed=seed)


@pytest.fixture(scope="session")
def save_tiny_hf_model():
    pytest.importorskip("transformers")
    return _save_tiny_hf_model


@pytest.fixture(scope="session")
def tiny_hf_model(tmp_path_factory, save_tiny_hf_model):
    path = tmp_path_factory.mktemp("tiny-hf")
    save_tiny_hf_model(path, seed=0)
    return path


NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


@pytest.fixture(scope="session")
def tiny_nli_model(tmp_path_factory):
    """A randomly initialised two-layer BERT NLI classifier with a word-level tokenizer, built offline.

    Its predictions are meaningless; it exercises the real loading and scoring path of NLI judges."""
    pytest.importorskip("transformers")
    import tokenizers
    import torch
    import transformers

    path = tmp_path_factory.mktemp("tiny-nli")
    vocab = {w: i for i, w in enumerate(["[UNK]", "[PAD]", "[CLS]", "[SEP]", *TINY_WORDS])}
    raw = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    raw.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]",
                                               cls_token="[CLS]", sep_token="[SEP]")
    tok.save_pretrained(path)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=2, max_position_embeddings=128, num_labels=3,
                                     id2label=NLI_LABELS, label2id={v: k for k, v in NLI_LABELS.items()})
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def real_mcq_run(tmp_path_factory):
    """A real mcq run with the embedded model (3 questions, order family, short replies): the run
    folder, with its report written at the end of the run as every run does."""
    import asyncio

    from robusteval.configure import build_config
    from robusteval.run import run_suite

    root = tmp_path_factory.mktemp("real-run")
    config = build_config({}, {"suite": "mcq", "data": str(FIXTURES / "mcq_small.jsonl"), "limit": 3,
                               "families": ("order",), "max_tokens": 24, "cache_dir": str(root / "cache"),
                               "out_dir": str(root / "runs"), "run_id": "real-mcq"})
    run_dir, _, _ = asyncio.run(run_suite(config, quiet=True))
    return run_dir


HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture
def hostile_run(real_mcq_run, tmp_path):
    """A copy of the real run in which a model answer and a dataset prompt carry HTML/JS payloads."""
    import json
    import shutil

    run = tmp_path / "runs" / "hostile"
    shutil.copytree(real_mcq_run, run)
    rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    rows[0]["response"] = f"The best answer is {HOSTILE}"
    rows[1]["prompt"] = f"{rows[1]['prompt']} {HOSTILE}"
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = json.loads((run / "results.json").read_text())
    results["run_id"] = "hostile"
    results["models"][f"evil{HOSTILE}"] = results["models"]["llamacpp"]
    results["metrics"][f"evil{HOSTILE}"] = results["metrics"]["llamacpp"]
    (run / "results.json").write_text(json.dumps(results))
    for stale in ("report.html", "report.md"):
        (run / stale).unlink(missing_ok=True)
    return run
