"""A pool of 3 replicas against 1 server: throughput through the engine, and the ratio.

    .venv/bin/python benchmarks/pool.py [--only stub|llamacpp] [--requests 600] [--latency 0.05]

- ``stub``: 3 stub processes that each take ``--latency`` seconds a reply, ``max_concurrency=C`` per
  replica, against 1 such stub: the pool's scaling where the servers, not the client, are the limit
  (ideal ratio 3).
- ``llamacpp``: 3 llama.cpp servers of the embedded SmolLM2 (`robusteval.testing.llama_server`, one
  slot each, ``--threads`` each) against 1 server with ``--threads x 3``: the same CPU given to one
  server or split among three. On a machine with few cores the servers share them, and the ratio
  says what splitting a CPU among replicas does, not what replicas on their own machines would.

Every request is distinct (no cache, no in-run dedupe); each configuration asks the same requests
into a fresh store. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from robusteval.engine import Engine, Store, gather_all
from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message


def questions(n: int) -> list[tuple[Message, ...]]:
    return [(Message("user", f"Question {i}: what is {i} plus {2 * i + 1}? Answer with the number."),)
            for i in range(n)]


async def throughput(spec: str, prompts: list[tuple[Message, ...]], params: GenParams) -> tuple[float, int]:
    """Seconds to answer every prompt through one engine and a fresh store; and how many failed."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "s.sqlite"))
        await engine.add_model("m", load_backend(parse_model_spec(spec)))
        try:
            started = time.perf_counter()
            responses = await gather_all(engine.chat("m", p, params) for p in prompts)
            wall = time.perf_counter() - started
        finally:
            await engine.close()
            engine.store.close()
    return wall, sum(not r.ok for r in responses)


@contextmanager
def servers(commands: list[list[str]]):
    """Start each command (a server printing its port on stdout's first line); yields base URLs."""
    with ExitStack() as stack:
        procs = []
        for cmd in commands:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            stack.callback(_stop, proc)
            procs.append(proc)
        urls = []
        for proc in procs:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line.strip().isdigit():
                raise SystemExit(f"a server did not start: {line!r}")
            urls.append(f"http://127.0.0.1:{int(line)}/v1")
        yield urls


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def compare(name: str, model: str, make: list[str], make_one: list[str], n: int, params: GenParams,
            concurrency: int) -> None:
    prompts = questions(n)
    with servers([make_one]) as (url,):
        one_s, one_failed = asyncio.run(throughput(f"openai:{model}?base_url={url}&max_concurrency={concurrency}",
                                                   prompts, params))
    with servers([make] * 3) as urls:
        pool_s, pool_failed = asyncio.run(throughput(
            f"openai:{model}?base_url={','.join(urls)}&max_concurrency={concurrency}", prompts, params))
    print(f"{name}: {n} requests, max_concurrency {concurrency} per server")
    print(f"  1 server:  {one_s:7.2f} s  {n / one_s:8.1f} req/s  ({one_failed} failed)")
    print(f"  3 servers: {pool_s:7.2f} s  {n / pool_s:8.1f} req/s  ({pool_failed} failed)")
    print(f"  ratio pool / one: {one_s / pool_s:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("stub", "llamacpp"))
    ap.add_argument("--requests", type=int, default=600, help="stub requests")
    ap.add_argument("--latency", type=float, default=0.05, help="stub seconds per reply")
    ap.add_argument("--concurrency", type=int, default=8, help="stub max_concurrency per server")
    ap.add_argument("--llama-requests", type=int, default=48)
    ap.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) // 3),
                    help="llama.cpp threads per pool server (the single server gets 3x)")
    ap.add_argument("--max-tokens", type=int, default=16, help="llama.cpp reply limit")
    a = ap.parse_args()
    py = sys.executable
    print(f"{os.cpu_count()} CPU cores")
    if a.only in (None, "stub"):
        stub = [py, "-m", "robusteval.testing.openai_stub", "--port", "0", "--latency", str(a.latency)]
        compare(f"stub ({a.latency} s a reply)", "stub-model", stub, stub, a.requests,
                GenParams(max_tokens=16), a.concurrency)
    if a.only in (None, "llamacpp"):
        llama = [py, "-m", "robusteval.testing.llama_server", "--parallel", "1"]
        compare(f"llama.cpp SmolLM2 ({a.threads} threads per pool server, {3 * a.threads} for the one)", "smollm2",
                [*llama, "--threads", str(a.threads)], [*llama, "--threads", str(3 * a.threads)], a.llama_requests,
                GenParams(max_tokens=a.max_tokens), 1)


if __name__ == "__main__":
    main()
