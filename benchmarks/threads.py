"""Seconds per request of the embedded model on a busy machine: the default thread count (the cores
actually free, `models.threads.free_threads`) against ``n_threads=1`` and the old default (every
granted core), side by side, with busy-loop processes running.

Each setting loads the embedded SmolLM2 (llama.cpp in this process), answers one warm-up request,
then ``--requests`` short questions (greedy, ``--max-tokens``), timed one by one. ``--hogs`` busy
loops (plain Python ``while True``) run beside it the whole time, started before the first setting
and stopped at the end; the load average is printed when each setting starts (the default reads
it then). The replies of every setting are compared: flash attention is off, so they are the same
byte for byte whatever the thread count. Nothing here passes or fails.

``--pick``: no model; the busy loops start at the same instant as the picker (as in docs/performance.md,
"make demo beside a busy loop"), and it prints what the picker reads and picks: by the load average
alone (the rule before) and by the load average and the last moment's busy ticks (the rule now),
before the loops start and right after.

    python benchmarks/threads.py [--requests 3] [--max-tokens 16] [--hogs 2] [--settle 20]
    python benchmarks/threads.py --pick [--hogs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.models import parse_model_spec  # noqa: E402
from robusteval.models.llamacpp import LlamaCppBackend  # noqa: E402
from robusteval.models.threads import granted_cores, read_cpu, threads_for  # noqa: E402
from robusteval.types import GenParams, Message  # noqa: E402

QUESTIONS = ["What is the capital of France?", "Name a primary colour.", "What is 7 times 6?",
             "Which planet is closest to the Sun?", "Who wrote Hamlet?", "What gas do plants absorb?"]


def busy_loop() -> None:
    while True:
        pass


async def measure(spec: str, questions: list[str], max_tokens: int) -> tuple[int, list[float], list[str]]:
    backend = LlamaCppBackend.from_spec(parse_model_spec(spec))
    await backend.start()
    params = GenParams(max_tokens=max_tokens, temperature=0.0)
    await backend.chat((Message("user", "Say hello."),), params)  # loads the model; not timed
    seconds, replies = [], []
    for q in questions:
        start = time.perf_counter()
        reply = await backend.chat((Message("user", q),), params)
        seconds.append(time.perf_counter() - start)
        replies.append(reply.text)
    await backend.close()
    return backend.n_threads, seconds, replies


def print_pick(when: str) -> None:
    """What the picker reads now, and what it picks by the load average alone and by both readings."""
    r = read_cpu()
    busy = "n/a" if r.busy is None else f"{r.busy:.2f}"
    load = "n/a" if r.load is None else f"{r.load:.2f}"
    print(f"{when:<28} {r.cores:>5} {load:>6} {busy:>12} {threads_for(replace(r, busy=None)):>19} "
          f"{threads_for(r):>15}", flush=True)


def pick(hogs: int) -> None:
    print(f"{'':<28} {'cores':>5} {'load1':>6} {'busy (0.3 s)':>12} {'picked: load only':>19} "
          f"{'picked: both':>15}")
    print_pick("before the busy loops")
    procs = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(hogs)]
    for p in procs:
        p.start()
    try:
        print_pick(f"{hogs} busy loop(s) just started")
    finally:
        for p in procs:
            p.terminate()
            p.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--hogs", type=int, default=2, help="busy-loop processes beside the model")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds to let the load average see the hogs")
    ap.add_argument("--pick", action="store_true", help="no model: what the picker picks as busy loops start")
    args = ap.parse_args()
    if args.pick:
        pick(args.hogs)
        return
    questions = QUESTIONS[:args.requests]
    cores = granted_cores()
    hogs = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    try:
        time.sleep(args.settle)
        settings = [("default (free cores)", "llamacpp"), ("n_threads=1", "llamacpp?n_threads=1"),
                    (f"all cores (old default, {cores})", f"llamacpp?n_threads={cores}")]
        print(f"{cores} granted cores, {args.hogs} busy loops, {len(questions)} requests "
              f"of <= {args.max_tokens} tokens")
        print(f"{'setting':<30} {'threads':>7} {'load1':>6} {'s/request (median)':>19} {'min':>6} {'max':>6}")
        replies = {}
        for name, spec in settings:
            load = os.getloadavg()[0]
            threads, seconds, replies[name] = asyncio.run(measure(spec, questions, args.max_tokens))
            print(f"{name:<30} {threads:>7} {load:>6.1f} {statistics.median(seconds):>19.2f} "
                  f"{min(seconds):>6.2f} {max(seconds):>6.2f}", flush=True)
        same = len({tuple(r) for r in replies.values()}) == 1
        print(f"replies identical across settings: {same}")
    finally:
        for h in hogs:
            h.terminate()
            h.join()


if __name__ == "__main__":
    main()
