"""Engine test helpers: the OpenAI-compatible stub in its own process, and a dataset of our own."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def stub_process(*args: str, hits_file: Path | None = None):
    """`robusteval.testing.openai_stub` in its own process; yields its base_url. On exit the process is
    terminated (SIGTERM), which makes it write the hits file a last time."""
    cmd = [sys.executable, "-m", "robusteval.testing.openai_stub", "--port", "0", *args]
    if hits_file is not None:
        cmd += ["--hits-file", str(hits_file)]
    # not a pipe: a chatty server must never block on it
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            line = proc.stdout.readline()
            if not line.strip().isdigit():
                proc.kill()
                proc.wait(10)
                errors.seek(0)
                raise RuntimeError(f"the stub did not start: {line!r} {errors.read()[-2000:]}")
            yield f"http://127.0.0.1:{int(line)}/v1"
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            proc.stdout.close()


def write_dataset(path: Path, n: int) -> Path:
    """n arithmetic questions with four options (our own text, nothing copied)."""
    with open(path, "w") as f:
        for i in range(n):
            a, b = i + 2, 3 * i + 1
            options = [str(a + b), str(a + b + 1), str(a * b), str(abs(a - b))]
            f.write(json.dumps({"id": f"s{i}", "question": f"What is {a} plus {b}?", "choices": options,
                                "answer": 0, "subject": ["sums", "numbers"][i % 2]}) + "\n")
    return path


@pytest.fixture
def make_stub():
    """``with make_stub("--latency", "0.01", hits_file=path) as base_url: ...``"""
    return stub_process


@pytest.fixture
def make_dataset():
    return write_dataset
