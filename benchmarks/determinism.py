"""Which llama.cpp settings make the embedded model's greedy replies reproducible, and at what speed.

The workload: the requests an ``mcq`` run sends (``--questions`` MMLU test questions under the
``order`` and ``format`` families, greedy, ``--max-tokens``), built by the suite's own code in a
dry run. For each candidate setting, llama.cpp (xllamacpp, in-process) answers them in fresh
processes under five conditions, and each condition's replies are compared byte for byte with the
first:

- ``fresh``:   a fresh process asks them in order, ``n_parallel`` at a time (the reference);
- ``order``:   a fresh process asks them in a shuffled order;
- ``conc``:    a fresh process asks them one at a time (``n_parallel`` > 1), or 4 at a time queued
               on the one slot (``n_parallel`` = 1);
- ``resume``:  a fresh process asks only the second half (what a run resumed after a SIGKILL at
               half-way sends: the store serves the first half);
- ``warm``:    the ``fresh`` process asks all of them again in reverse order, its prompt cache warm;
- ``threads``: a fresh process with the other thread count (1 where the default is more, else 2).

Printed per setting: replies that differ from ``fresh`` in each condition, and the speed of the
``fresh`` pass (requests/s, generated tokens/s, wall s). Settings run one after another in
separate processes on the same machine, so their speeds are comparable within one invocation.
Nothing here passes or fails.

    python benchmarks/determinism.py [--questions 10] [--max-tokens 256] [--settings NAME,...]
        [--threads 0] [--conditions fresh,order,conc,resume,warm,threads] [--speed-rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# name -> (xllamacpp CommonParams overrides, per-request body overrides)
SETTINGS: dict[str, tuple[dict, dict]] = {
    "np4": ({"n_parallel": 4}, {}),  # the default before this change
    "np4-nocache": ({"n_parallel": 4}, {"cache_prompt": False}),
    "np4-nocache-unified": ({"n_parallel": 4, "kv_unified": True}, {"cache_prompt": False}),
    "np4-nocache-fa": ({"n_parallel": 4, "flash_attn_type": 1}, {"cache_prompt": False}),
    "np1": ({"n_parallel": 1}, {}),
    "np1-nocache": ({"n_parallel": 1}, {"cache_prompt": False}),
    "np1-nocache-fa": ({"n_parallel": 1, "flash_attn_type": 1}, {"cache_prompt": False}),
    "np1-nocache-nofa": ({"n_parallel": 1, "flash_attn_type": 0}, {"cache_prompt": False}),
    "np1-nofa": ({"n_parallel": 1, "flash_attn_type": 0}, {}),
    "np4-nofa": ({"n_parallel": 4, "flash_attn_type": 0}, {}),
    "np4-nocache-nofa": ({"n_parallel": 4, "flash_attn_type": 0}, {"cache_prompt": False}),
}


def plan(questions: int, max_tokens: int) -> list[dict]:
    """The mcq run's requests as chat bodies, in the order the suite plans them."""
    from robusteval.check_determinism import plan_requests
    from robusteval.configure import build_config
    from robusteval.models.chat_format import chat_body

    with tempfile.TemporaryDirectory() as tmp:
        config = build_config({}, {"suite": "mcq", "limit": questions, "max_tokens": max_tokens,
                                   "families": ("order", "format"), "cache_dir": tmp})
        requests = asyncio.run(plan_requests(config, "llamacpp"))
    return [chat_body(r.messages, r.params) for r in requests]


def worker(setting: str, bodies: list[dict], passes: list[dict], threads: int) -> dict:
    """Run in a fresh process: load llama.cpp with ``setting`` and run ``passes`` one after another.
    A pass is {"order": [indices], "concurrency": C}; returns replies by index and timings per pass."""
    import xllamacpp as xl

    from robusteval.models.llamacpp import default_threads, embedded_model_path

    overrides, body_extra = SETTINGS[setting]
    params = xl.CommonParams()
    params.model.path = str(embedded_model_path())
    params.n_ctx = 4096 * overrides.get("n_parallel", 1)
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads or default_threads()
    params.warmup = False
    params.verbosity = -1
    params.hostnames = ["127.0.0.1"]
    params.cache_ram_mib = 1024
    for key, value in overrides.items():
        if key == "flash_attn_type":
            value = xl.llama_flash_attn_type(value)
        setattr(params, key, value)
    server = xl.Server(params)
    server.handle_chat_completions({"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 4})
    out = []
    for p in passes:
        replies: dict[int, str] = {}
        tokens = 0

        def ask(i: int) -> tuple[int, str, int]:
            reply = server.handle_chat_completions(bodies[i] | body_extra)
            return i, reply["choices"][0]["message"]["content"], reply["usage"]["completion_tokens"]

        started = time.perf_counter()
        with ThreadPoolExecutor(p["concurrency"]) as pool:
            for i, text, n in pool.map(ask, p["order"]):
                replies[i] = text
                tokens += n
        out.append({"replies": replies, "wall_s": time.perf_counter() - started, "tokens": tokens})
    return {"passes": out}  # the server is dropped with this process


def run_worker(setting: str, bodies_file: str, passes: list[dict], threads: int) -> list[dict]:
    job = json.dumps({"setting": setting, "bodies": bodies_file, "passes": passes, "threads": threads})
    proc = subprocess.run([sys.executable, __file__, "--worker", job], capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout.splitlines()[-1])["passes"]
    for p in result:
        p["replies"] = {int(k): v for k, v in p["replies"].items()}
    return result


def differing(reference: dict[int, str], other: dict[int, str]) -> int:
    return sum(reference[i] != text for i, text in other.items())


def speed(args, bodies: list[dict]) -> None:
    """Speed only: each setting's fresh pass, the settings interleaved round by round (so a change in
    the machine's load reaches all of them), medians over the rounds."""
    import statistics

    n = len(bodies)
    settings = args.settings.split(",")
    print(f"{n} requests, max_tokens {args.max_tokens}, threads {args.threads or 'default'}, "
          f"{args.speed_rounds} rounds, load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(bodies, f)
    walls: dict[str, list[float]] = {s: [] for s in settings}
    tokens: dict[str, int] = {}
    for _ in range(args.speed_rounds):
        for setting in settings:
            slots = SETTINGS[setting][0].get("n_parallel", 1)
            p = run_worker(setting, f.name, [{"order": list(range(n)), "concurrency": slots}], args.threads)[0]
            walls[setting].append(p["wall_s"])
            tokens[setting] = p["tokens"]
            print(f"  {setting}: {p['wall_s']:.1f} s (load average {os.getloadavg()[0]:.2f})", flush=True)
    print("| setting | wall s per round | median requests/s | median generated tokens/s |")
    print("|---|---|---|---|")
    for setting in settings:
        wall = statistics.median(walls[setting])
        print(f"| {setting} | {', '.join(f'{w:.1f}' for w in walls[setting])} | {n / wall:.2f} | "
              f"{tokens[setting] / wall:.1f} |")
    os.unlink(f.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--conditions", default="fresh,order,conc,resume,warm,threads")
    parser.add_argument("--speed-rounds", type=int, default=0,
                        help="speed only: time each setting's fresh pass this many times, interleaved")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        job = json.loads(args.worker)
        bodies = json.loads(Path(job["bodies"]).read_text())
        print(json.dumps(worker(job["setting"], bodies, job["passes"], job["threads"])))
        return

    bodies = plan(args.questions, args.max_tokens)
    n = len(bodies)
    if args.speed_rounds:
        return speed(args, bodies)
    conditions = args.conditions.split(",")
    print(f"{n} requests ({args.questions} questions x order,format), max_tokens {args.max_tokens}, "
          f"threads {args.threads or 'default'}, cores {len(os.sched_getaffinity(0))}, "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(bodies, f)
    shuffled = list(range(n))
    random.Random(1).shuffle(shuffled)
    print("| setting | differ: order | conc | resume | warm | threads | requests/s | tokens/s | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for setting in args.settings.split(","):
        slots = SETTINGS[setting][0].get("n_parallel", 1)
        first = run_worker(setting, f.name, [{"order": list(range(n)), "concurrency": slots}]
                           + ([{"order": list(range(n))[::-1], "concurrency": slots}] if "warm" in conditions
                              else []), args.threads)
        reference = first[0]["replies"]
        cells = []
        if "order" in conditions:
            cells.append(differing(reference, run_worker(setting, f.name, [{"order": shuffled, "concurrency": slots}],
                                                         args.threads)[0]["replies"]))
        else:
            cells.append("")
        if "conc" in conditions:
            conc = 1 if slots > 1 else 4
            cells.append(differing(reference, run_worker(setting, f.name, [{"order": list(range(n)),
                                                                            "concurrency": conc}],
                                                         args.threads)[0]["replies"]))
        else:
            cells.append("")
        if "resume" in conditions:
            half = list(range(n // 2, n))
            resumed = run_worker(setting, f.name, [{"order": half, "concurrency": slots}], args.threads)[0]
            cells.append(f"{differing(reference, resumed['replies'])} of {len(half)}")
        else:
            cells.append("")
        cells.append(differing(reference, first[1]["replies"]) if "warm" in conditions else "")
        if "threads" in conditions:  # the other thread count (1 if the default is more, else 2)
            other = 1 if (args.threads or len(os.sched_getaffinity(0))) > 1 else 2
            cells.append(differing(reference, run_worker(setting, f.name, [{"order": list(range(n)),
                                                                            "concurrency": slots}],
                                                         other)[0]["replies"]))
        else:
            cells.append("")
        wall, tokens = first[0]["wall_s"], first[0]["tokens"]
        print(f"| {setting} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {cells[4]} | {n / wall:.2f} | "
              f"{tokens / wall:.1f} | {wall:.1f} |", flush=True)
    os.unlink(f.name)


if __name__ == "__main__":
    main()
