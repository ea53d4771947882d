"""Start-up cost of the command line, apart from any run's throughput.

    .venv/bin/python benchmarks/startup.py [--src SRC_DIR] [--repeats 5]

Each command runs in a fresh process with ``SRC_DIR`` (default: this checkout's ``src``) first on
the path; the median wall time over the repeats is printed, with the heavy libraries each loaded.
Point ``--src`` at another version's ``src`` (``git archive REV src | tar -x -C DIR``) to compare.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("sklearn", "scipy.stats", "pandas", "matplotlib", "semopy", "torch", "sentence_transformers")
COMMANDS = {
    "robusteval --help": ["-m", "robusteval.cli", "--help"],
    "robusteval run mcq --help": ["-m", "robusteval.cli", "run", "mcq", "--help"],
    "import the mcq suite (every mcq run)": ["-c", "import robusteval.suites.mcq"],
}
PROBE = "import sys, runpy; sys.argv = {argv!r}; {body}\nprint('LOADED', *[m for m in {heavy!r} if m in sys.modules])"


def one(src: Path, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def loaded(src: Path, args: list[str]) -> str:
    if args[0] == "-c":
        body, argv = args[1], ["x"]
    else:
        body, argv = f"runpy.run_module({args[1]!r}, run_name='__main__')", [args[1], *args[2:]]
    code = PROBE.format(argv=argv, body=body, heavy=HEAVY)
    wrapped = f"try:\n    exec({code!r})\nexcept SystemExit:\n    pass\nimport sys\n" \
              f"print('LOADED', *[m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", wrapped], env={**os.environ, "PYTHONPATH": str(src)},
                         capture_output=True, text=True).stdout
    line = next((s for s in out.splitlines() if s.startswith("LOADED")), "LOADED")
    return ", ".join(line.split()[1:]) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parent.parent / "src")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"src: {args.src}")
    for name, command in COMMANDS.items():
        times = [one(args.src, command) for _ in range(args.repeats)]
        print(f"{name}: median {statistics.median(times):.2f} s over {args.repeats} "
              f"(min {min(times):.2f}); heavy libraries loaded: {loaded(args.src, command)}")


if __name__ == "__main__":
    main()
