"""``python -m robusteval`` is the ``robusteval`` command (where no script is on PATH)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def test_python_dash_m_robusteval_runs_the_command_line():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "robusteval", "run", "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "mcq" in done.stdout and "consistency" in done.stdout  # the suites, as `robusteval run --help` lists them
    bad = subprocess.run([sys.executable, "-m", "robusteval", "no-such-command"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert bad.returncode == 2
