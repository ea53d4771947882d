"""Engine throughput against a loopback OpenAI-compatible stub, printed as figures and ratios.

(a) The stub answers after a fixed latency L; N requests at concurrency C go through Engine +
    OpenAIBackend (a fresh store in a temporary folder each time). Printed: achieved requests/s, the
    ideal C/L, their ratio, the CPU per request of the client and of the stub, and the same requests
    through bare aiohttp with only a semaphore (the backend's transport without engine or store: the
    client's ceiling) and through the bare openai SDK (what the backend used before; skipped where
    the SDK is not installed).
(b) The stub enforces R requests/minute (429 with Retry-After beyond it); the engine is told rpm=R
    (and, for comparison, not told: it then has only Retry-After and its adaptive limit). Printed:
    achieved rate / R and the number of 429s the server sent.

The stub runs in its own process so client and server do not share one event loop or core.
Nothing here passes or fails on time; it prints what it measured. ``--profile`` runs (a) at the
largest concurrency under cProfile and prints where the client's CPU goes, by package and by function.

    python benchmarks/engine_throughput.py [--latency 0.05] [--requests 2000] [--concurrency 1,8,64]
        [--rpm 1200] [--rpm-seconds 20] [--rpm-concurrency 64] [--no-bare] [--no-blind] [--only a|b]
        [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from robusteval.engine import Engine, Store
from robusteval.engine.loop import loop_name, run
from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message

PARAMS = GenParams(max_tokens=16)


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far; 0 where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def stub(*args: str):
    """The stub in its own process; yields (base_url, hits file, pid). The hits file is final once this
    exits; the caller removes its folder."""
    folder = tempfile.mkdtemp()
    hits = Path(folder) / "hits.json"
    proc = subprocess.Popen([sys.executable, "-m", "robusteval.testing.openai_stub", "--port", "0",
                             "--hits-file", str(hits), "--hits-interval", "1", *args],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1", hits, proc.pid
    finally:
        proc.terminate()  # the stub writes the hits file a last time on SIGTERM
        proc.wait(10)
        proc.stdout.close()


@dataclass
class Measured:
    requests: int
    wall_s: float
    cpu_s: float
    failed: int = 0
    rate_limited: int = 0

    @property
    def rate(self) -> float:
        return self.requests / self.wall_s

    @property
    def cpu_ms_per_request(self) -> float:
        return self.cpu_s / self.requests * 1000


async def engine_run(base_url: str, n: int, concurrency: int, rpm: float | None, tag: str) -> Measured:
    """n distinct requests through the engine, all submitted at once (as a suite does)."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "s.sqlite"))
        spec = parse_model_spec(f"openai:stub?base_url={base_url}&max_concurrency={concurrency}")
        await engine.add_model("stub", load_backend(spec), rpm=rpm)
        messages = [(Message("user", f"{tag} question {i}"),) for i in range(n)]
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(engine.chat("stub", m, PARAMS) for m in messages))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        usage = engine.usage["stub"]
        await engine.close()
        engine.store.close()
    return Measured(n, wall, cpu, usage.failed, usage.rate_limited)


async def bare_run(client: str, base_url: str, n: int, concurrency: int, tag: str) -> Measured:
    """The same requests with a semaphore and no engine, through ``client``: "aiohttp" (one session,
    as the backend posts) or "sdk" (the openai SDK on its aiohttp transport, raw bytes back)."""
    if client == "sdk":
        import openai

        sdk = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0,
                                 http_client=openai.DefaultAioHttpClient())
        post, close = (lambda body: sdk.post("/chat/completions", body=body, cast_to=bytes)), sdk.close
    else:
        import aiohttp

        session = aiohttp.ClientSession(headers={"Content-Type": "application/json"})

        async def post(body: dict) -> bytes:
            async with session.post(f"{base_url}/chat/completions", data=json.dumps(body).encode()) as r:
                return await r.read()

        close = session.close
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        body = {"model": "stub", "messages": [{"role": "user", "content": f"{tag} question {i}"}],
                **PARAMS.as_dict()}
        async with gate:
            json.loads(await post(body))

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await close()
    return Measured(n, wall, cpu)


def _sdk_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("openai") is not None


def part_a(args) -> None:
    print(f"(a) latency {args.latency * 1000:g} ms" + (f" ± {args.jitter * 1000:g} ms" if args.jitter else " fixed")
          + ", stub in its own process")
    bare = [] if args.no_bare else ["aiohttp"] + (["sdk"] if _sdk_installed() else [])
    print(f"{'C':>4} {'requests':>8} {'wall s':>7} {'req/s':>8} {'ideal':>8} {'ratio':>6} {'cpu ms/req':>10} "
          f"{'stub cpu ms':>11}"
          + "".join(f" {c + ' ratio':>13} {c + ' cpu ms':>14} {'engine/' + c:>14}" for c in bare))
    with stub("--latency", str(args.latency), "--jitter", str(args.jitter)) as (url, hits, pid):
        run(engine_run(url, 200, 16, None, "warm-up"))  # imports, first connections
        for loop in args.loops:
            print(f"client event loop: {loop}")
            for c in args.concurrency:
                ideal = c / args.latency
                # at least ~2 s of work per row, at most --requests
                n = min(args.requests, max(50, int(ideal * 2))) if c < 8 else args.requests
                server_cpu = process_cpu_s(pid)
                m = run(engine_run(url, n, c, None, f"{loop}{c}"), loop)
                server_cpu = process_cpu_s(pid) - server_cpu
                row = (f"{c:>4} {n:>8} {m.wall_s:>7.2f} {m.rate:>8.1f} {ideal:>8.1f} {m.rate / ideal:>6.3f} "
                       f"{m.cpu_ms_per_request:>10.3f} {server_cpu / n * 1000:>11.3f}")
                for client in bare:
                    b = run(bare_run(client, url, n, c, f"{client}{loop}{c}"), loop)
                    row += f" {b.rate / ideal:>13.3f} {b.cpu_ms_per_request:>14.3f} {m.rate / b.rate:>14.3f}"
                print(row + (f"  ({m.failed} failed)" if m.failed else ""), flush=True)
    shutil.rmtree(hits.parent)


def part_b(args) -> None:
    n = int(args.rpm * args.rpm_seconds / 60)
    print(f"\n(b) stub enforcing {args.rpm:g} requests/min (token bucket, 429 + Retry-After); "
          f"{n} requests at concurrency {args.rpm_concurrency}")
    print(f"{'engine rpm':>12} {'wall s':>7} {'achieved/min':>12} {'of limit':>8} {'429s sent':>9} {'failed':>6}")
    for told in (True,) if args.no_blind else (True, False):
        with stub("--rpm", str(args.rpm)) as (url, hits, _):
            m = run(engine_run(url, n, args.rpm_concurrency, args.rpm if told else None, "rpm"))
        sent_429 = json.loads(hits.read_text())["outcomes"].get("429", 0)
        shutil.rmtree(hits.parent)
        rate = m.rate * 60
        print(f"{(f'{args.rpm:g}' if told else 'not told'):>12} {m.wall_s:>7.2f} {rate:>12.0f} "
              f"{rate / args.rpm:>8.3f} {sent_429:>9} {m.failed:>6}", flush=True)


def profile(args) -> None:
    c = max(args.concurrency)
    with stub("--latency", str(args.latency), "--jitter", str(args.jitter)) as (url, hits, _pid):
        run(engine_run(url, 200, 16, None, "warm-up"))
        profiler = cProfile.Profile()
        profiler.enable()
        m = run(engine_run(url, args.requests, c, None, "profile"))
        profiler.disable()
    shutil.rmtree(hits.parent)
    stats = pstats.Stats(profiler)
    total = sum(v[2] for v in stats.stats.values())  # own time summed over functions
    by_package: Counter[str] = Counter()
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        by_package[_package(filename)] += tottime
    print(f"\nprofile: C={c}, {args.requests} requests, {m.rate:.0f} req/s under cProfile; "
          f"{total / args.requests * 1000:.3f} ms profiled time per request")
    print("share of the client's time by package (own time):")
    for package, t in by_package.most_common(12):
        print(f"  {package:<22} {t / total:6.1%}  {t / args.requests * 1e6:7.1f} us/req")
    print("top functions by own time:")
    stats.sort_stats("tottime").print_stats(20)


def _package(filename: str) -> str:
    parts = Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    if "robusteval" in parts:
        return "robusteval." + parts[parts.index("robusteval") + 1].removesuffix(".py")
    if filename.startswith("<built-in") or filename == "~":
        return "builtins (C)"
    return "stdlib:" + Path(filename).parent.name if "lib/python" in filename else filename


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="stub latency L in seconds")
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="stub latency varies uniformly by ± this many seconds (0: every reply takes exactly L)")
    parser.add_argument("--requests", type=int, default=2000, help="requests N per row of (a)")
    parser.add_argument("--concurrency", default="1,8,64", help="comma-separated concurrencies C for (a)")
    parser.add_argument("--rpm", type=float, default=1200, help="requests/minute R the stub enforces in (b)")
    parser.add_argument("--rpm-seconds", type=float, default=20, help="how long (b) runs, seconds")
    parser.add_argument("--rpm-concurrency", type=int, default=64)
    parser.add_argument("--no-bare", action="store_true", help="skip the bare aiohttp and SDK comparisons in (a)")
    parser.add_argument("--no-blind", action="store_true", help="skip the (b) row where the engine is not told R")
    parser.add_argument("--only", choices=("a", "b"), help="run only part a or b")
    parser.add_argument("--profile", action="store_true", help="cProfile (a) at the largest C instead")
    parser.add_argument("--loops", default=",".join(dict.fromkeys((loop_name(), "asyncio"))),
                        help="client event loops to measure (a) on, side by side: uvloop,asyncio (default: "
                             "the loop runs use, then asyncio's own)")
    args = parser.parse_args()
    args.loops = args.loops.split(",")
    args.concurrency = [int(x) for x in args.concurrency.split(",")]
    if args.profile:
        profile(args)
        return
    if args.only != "b":
        part_a(args)
    if args.only != "a":
        part_b(args)


if __name__ == "__main__":
    main()
