"""robusteval's wall time against the model's own time for the same work: the engine's overhead.

The workload: N MMLU test questions (offline) under the mcq variant families (default `order`: each
question with its gold option moved to every position), one user message each, greedy, a fixed
``max_tokens``, no stop: the requests an ``mcq`` run sends. They go through robusteval's Engine (a
fresh SQLite store each repeat, so every request is sent) to the embedded SmolLM2-135M:

- ``inproc``: the ``llamacpp`` backend (llama.cpp in this process through xllamacpp);
- ``http``:   the ``openai`` backend against a real llama.cpp OpenAI-compatible server on loopback
  (``robusteval.testing.llama_server``, its own process).

Each response carries llama.cpp's own ``timings`` (prompt_ms: prompt evaluation, predicted_ms:
generation). The model's own time is derived from them in two ways:

- ``sum``:   Σ (prompt_ms + predicted_ms). With one slot (n_parallel=1) llama.cpp runs one request
  at a time, so this is its busy time. With several slots requests overlap and the sum over-counts.
- ``union``: the union over requests of [end − (prompt_ms + predicted_ms), end], where ``end`` is when
  the response reached the backend (a stamp taken in this process). It is the time at least one slot
  was busy, whatever n_parallel; it includes the reply's transport, so it errs towards busy.

Printed per mode and n_parallel, medians over ``--repeats``: requests, prompt tokens (of which
llama.cpp served from its prompt cache), completion tokens, wall s, busy s (sum and union),
wall/busy (the overhead ratio, target <= 1.1 against the union), requests/s, and slot occupancy
Σbusy / (wall × n_parallel). Each repeat also starts a fresh llama.cpp (new in-process server or new
HTTP server process), so its prompt cache starts cold every time; reuse within a repeat (variants of
one question share a prefix) is llama.cpp's and counts as model time saved, not as overhead.
Model loading and one warm-up request come before the clock starts. Nothing here passes or fails.

    python benchmarks/limit.py [--questions 10] [--families order] [--max-tokens 16] [--repeats 3]
        [--parallel 1,4] [--modes inproc,http] [--threads 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.data.mcq import load_items  # noqa: E402
from robusteval.engine import Engine, Store  # noqa: E402
from robusteval.models import parse_model_spec  # noqa: E402
from robusteval.models.llamacpp import LlamaCppBackend  # noqa: E402
from robusteval.models.openai_compat import OpenAIBackend  # noqa: E402
from robusteval.probes.design import expand  # noqa: E402
from robusteval.testing.llama_server import in_subprocess  # noqa: E402
from robusteval.types import GenParams, Message  # noqa: E402

WARM_UP = (Message("user", "Say hello."),)


@dataclass(frozen=True)
class Served:
    """One response as llama.cpp timed it, with when it reached the backend (time.monotonic)."""

    prompt_n: int  # prompt tokens evaluated
    cache_n: int  # prompt tokens taken from llama.cpp's prompt cache
    prompt_ms: float
    predicted_n: int
    predicted_ms: float
    ended: float

    @property
    def busy_s(self) -> float:
        return (self.prompt_ms + self.predicted_ms) / 1000

    @property
    def interval(self) -> tuple[float, float]:
        return self.ended - self.busy_s, self.ended


@dataclass
class Recorder:
    """Collects llama.cpp's per-response timings; ``on`` is off during the warm-up."""

    on: bool = False
    served: list[Served] = field(default_factory=list)

    def add(self, out: object) -> None:
        timings = out.get("timings") if isinstance(out, dict) else None
        if self.on and timings:
            self.served.append(Served(timings["prompt_n"], timings.get("cache_n", 0), timings["prompt_ms"],
                                      timings["predicted_n"], timings["predicted_ms"], time.monotonic()))


class _TimedServer:
    """An xllamacpp server that records the timings of each chat completion it returns."""

    def __init__(self, server, recorder: Recorder):
        self._server, self._recorder = server, recorder

    def handle_chat_completions(self, body: dict):
        out = self._server.handle_chat_completions(body)
        self._recorder.add(out)
        return out


class TimedLlamaCpp(LlamaCppBackend):
    """The llamacpp backend, unchanged except that its server records timings."""

    recorder: Recorder

    def _load(self):
        return _TimedServer(super()._load(), self.recorder)


class TimedOpenAI(OpenAIBackend):
    """The openai backend, unchanged except that each decoded response's timings are recorded."""

    recorder: Recorder

    async def _post(self, path: str, body: dict) -> dict:
        out = await super()._post(path, body)
        self.recorder.add(out)
        return out


def busy_union_s(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals: time during which at least one was open."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


@dataclass(frozen=True)
class Measured:
    requests: int
    prompt_tokens: int  # evaluated + cached
    cached_tokens: int
    completion_tokens: int
    wall_s: float
    busy_sum_s: float
    busy_union_s: float
    failed: int


def workload(questions: int, families: list[str]) -> list[tuple[Message, ...]]:
    """The distinct requests of an mcq run over ``questions`` MMLU questions (a seeded sample)."""
    seen: dict[tuple[Message, ...], None] = {}
    for item in load_items("mmlu", limit=questions, seed=0):
        for variant in expand(item, families):
            seen[variant.messages] = None
    return list(seen)


async def one_repeat(mode: str, parallel: int, threads: int, requests: list[tuple[Message, ...]],
                     params: GenParams, base_url: str = "") -> Measured:
    """Fresh store and backend; load + warm up; then all requests at once, as a suite submits them."""
    recorder = Recorder()
    if mode == "inproc":
        spec = f"llamacpp?n_parallel={parallel}" + (f"&n_threads={threads}" if threads else "")
        backend = TimedLlamaCpp.from_spec(parse_model_spec(spec))
    else:
        backend = TimedOpenAI.from_spec(parse_model_spec(
            f"openai:smollm?base_url={base_url}&max_concurrency={parallel}"))
    backend.recorder = recorder
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "s.sqlite"))
        await engine.add_model("m", backend)
        await engine.chat("m", WARM_UP, params)  # loads the model (in-process) and opens a connection
        recorder.on = True
        started = time.monotonic()
        await asyncio.gather(*(engine.chat("m", messages, params) for messages in requests))
        wall = time.monotonic() - started
        usage = engine.usage["m"]
        await engine.close()
        engine.store.close()
    served = recorder.served
    return Measured(
        requests=len(served),
        prompt_tokens=sum(s.prompt_n + s.cache_n for s in served),
        cached_tokens=sum(s.cache_n for s in served),
        completion_tokens=sum(s.predicted_n for s in served),
        wall_s=wall,
        busy_sum_s=sum(s.busy_s for s in served),
        busy_union_s=busy_union_s([s.interval for s in served]),
        failed=usage.failed,
    )


def measure(mode: str, parallel: int, args, requests: list[tuple[Message, ...]]) -> list[Measured]:
    params = GenParams(max_tokens=args.max_tokens)
    runs = []
    for _ in range(args.repeats):
        if mode == "http":
            with in_subprocess(parallel, args.threads, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}) as url:
                runs.append(asyncio.run(one_repeat(mode, parallel, args.threads, requests, params, url)))
        else:
            runs.append(asyncio.run(one_repeat(mode, parallel, args.threads, requests, params)))
    return runs


HEADER = (f"{'mode':>6} {'slots':>5} {'reqs':>5} {'prompt tok':>10} {'cached':>7} {'compl tok':>9} {'wall s':>7} "
          f"{'busy sum':>8} {'busy union':>10} {'wall/sum':>8} {'wall/union':>10} {'req/s':>6} {'occupancy':>9}")


def row(mode: str, parallel: int, runs: list[Measured]) -> str:
    def med(f) -> float:
        return statistics.median(f(m) for m in runs)

    text = (f"{mode:>6} {parallel:>5} {med(lambda m: m.requests):>5.0f} {med(lambda m: m.prompt_tokens):>10.0f} "
            f"{med(lambda m: m.cached_tokens):>7.0f} {med(lambda m: m.completion_tokens):>9.0f} "
            f"{med(lambda m: m.wall_s):>7.2f} {med(lambda m: m.busy_sum_s):>8.2f} "
            f"{med(lambda m: m.busy_union_s):>10.2f} "
            f"{med(lambda m: m.wall_s / m.busy_sum_s):>8.3f} {med(lambda m: m.wall_s / m.busy_union_s):>10.3f} "
            f"{med(lambda m: m.requests / m.wall_s):>6.2f} "
            f"{med(lambda m: m.busy_sum_s / (m.wall_s * parallel)):>9.3f}")
    text += "   wall/union per repeat: " + " ".join(f"{m.wall_s / m.busy_union_s:.3f}" for m in runs)
    failed = sum(m.failed for m in runs)
    return text + (f"  ({failed} failed)" if failed else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10, help="MMLU questions (x the families' variants)")
    parser.add_argument("--families", default="order", help="comma-separated mcq families (order, format, ...)")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parallel", default="1,4", help="comma-separated llama.cpp slot counts (n_parallel)")
    parser.add_argument("--modes", default="inproc,http", help="inproc, http or both")
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp n_threads (0: the backend's default)")
    args = parser.parse_args()
    requests = workload(args.questions, args.families.split(","))
    print(f"{len(requests)} distinct requests ({args.questions} MMLU questions x {args.families}), greedy, "
          f"max_tokens {args.max_tokens}, {args.repeats} repeats (medians), fresh store and fresh llama.cpp each "
          f"repeat; busy sum = sum of prompt_ms + predicted_ms, busy union = time at least one slot was busy; "
          f"occupancy = busy sum / (wall x slots)")
    print(HEADER, flush=True)
    for mode in args.modes.split(","):
        for parallel in (int(p) for p in args.parallel.split(",")):
            print(row(mode, parallel, measure(mode, parallel, args, requests)), flush=True)


if __name__ == "__main__":
    main()
