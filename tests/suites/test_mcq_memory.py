"""mcq in constant memory: the samples go to samples.jsonl as they are answered and into compact
per-item arrays, so the memory a run holds does not grow with its number of samples.

Measured with tracemalloc (bytes, not time) on a real engine and store with a scripted backend: the
peak of 1,200 questions (12,000 samples) against that of 120 (1,200 samples)."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections import deque
from pathlib import Path

from rich.console import Console

from robusteval.config import RunConfig
from robusteval.engine import stream
from robusteval.metrics import stats
from robusteval.results.samples_file import PARTIAL_FILE, SampleWriter
from robusteval.suites import mcq
from robusteval.suites.base import SuiteContext
from robusteval.testing.scripted import scripted_engine
from robusteval.types import GenParams


def write_dataset(path: Path, n: int) -> Path:
    """n arithmetic questions with four options."""
    with open(path, "w") as f:
        for i in range(n):
            a, b = i + 2, 3 * i + 1
            f.write(json.dumps({"id": f"s{i}", "question": f"What is {a} plus {b}?", "answer": 0,
                                "choices": [str(a + b), str(a + b + 1), str(a * b), str(abs(a - b))]}) + "\n")
    return path


def _reply(messages, params) -> str:
    return f"The best answer is {'ABCD'[len(messages[-1].content) % 4]}"


async def _execute(tmp: Path, n_items: int) -> tuple[int, SampleWriter, mcq.SuiteResult]:
    data = write_dataset(tmp / "items.jsonl", n_items)
    engine, backend = await scripted_engine(tmp, _reply)
    backend.sent = deque(maxlen=0)  # the fixture's own record of every request: not the run's memory
    writer = SampleWriter(tmp)
    config = RunConfig(suite="mcq", models=("scripted",), data=str(data), limit=None, cache_dir=str(tmp))
    ctx = SuiteContext(config=config, options=mcq.Options(), engine=engine, models=["scripted"], params=GenParams(),
                       console=Console(quiet=True), samples=writer)
    try:
        tracemalloc.start()
        tracemalloc.reset_peak()
        result = await mcq.execute(ctx)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        await engine.close()
        engine.store.close()
    return peak, writer, result


def test_memory_does_not_grow_with_the_samples(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "WINDOW", 64)  # both runs exceed the bounds: jobs under way,
    monkeypatch.setattr(stats, "BLOCK_CELLS", 20_000)  # and resampled items x resamples at once
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small, _, _ = asyncio.run(_execute(tmp_path / "small", 120))
    large, writer, result = asyncio.run(_execute(tmp_path / "large", 1200))
    # held per sample beyond the small run: the items and their compact arrays only (all samples were
    # held before, about 5 kB each)
    print(f"peak {small} B for 1,200 samples, {large} B for 12,000")
    assert (large - small) / (12_000 - 1_200) < 500
    assert result.samples == [] and writer.count == 12_000  # written as they were answered, none kept
    assert (tmp_path / "large" / PARTIAL_FILE).stat().st_size > 0  # on disk before the run's end
    lines = writer.finish().read_text().splitlines()  # type: ignore[union-attr]
    assert len(lines) == 12_000
    first = [json.loads(line) for line in lines[:10]]
    assert [s["item_id"] for s in first] == ["s0"] * 10  # in the order asked: item by item
    assert result.metrics["scripted"]["order"].samples == 4 * 1200
