"""Engine throughput against a loopback OpenAI-compatible stub, printed as figures and ratios.

(a) Fixed latency L, N requests at concurrency C: achieved requests/s against the ideal C/L.
(b) A server enforcing R requests/minute, the engine told --rpm R: achieved rate / R and the 429s.

The stub runs in its own process so client and server do not share one core's event loop.
Nothing here passes or fails on time; it prints what it measured.

    python benchmarks/engine_throughput.py [--latency 0.05] [--requests 2000] [--concurrency 1,8,64]
                                           [--rpm 1200] [--rpm-seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from robusteval.engine import Engine, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message


@contextmanager
def stub(*args: str):
    hits = Path(tempfile.mkdtemp()) / "hits.json"
    proc = subprocess.Popen([sys.executable, "-m", "robusteval.testing.stub_server", "--port", "0",
                             "--hits-file", str(hits), *args], stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1", hits
    finally:
        proc.terminate()
        proc.wait(10)


async def run_requests(base_url: str, n: int, concurrency: int, rpm: float | None, tag: str) -> tuple[float, object]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "s.sqlite"))
        spec = parse_model_spec(f"openai:stub?base_url={base_url}&max_concurrency={concurrency}")
        await engine.add_model("stub", load_backend(spec), rpm=rpm)
        params = GenParams(max_tokens=16)
        start = time.perf_counter()
        await asyncio.gather(*(engine.chat("stub", (Message("user", f"{tag} {i}"),), params) for i in range(n)))
        elapsed = time.perf_counter() - start
        usage = engine.usage["stub"]
        await engine.close()
        engine.store.close()
        return elapsed, usage


async def run_bare_sdk(base_url: str, n: int, concurrency: int, tag: str) -> float:
    """The same requests through the openai SDK alone (a semaphore, no engine): the client's ceiling."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0,
                                http_client=openai.DefaultAioHttpClient())
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        body = {"model": "stub", "messages": [{"role": "user", "content": f"{tag} {i}"}], "max_tokens": 16}
        async with gate:
            await client.post("/chat/completions", body=body, cast_to=bytes)

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--rpm", type=float, default=1200)
    parser.add_argument("--rpm-seconds", type=float, default=20)
    args = parser.parse_args()

    print(f"(a) fixed latency {args.latency * 1000:.0f} ms, stub in its own process")
    print(f"{'concurrency':>11} {'requests':>8} {'wall s':>8} {'req/s':>9} {'ideal':>9} {'ratio':>6} "
          f"{'bare SDK req/s':>15} {'engine/bare':>11}")
    with stub("--latency", str(args.latency)) as (url, _):
        for c in (int(x) for x in args.concurrency.split(",")):
            n = args.requests if c > 1 else max(50, args.requests // 40)
            elapsed, usage = asyncio.run(run_requests(url, n, c, None, f"c{c}"))
            bare = n / asyncio.run(run_bare_sdk(url, n, c, f"bare{c}"))
            ideal = c / args.latency
            print(f"{c:>11} {n:>8} {elapsed:>8.2f} {n / elapsed:>9.1f} {ideal:>9.1f} {n / elapsed / ideal:>6.3f} "
                  f"{bare:>15.1f} {n / elapsed / bare:>11.3f}" + ("" if usage.failed == 0 else f"  ({usage.failed} failed)"))

    n = int(args.rpm * args.rpm_seconds / 60)
    print(f"\n(b) server enforcing {args.rpm:g} requests/min; engine --rpm {args.rpm:g}; {n} requests")
    with stub("--rpm", str(args.rpm), "--retry-after", "1") as (url, hits):
        elapsed, usage = asyncio.run(run_requests(url, n, 64, args.rpm, "rpm"))
        outcomes = json.loads(hits.read_text())["outcomes"]
    rate = n / elapsed * 60
    print(f"achieved {rate:.0f}/min = {rate / args.rpm:.3f} of the limit; "
          f"429s from the server: {outcomes.get('429', 0)}; failed: {usage.failed}")


if __name__ == "__main__":
    main()
