"""Heavy libraries load when a run needs them, not when the command line starts (issue 34: every
``run mcq`` imported scikit-learn, which only ``--budget`` uses, and scipy.stats for one t-quantile).
Checked by what a fresh interpreter has loaded, never by time (benchmarks/startup.py measures it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("sklearn", "scipy.stats", "pandas", "matplotlib", "semopy", "torch", "sentence_transformers")


def _loaded(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(*[m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize("code", [
    "from robusteval.cli import build_parser; build_parser(['run', 'mcq'])",
    "import robusteval.suites.mcq, robusteval.run",
    "import robusteval.suites.tree",
])
def test_starting_loads_no_heavy_library(code):
    assert _loaded(code) == set()


def test_a_budget_fit_needs_no_scikit_learn():
    # the adaptive design's fit is the estimator's own (budget_fit), no longer a scikit-learn model
    assert "sklearn" not in _loaded("import numpy as np\nfrom robusteval.metrics.budget import fit_grid\n"
                                    "print(fit_grid(np.array([[1.0, 0.0, np.nan], [0.0, 1.0, 1.0]])))")
