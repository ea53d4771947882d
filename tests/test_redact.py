"""No API key reaches disk or the terminal, whatever a server echoes (`robusteval.redact` and its doors).

The end-to-end test runs real commands against the stub leaking the key (`StubConfig.echo_auth`: in
its /v1/models id, so in the fingerprint, and in every reply), then reads back every byte written
under the test's folder (run folder, report, store, export ledger, exported requests) and everything
printed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from robusteval.files import atomic_write_chunks
from robusteval.redact import REDACTED, add_env_secrets, add_secret, redact, redact_chunks, redacted_terminal
from robusteval.testing.openai_stub import StubConfig, StubServer

KEY = "sk-proj-TESTKEY0123456789abcdef"


def _leaks(root: Path, secret: str) -> list[str]:
    """The files under ``root`` holding ``secret``'s bytes (SQLite files and their WAL included)."""
    return [str(p.relative_to(root)) for p in sorted(root.rglob("*"))
            if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_key_echoed_by_the_server_reaches_no_file_and_no_terminal(cli_run, tmp_path, monkeypatch, mcq_file):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    flags = ("--data", mcq_file, "--limit", "2", "--families", "order")
    with StubServer(StubConfig(echo_auth=("models", "reply"))) as stub:
        model = f"openai:m?base_url={stub.base_url}"
        ran = cli_run("run", "mcq", "--model", model, *flags, "--run-id", "k")
        outputs = [ran, cli_run("report", tmp_path / "runs" / "k"),
                   cli_run("cache", "stats", "--cache-dir", tmp_path / "cache"),
                   cli_run("run", "mcq", "--model", model, *flags, "--cache-dir", tmp_path / "export-cache",
                           "--export-requests", tmp_path / "requests.jsonl")]
    assert [o.code for o in outputs] == [0, 0, 0, 0], outputs
    # the server did leak it: into the reply text, and into the fingerprint (the model id)
    samples = ran.samples()
    assert samples and all(s["response"].endswith(f"Bearer {REDACTED}") for s in samples)
    assert f"stub-model-Bearer {REDACTED}" in outputs[2].out
    assert (tmp_path / "export-cache" / "responses.exports.sqlite").is_file()
    assert (tmp_path / "requests.jsonl").is_file()
    assert _leaks(tmp_path, KEY) == []
    assert not [o for o in outputs if KEY in o.out + o.err]


def test_a_base_url_with_a_key_in_it_is_refused_in_one_line_that_does_not_show_it(cli_run, tmp_path, stub):
    secret = "sk-proj-URLKEY123"
    for url in (f"{stub.base_url}?key={secret}", f"{stub.base_url}?api_key={secret}", f"{stub.base_url}#{secret}",
                stub.base_url.replace("://", f"://user:{secret}@")):
        out = cli_run("run", "mcq", "--model", f"openai:m?base_url={url}", "--limit", "2", "--run-id", "u",
                      "--export-requests", tmp_path / "sec.jsonl")
        assert out.code == 2 and out.err.count("\n") == 1 and out.err.startswith("error: base_url in --model")
        assert secret not in out.out + out.err
    assert _leaks(tmp_path, secret) == [] and stub.state.total == 0


def test_a_key_split_between_two_chunks_is_redacted_too(tmp_path):
    add_secret(KEY)
    text = f"a {KEY} b {KEY}"
    for cut in (1, 5, len("a ") + 3, len(text) - 2):
        pieces = [text[:cut], text[cut:cut + 4], text[cut + 4:]]
        assert "".join(redact_chunks(pieces)) == f"a {REDACTED} b {REDACTED}"
    atomic_write_chunks(tmp_path / "f.txt", iter([text[:7], text[7:]]))
    assert (tmp_path / "f.txt").read_text() == f"a {REDACTED} b {REDACTED}"


def test_redacting_twice_changes_nothing():
    once = redact(f"Authorization: Bearer {KEY}; api_key={KEY}")
    assert once == f"Authorization: Bearer {REDACTED}; api_key={REDACTED}" and redact(once) == once


def test_the_environments_keys_are_known_before_any_backend_starts():
    add_env_secrets({"SOME_SERVICE_TOKEN": "tok-abcdefghijkl0123", "SORT_KEY": "question",
                     "PATH_KEY": "a b c d e f g h", "HOME": "/home/someone-with-a-long-name"})
    assert redact("tok-abcdefghijkl0123 question /home/someone-with-a-long-name", patterns=False) == \
        f"{REDACTED} question /home/someone-with-a-long-name"


def test_the_terminal_door_redacts_what_is_printed(monkeypatch):
    add_secret(KEY)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    with redacted_terminal():
        print("fingerprint", f"openai:x:m:model-Bearer {KEY}")
        assert sys.stdout.isatty() is False  # everything else is the stream's own
    assert sys.stdout is out and out.getvalue() == f"fingerprint openai:x:m:model-Bearer {REDACTED}\n"


@pytest.mark.parametrize("model_id", ["stub-model", "hf-internal-testing/tiny-random-gpt2", "sk-looking-model-name-x1"])
def test_an_honest_servers_fingerprint_is_what_it_was(model_id, monkeypatch):
    """The fingerprint is in every cache key: only the key's own value is replaced, so a store
    written before keeps serving an honest server's answers (ids that look like keys included)."""
    import asyncio

    from robusteval.models import load_backend, parse_model_spec

    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    async def fingerprint(config: StubConfig) -> str:
        async with StubServer(config) as stub:
            backend = load_backend(parse_model_spec(f"openai:m?base_url={stub.base_url}"))
            await backend.start()
            await backend.close()
            return f"{backend.fingerprint}|{stub.base_url}"

    honest, url = asyncio.run(fingerprint(StubConfig(model_id=model_id))).split("|")
    assert honest == f"openai:{url}:m:{model_id}"
    leaky, url = asyncio.run(fingerprint(StubConfig(model_id=model_id, echo_auth=("models",)))).split("|")
    assert leaky == f"openai:{url}:m:{model_id}-Bearer {REDACTED}"
