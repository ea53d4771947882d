"""The budget benchmark's checks on real grids (benchmarks/budget.py): the rest oracle and the
floor's fitted parameters."""

import importlib.util
from pathlib import Path

import numpy as np

from robusteval.metrics.budget import choose_cells

_spec = importlib.util.spec_from_file_location(
    "budget_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "budget.py")
assert _spec is not None and _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)
fitted_truth, rest_oracle = _bench.fitted_truth, _bench.rest_oracle


def _grid(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ability = rng.normal(0, 1.5, 200)
    return (rng.random((200, 4)) < 1 / (1 + np.exp(-(ability[:, None] + np.array([-1, 0, 0.5, 1]))))).astype(float)


def test_the_rest_oracle_reads_a_copied_template_off_its_copy():
    grid = _grid()
    grid[:, 1] = grid[:, 0]  # template 1 answers as template 0 does: the rest of the grid says it all
    observed = np.where(choose_cells(*grid.shape, 0.3, seed=1), grid, np.nan)
    got = rest_oracle(observed, grid)
    # within the regression's own shrinkage (C = 1 keeps its probabilities off 0 and 1)
    assert abs(got[1] - grid[:, 1].mean()) < 0.03
    assert abs(got[0] - grid[:, 0].mean()) < 0.03
    alone = _grid()  # the same template 1 without its copy: predicted from the abilities only
    alone_got = rest_oracle(np.where(choose_cells(*alone.shape, 0.3, seed=1), alone, np.nan), alone)
    assert np.all((alone_got >= 0) & (alone_got <= 1))


def test_the_floor_on_a_real_grid_is_told_the_fit_of_every_cell():
    grid = _grid(2)
    truth = fitted_truth(grid)
    assert truth.offset is not None and truth.effect is not None and truth.p is None
    p = 1 / (1 + np.exp(-(truth.offset + truth.effect[None, :])))
    # the fit of every cell matches each template's accuracy closely (shrinkage moves it a little)
    assert np.abs(p.mean(axis=0) - grid.mean(axis=0)).max() < 0.03
    # and orders the templates as their effects do
    assert list(np.argsort(truth.effect)) == list(np.argsort(grid.mean(axis=0)))
