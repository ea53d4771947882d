"""Engine test helpers: a stub server process and a generated dataset of our own."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def stub_process(*args: str, hits_file: Path | None = None):
    """The stub server in its own process; yields its base_url."""
    cmd = [sys.executable, "-m", "robusteval.testing.stub_server", "--port", "0", *args]
    if hits_file is not None:
        cmd += ["--hits-file", str(hits_file)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def write_dataset(path: Path, n: int) -> Path:
    """n arithmetic questions with four options (our own text, nothing copied)."""
    with open(path, "w") as f:
        for i in range(n):
            a, b = i + 2, 3 * i + 1
            options = [str(a + b), str(a + b + 1), str(a * b), str(abs(a - b))]
            f.write(json.dumps({"id": f"s{i}", "question": f"What is {a} plus {b}?", "choices": options,
                                "answer": 0, "subject": ["sums", "numbers"][i % 2]}) + "\n")
    return path


import pytest  # noqa: E402


@pytest.fixture
def make_stub():
    return stub_process


@pytest.fixture
def make_dataset():
    return write_dataset
