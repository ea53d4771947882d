"""`robusteval check-determinism` and `run --check-determinism N`: against the deterministic stub
(nothing differs) and a scripted noisy backend (the counted share is the noisy share)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter

import pytest

from robusteval.cli import main
from robusteval.testing.openai_stub import StubServer
from robusteval.types import Completion


def is_noisy(content: str) -> bool:
    """A fixed, content-derived quarter of the requests are noisy."""
    return int(hashlib.sha256(content.encode()).hexdigest(), 16) % 4 == 0


class Noisy:
    """A scripted backend whose reply to a noisy request changes with every call; the rest never change."""

    fingerprint = "noisy:v1"
    max_concurrency = 4

    def __init__(self):
        self.calls: Counter[str] = Counter()

    async def start(self):
        pass

    async def close(self):
        pass

    async def chat(self, messages, params):
        content = messages[-1].content
        self.calls[content] += 1
        await asyncio.sleep(0)
        again = " (again)" * (self.calls[content] - 1) if is_noisy(content) else ""
        return Completion(text=f"The best answer is A{again}")


def test_the_deterministic_stub_has_no_noise(tmp_path, mcq_file, capsys):
    with StubServer() as stub:
        code = main(["check-determinism", "--model", stub.model(), "--n", "12",
                     "--data", str(mcq_file), "--cache-dir", str(tmp_path)])
        hits = stub.state.total
    out = capsys.readouterr().out
    assert code == 0
    assert "openai:stub: 0 of 12 greedy requests got a different reply when asked again (0.0%, 95% CI 0.0%-" in out
    assert hits == 24  # each sampled request asked twice, the second time past the store


def test_a_noisy_backend_is_counted(tmp_path, mcq_file, capsys, monkeypatch):
    """Through the command: a scripted backend that changes its reply to a fixed subset of requests."""
    import robusteval.models

    backend = Noisy()
    monkeypatch.setattr(robusteval.models, "load_backend", lambda spec: backend)
    code = main(["check-determinism", "--n", "30", "--data", str(mcq_file), "--cache-dir", str(tmp_path)])
    out = capsys.readouterr().out
    asked = [c for c, n in backend.calls.items() if n == 2]
    noisy = sum(is_noisy(c) for c in asked)
    assert code == 0 and len(asked) == 30 and 0 < noisy < 30
    assert f"llamacpp: {noisy} of 30 greedy requests got a different reply when asked again ({noisy / 30:.1%}" in out
    assert "first:  " in out and "second: " in out  # examples of what differed


def test_bad_n_is_one_clear_message(tmp_path, capsys):
    code = main(["check-determinism", "--n", "0", "--cache-dir", str(tmp_path)])
    assert code == 2 and "--n 0: out of range; it must be in [1, 1000000]" in capsys.readouterr().err


def test_a_run_records_its_noise_floor(tmp_path, mcq_file, capsys):
    with StubServer() as stub:
        code = main(["run", "mcq", "--data", str(mcq_file), "--families", "format", "--check-determinism", "10",
                     "--model", stub.model(), "--cache-dir", str(tmp_path / "c"),
                     "--out", str(tmp_path), "--run-id", "d"])
        hits = stub.state.total
    assert code == 0
    results = json.loads((tmp_path / "d" / "results.json").read_text())
    measured = results["determinism"]["openai:stub"]
    assert (measured["asked"], measured["differ"], measured["share"], measured["failed"]) == (10, 0, 0.0, 0)
    assert measured["ci_high"] == pytest.approx(0.2775, abs=1e-3)
    assert hits == 30 + 10  # the run's 30 requests, then 10 of them again
    out = capsys.readouterr().out
    assert "noise floor: openai:stub: 0 of 10 greedy requests got a different reply" in out
    report = (tmp_path / "d" / "report.md").read_text()
    assert "0 of 10 greedy requests got a different reply" in report


def test_a_run_without_the_flag_records_nothing(tmp_path, mcq_file):
    with StubServer() as stub:
        code = main(["run", "mcq", "--quiet", "--data", str(mcq_file), "--families", "format",
                     "--model", stub.model(), "--cache-dir", str(tmp_path / "c"),
                     "--out", str(tmp_path), "--run-id", "d"])
        hits = stub.state.total
    assert code == 0 and hits == 30
    assert "determinism" not in json.loads((tmp_path / "d" / "results.json").read_text())
