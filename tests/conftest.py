"""Shared fixtures: a real llama.cpp HTTP server on loopback, and small datasets we wrote ourselves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def llama_http():
    """A real llama.cpp OpenAI-compatible server (embedded SmolLM2) in its own process; yields base_url."""
    proc = subprocess.Popen([sys.executable, "-m", "robusteval.testing.llama_server", "--parallel", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        if not line.strip():
            raise RuntimeError("llama.cpp server did not start")
        yield f"http://127.0.0.1:{int(line)}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def mcq_file() -> Path:
    return FIXTURES / "mcq_small.jsonl"
