"""A storm of 429s against no storm: how long the same requests take through the engine, side by side.

    .venv/bin/python benchmarks/storm.py [--requests 54] [--storm 10] [--rounds 2] [--latency 0]
        [--concurrency 16]

Each round runs the same requests twice, each time into a fresh store against a fresh stub process
(`robusteval.testing.openai_stub`): once with no storm, once with ``--storm S`` (every hit answered
429 *without* Retry-After for S seconds from the first one, so the engine must find its own pace and
the storm's end; the user gave no ``--rpm``: the adaptive pacer). A pacer that recovers makes the
storm run last about the no-storm run plus the storm: the last column, the storm run's time beyond
that, should stay a few seconds whatever S. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from pool import servers  # benchmarks/pool.py, beside this script: start stub processes, stop them after
from robusteval.engine import Engine, Store, gather_all
from robusteval.types import GenParams, Message


def questions(n: int) -> list[tuple[Message, ...]]:
    return [(Message("user", f"Question {i}: which option is right, A, B, C or D?"),) for i in range(n)]


async def timed_run(url: str, prompts: list[tuple[Message, ...]], concurrency: int) -> tuple[float, int, int]:
    """Seconds to answer every prompt through one engine and a fresh store; failed; 429s received."""
    from robusteval.models import load_backend, parse_model_spec

    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "s.sqlite"))
        await engine.add_model("m", load_backend(parse_model_spec(
            f"openai:stub-model?base_url={url}&max_concurrency={concurrency}")))
        try:
            started = time.perf_counter()
            responses = await gather_all(engine.chat("m", p, GenParams(max_tokens=16)) for p in prompts)
            wall = time.perf_counter() - started
        finally:
            await engine.close()
            engine.store.close()
    usage = engine.usage["m"]
    return wall, sum(not r.ok for r in responses), usage.rate_limited


def run_against_stub(storm_s: float, latency_s: float, prompts: list[tuple[Message, ...]],
                     concurrency: int) -> tuple[float, int, int]:
    stub = [sys.executable, "-m", "robusteval.testing.openai_stub", "--port", "0", "--latency", str(latency_s),
            "--storm", str(storm_s)]
    with servers([stub]) as (url,):
        return asyncio.run(timed_run(url, prompts, concurrency))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=54, help="requests per run (an mcq run of --limit 6)")
    ap.add_argument("--storm", type=float, default=10.0, help="seconds of 429s from the first request")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.0, help="stub seconds per reply")
    ap.add_argument("--concurrency", type=int, default=16, help="max_concurrency of the backend")
    a = ap.parse_args()
    prompts = questions(a.requests)
    print(f"{a.requests} requests, storm {a.storm:g} s of 429 without Retry-After, stub latency {a.latency:g} s, "
          f"max_concurrency {a.concurrency}")
    print(f"{'round':>5}  {'no storm':>9}  {'storm':>9}  {'storm/no storm':>14}  {'storm - (no storm + storm)':>26}"
          f"  {'429s':>5}  failed")
    for rnd in range(1, a.rounds + 1):
        calm_s, calm_failed, _ = run_against_stub(0.0, a.latency, prompts, a.concurrency)
        storm_wall, storm_failed, n429 = run_against_stub(a.storm, a.latency, prompts, a.concurrency)
        print(f"{rnd:>5}  {calm_s:8.1f}s  {storm_wall:8.1f}s  {storm_wall / calm_s:14.2f}  "
              f"{storm_wall - calm_s - a.storm:+25.1f}s  {n429:>5}  {calm_failed}/{storm_failed}")


if __name__ == "__main__":
    main()
