"""A base_url without its /v1: the start says so, naming the 404 path, before any request (issue 34:
all 20 requests failed and the 404 was only in results.json)."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.cli import main
from robusteval.errors import UserError
from robusteval.models import load_backend, parse_model_spec
from robusteval.testing.openai_stub import StubServer


def test_a_base_url_without_v1_is_refused_with_the_fix():
    with StubServer() as stub:
        root = stub.base_url.removesuffix("/v1")
        backend = load_backend(parse_model_spec(f"openai:m?base_url={root}"))
        with pytest.raises(UserError) as caught:
            asyncio.run(backend.start())
        message = str(caught.value)
        assert f"{root}/models answered HTTP 404" in message and f"base_url={root}/v1" in message
        right = load_backend(parse_model_spec(stub.model("m")))

        async def start_and_close():
            await right.start()
            await right.close()

        asyncio.run(start_and_close())  # with /v1: starts


def test_the_cli_exits_2_before_asking(tmp_path, mcq_file, capsys):
    with StubServer() as stub:
        root = stub.base_url.removesuffix("/v1")
        code = main(["run", "mcq", "--data", str(mcq_file), "--model", f"openai:m?base_url={root}",
                     "--cache-dir", str(tmp_path), "--out", str(tmp_path / "runs")])
        asked = stub.counters()["outcomes"]
    assert code == 2
    assert "use base_url=" in capsys.readouterr().err and not asked
