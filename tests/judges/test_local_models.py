"""Local judge models (embeddings, NLI) run off the event loop, one call at a time, and their time
is counted: while one encodes, other coroutines (the engine's requests) keep running."""

from __future__ import annotations

import asyncio
import threading

import numpy as np

from robusteval.judges import calibration, embedding, nli
from robusteval.judges.calibration import Calibration
from robusteval.judges.embedding import Embedder, EmbeddingJudge
from robusteval.judges.nli import NLIJudge


def _blocking_model(events: list[str], started: threading.Event, ticked: threading.Event, result):
    """A model call that cannot finish until a coroutine on the loop has run (or 10 s passed)."""
    def call(*_args):
        events.append("model started")
        started.set()
        events.append("model done" if ticked.wait(10) else "model timed out: the loop was blocked")
        return result
    return call


async def _tick(events: list[str], started: threading.Event, ticked: threading.Event) -> None:
    while not started.is_set():
        await asyncio.sleep(0.001)
    events.append("another coroutine ran")
    ticked.set()


def test_the_embedding_judge_encodes_off_the_event_loop(monkeypatch):
    events: list[str] = []
    started, ticked = threading.Event(), threading.Event()
    encode = _blocking_model(events, started, ticked, np.eye(2, 4))
    monkeypatch.setattr(embedding, "load_embedder", lambda name: Embedder(name, encode))
    monkeypatch.setattr(calibration, "calibrate", lambda name, crosslingual=False: Calibration(name, crosslingual,
                                                                                                0.0, 0.5, 0.9))
    judge = EmbeddingJudge("minilm")

    async def go():
        rating, _ = await asyncio.gather(judge.rate(["a", "b"], None, ("en", "en")), _tick(events, started, ticked))
        return rating

    rating = asyncio.run(go())
    assert events == ["model started", "another coroutine ran", "model done"]
    assert rating.raw == 0.0 and rating.score == 0.0  # orthogonal answers: the "unrelated" anchor
    spent = judge.clock.spent["embedding"]
    assert spent.calls == 2 and spent.seconds > 0  # the encode and the calibration, both timed


def test_the_nli_judge_predicts_off_the_event_loop(monkeypatch):
    events: list[str] = []
    started, ticked = threading.Event(), threading.Event()
    monkeypatch.setattr(nli, "load_nli", lambda name: object())
    monkeypatch.setattr(nli, "mean_bidirectional", _blocking_model(events, started, ticked, 0.5))
    judge = NLIJudge("tiny")

    async def go():
        rating, _ = await asyncio.gather(judge.rate(["a", "b"], None, ("en", "en")), _tick(events, started, ticked))
        return rating

    rating = asyncio.run(go())
    assert events == ["model started", "another coroutine ran", "model done"]
    assert rating.score == 2.5 and judge.clock.spent["nli"].calls == 1


def test_calls_to_one_local_model_run_one_at_a_time(monkeypatch):
    """Two ratings at once: the second encode starts only after the first ended (no two encodes
    fighting over the cores, no racing lazy loads)."""
    events: list[str] = []
    lock = threading.Lock()

    def encode(texts):
        with lock:
            events.append(f"start {texts[0]}")
        threading.Event().wait(0.05)
        with lock:
            events.append(f"end {texts[0]}")
        return np.eye(len(texts), 4)

    monkeypatch.setattr(embedding, "load_embedder", lambda name: Embedder(name, encode))
    monkeypatch.setattr(calibration, "calibrate", lambda name, crosslingual=False: Calibration(name, crosslingual,
                                                                                                0.0, 0.5, 0.9))
    judge = EmbeddingJudge("minilm")

    async def go():
        await asyncio.gather(judge.rate(["x", "y"], None, ("en", "en")), judge.rate(["z", "w"], None, ("en", "en")))

    asyncio.run(go())
    assert events == ["start x", "end x", "start z", "end z"]
