"""Peak memory of every suite at two sizes: does it grow with the number of samples?

    .venv/bin/python benchmarks/memory.py [--scale 1] [--suites mcq,persona,...] [--src DIR]

Each suite runs as a child process (`robusteval run SUITE`) against the deterministic stub, once with
N items and once with 4N, on synthetic data made here (our own text); its peak resident memory is
the child's ``ru_maxrss`` (``os.wait4``). A suite that holds its samples until the run ends peaks
higher at 4N by what four times the samples take; one that streams them peaks about the same.
``--src DIR`` runs another checkout's code (e.g. ``--src ../main/src``, the code before a change), so
the two can be printed side by side. Prints figures; asserts nothing about time or memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from engine.conftest import stub_process, write_dataset  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
MODEL = "{model}"  # in a command: the stub model's spec


def run(args: list[str], src: Path) -> tuple[float, float]:
    """Run ``robusteval ARGS`` with ``src`` first on the path; returns (wall seconds, peak RSS in MB)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli", *args], stdout=subprocess.DEVNULL,
                                stderr=err, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        err.seek(0)
        tail = err.read()[-2000:]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"robusteval {' '.join(args[:2])} failed: {tail}")
    return wall, usage.ru_maxrss / 1024  # KiB on Linux


# ------------------------------------------------------------------ synthetic data, n items each

def math_file(work: Path, n: int) -> list[str]:
    path = work / "math.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            a, b = i + 3, 2 * i + 5
            f.write(json.dumps({"question": f"Ann has {a} shells and finds {b} more. How many shells has she?",
                                "answer": f"{a} + {b} = {a + b}\n#### {a + b}"}) + "\n")
    return ["mcq", "--data", str(path), "--all", "--families", "prompt,seeds"]


def population(work: Path, n: int) -> list[str]:
    path = work / "population.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"p{i}", "name": f"Person {i}", "gender": ("female", "male")[i % 2],
                                "description": f"Someone who collects item number {i} of every series."}) + "\n")
    return ["persona", "--population", str(path), "--contexts", "no_conv,fixed:chess", "--turns", "1",
            "--bootstrap", "20"]


def hallucination_items(work: Path, n: int) -> list[str]:
    path = work / "trial_de_en.csv"
    with open(path, "w") as f:
        f.write("id,source,hyp1,hyp2,type,label\n")
        for i in range(n):
            f.write(f"s{i},Der Zug {i} fährt um acht Uhr ab.,Train {i} leaves at nine.,Train {i} leaves at eight."
                    f",number,hyp1\n")
    return ["hallucination", "--data", str(path), "--all", "--judge", "none", "--prompts", "incorrect,support",
            "--orders", "both", "--bootstrap", "100"]


def prompt_sets(work: Path, n: int) -> list[str]:
    path = work / "sets.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "variation": "formality", "variants": [
                {"language": "en", "prompt": f"Name a primary colour and the number {i}."},
                {"language": "en", "prompt": f"pls name a primary color + the number {i}"},
                {"language": "en", "prompt": f"Kindly name one primary colour, then the number {i}."}]}) + "\n")
    return ["consistency", "--data", str(path), "--all", "--judge", "oracle", "--oracle", MODEL,
            "--oracle-retries", "1"]


def trees(work: Path, n: int, built: Path) -> list[str]:
    """``n`` copies (new ids) of the trees built once from the QA fixture."""
    document = json.loads(built.read_text())
    stored = document["trees"]
    copies = []
    for i in range(n):
        tree = json.loads(json.dumps(stored[i % len(stored)]))
        tree["item"]["id"] = f"t{i}"
        copies.append(tree)
    path = work / "trees.json"
    path.write_text(json.dumps({**document, "trees": copies}))
    return ["tree", "--trees", str(path), "--all", "--modes", "closed", "--max-tokens", "16"]


def mcq_items(work: Path, n: int, *flags: str) -> list[str]:
    return ["mcq", "--data", str(write_dataset(work / "items.jsonl", n)), "--all", *flags]


# per suite: (N, the command's arguments for n items, samples per item as a note)
Case = tuple[int, Callable[[Path, int], list[str]], str]


def cases(built_trees: Callable[[], Path]) -> dict[str, Case]:
    return {
        "mcq": (2000, lambda w, n: mcq_items(w, n, "--families", "order,format"), "10 samples an item"),
        "mcq-loglik": (500, lambda w, n: mcq_items(w, n, "--families", "order", "--scoring", "loglik"),
                       "12 samples (3 rules x 4 orders), 32 requests an item"),
        "mcq-math": (1000, math_file, "13 samples a problem (8 templates, 5 draws)"),
        "persona": (500, population, "2 contexts x 20 questionnaire items a persona, 1 turn"),
        "tree": (4000, lambda w, n: trees(w, n, built_trees()), "3 evaluated nodes a tree, closed-book"),
        "hallucination": (1000, hallucination_items, "generation, detection (2 prompts x 2 orders, a vote), cross"),
        "consistency": (4000, prompt_sets, "3 answers and 1 oracle rating a prompt set"),
    }


def build_trees(work: Path, base_url: str, src: Path) -> Path:
    path = work / "built-trees.json"
    if not path.exists():
        run(["run", "tree", "--quiet", "--model", f"openai:stub?base_url={base_url}", "--data",
             str(FIXTURES / "popqa_small.jsonl"), "--all", "--depth", "1", "--paraphrases", "1", "--lexical", "2",
             "--lexical-kinds", "ocr,visual", "--build-only", "--save-trees", str(path), "--cache-dir",
             str(work / "cache"), "--out", str(work / "runs")], src)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every suite's N by this")
    ap.add_argument("--suites", help="comma-separated cases (default: all)")
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the code to run (default: this checkout's)")
    a = ap.parse_args()
    src = a.src.resolve()
    with tempfile.TemporaryDirectory() as tmp, stub_process() as base_url:
        work = Path(tmp)
        model = f"openai:stub?base_url={base_url}&max_concurrency=64"
        table = cases(lambda: build_trees(work, base_url, src))
        names = a.suites.split(",") if a.suites else list(table)
        print(f"code: {src}; stub latency 0; peak RSS of the run's process")
        print(f"{'suite':14} {'items':>7} {'samples':>8} {'wall s':>7} {'peak MB':>8}   {'items':>7} {'samples':>8} "
              f"{'wall s':>7} {'peak MB':>8}   {'MB per 1k more samples':>22}")
        for name in names:
            n, make, note = table[name]
            n = max(1, round(n * a.scale))
            figures = []
            for size in (n, 4 * n):
                data = work / f"{name}-{size}"
                data.mkdir()
                command = [model if arg == MODEL else arg for arg in make(data, size)]
                args = ["run", *command, "--quiet", "--model", model, "--cache-dir", str(data / "cache"),
                        "--out", str(data / "runs"), "--run-id", "r"]
                wall, peak = run(args, src)
                with open(data / "runs" / "r" / "samples.jsonl", "rb") as f:
                    samples = sum(1 for _ in f)
                figures.append((size, samples, wall, peak))
            (n1, s1, w1, p1), (n4, s4, w4, p4) = figures
            slope = (p4 - p1) / max(1, s4 - s1) * 1000
            print(f"{name:14} {n1:7,} {s1:8,} {w1:7.1f} {p1:8.0f}   {n4:7,} {s4:8,} {w4:7.1f} {p4:8.0f}   "
                  f"{slope:22.2f}   ({note})", flush=True)


if __name__ == "__main__":
    main()
