"""The run loop: uvloop when installed, the standard loop on request."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.engine.loop import loop_name, run


async def _which() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_by_default_when_installed(monkeypatch):
    pytest.importorskip("uvloop")
    monkeypatch.delenv("ROBUSTEVAL_LOOP", raising=False)
    assert loop_name() == "uvloop" and run(_which()).startswith("uvloop")


def test_standard_loop_on_request(monkeypatch):
    monkeypatch.setenv("ROBUSTEVAL_LOOP", "asyncio")
    assert loop_name() == "asyncio" and run(_which()).startswith("asyncio")
