"""`make demo`'s command beside a busy loop started in the same instant (issue 47's measure): wall time,
CPU time, the load average before and after, the invalid share, each family's accuracy, and how the
default reader read the replies.

The command is read from the Makefile's ``demo`` target, so this measures what a newcomer runs. Each
command runs in a fresh process with a fresh response store (nothing cached) in a temporary folder;
one CPU-bound busy loop (``python3 -c "while True: pass"``) starts just before it and is stopped when
it ends. ``--before`` also runs the demo's command before issue 47 (no stop string, no prompt cache),
after the first, the two side by side in one invocation on the same machine. ``--no-loop`` runs without
the busy loop. Nothing here passes or fails: the figures go to docs/performance.md, with the load.

    python benchmarks/demo.py [--before] [--no-loop] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# issue 47 measured this one: 490 s beside a busy loop, 46% of the replies invalid
BEFORE = ("run", "mcq", "--families", "order,format", "--limit", "20", "--max-tokens", "64")


def demo_command(makefile: Path = ROOT / "Makefile") -> tuple[str, ...]:
    """The arguments after ``robusteval`` of the Makefile's ``demo`` target."""
    lines = makefile.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("demo:")))
    for line in lines[start + 1:]:
        if "robusteval run" in line:
            words = shlex.split(line.strip())
            return tuple(words[words.index(next(w for w in words if w.endswith("robusteval"))) + 1:])
    raise SystemExit("no `robusteval run` line under the Makefile's demo target")


def run_once(name: str, args: tuple[str, ...], folder: Path, busy_loop: bool) -> dict:
    """One command, fresh store, the busy loop started in the same instant; its figures."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-c", "import sys; from robusteval.cli import main; sys.exit(main())", *args,
               "--cache-dir", str(folder / name / "cache"), "--out", str(folder / name / "runs"), "--run-id", name]
    load_before = os.getloadavg()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the loop is reaped after the run: not counted
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy_loop else None
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = proc.communicate()
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime - children.ru_utime + usage.ru_stime - children.ru_stime
    if loop is not None:
        loop.kill()
        loop.wait()
    load_after = os.getloadavg()
    if proc.returncode != 0:
        raise SystemExit(f"{name}: exit {proc.returncode}\n{output[-3000:]}")
    results = json.loads((folder / name / "runs" / name / "results.json").read_text())
    return {"name": name, "command": "robusteval " + shlex.join(args), "wall_s": wall,
            "cpu_s": cpu, "load_before": load_before[0], "load_after": load_after[0],
            "results": results, "output": output}


def summary(run: dict) -> list[str]:
    """The lines printed for one run."""
    metrics = run["results"]["metrics"]
    lines = [f"{run['name']}: {run['command']}",
             f"  wall {run['wall_s']:.0f} s, CPU {run['cpu_s']:.0f} s; load average {run['load_before']:.2f} "
             f"before, {run['load_after']:.2f} after; {os.cpu_count()} cores"]
    invalid = replies = 0
    for model, families in metrics.items():
        for family, fm in families.items():
            read_as = fm.get("read_as") or {}
            n = fm.get("samples", 0)
            invalid += fm.get("invalid", 0)
            replies += n - fm.get("failed", 0)
            valid = fm.get("accuracy_valid") or {}
            lines.append(f"  {model} · {family}: accuracy {_value(fm['accuracy'])}, over valid replies "
                         f"{_value(valid) if valid else 'the same'}; consistency {_value(fm['consistency_rate'])}; "
                         f"spread {_value(fm['spread'])}; read as {read_as or 'n/a'}")
    if replies:
        lines.append(f"  invalid {invalid} of {replies} replies ({invalid / replies:.1%})")
    return lines


def _value(estimate: dict) -> str:
    value = estimate.get("value")
    return "n/a" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", action="store_true", help="also run the demo's command before issue 47")
    parser.add_argument("--no-loop", dest="busy_loop", action="store_false", help="no busy loop beside the run")
    parser.add_argument("--keep", type=Path, help="keep the runs (and stores) in this folder")
    args = parser.parse_args()
    runs = [("demo", demo_command())] + ([("before", BEFORE)] if args.before else [])
    with tempfile.TemporaryDirectory(prefix="demo-bench-") as tmp:
        folder = args.keep or Path(tmp)
        for name, command in runs:
            print("\n".join(summary(run_once(name, command, folder, args.busy_loop))), flush=True)


if __name__ == "__main__":
    main()
