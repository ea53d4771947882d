"""A pilot read as items x variants correctness grids: a finished mcq run folder (its samples.jsonl,
and its results.json for the tokens a request cost) or a correctness grid file (`scoring.grid`),
per model and family. What ``robusteval plan`` sizes a study from, and what ``compare`` ranks the
models of several runs across the variants on (`metrics.rank_stability`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from robusteval.errors import UserError

if TYPE_CHECKING:
    from robusteval.metrics.rank_stability import RankStability


@dataclass(frozen=True)
class PilotGrid:
    """One model's family in the pilot: share right per (item, variant) cell (NaN: not answered; the
    mean over a cell's samples), the requests each cell took, and the mean tokens (prompt +
    completion) of the model's requests in the pilot (None: a grid file, which records none)."""

    model: str
    family: str
    items: tuple[str, ...]
    variants: tuple[str, ...]
    cells: np.ndarray  # items x variants
    samples: int = 1  # requests per cell
    tokens_per_request: float | None = None
    prompt_tokens_per_request: float | None = None


def grids(cells: Iterable[tuple[str, str, str, str, float]]) -> dict[tuple[str, str], tuple[tuple[str, ...],
                                                                                          tuple[str, ...], np.ndarray]]:
    """(model, family) -> (items, variants, items x variants mean of the values) from (model, family,
    item, variant, value) cells, in order of first appearance; a cell given twice (samples) is averaged."""
    sums: dict[tuple[str, str], dict[tuple[str, str], list[float]]] = {}
    for model, family, item, variant, value in cells:
        total = sums.setdefault((model, family), {}).setdefault((item, variant), [0.0, 0.0])
        total[0] += value
        total[1] += 1
    out = {}
    for key, by_cell in sums.items():
        items = tuple(dict.fromkeys(i for i, _ in by_cell))
        variants = tuple(dict.fromkeys(v for _, v in by_cell))
        row, col = {x: n for n, x in enumerate(items)}, {x: n for n, x in enumerate(variants)}
        grid = np.full((len(items), len(variants)), np.nan)
        for (item, variant), (s, n) in by_cell.items():
            grid[row[item], col[variant]] = s / n
        out[key] = (items, variants, grid)
    return out


def read_pilot(path: str) -> list[PilotGrid]:
    """Every (model, family) grid of the pilot at ``path``: a run folder (or its samples.jsonl), else a
    correctness grid file. One `UserError` for anything else."""
    p = Path(path).expanduser()
    if p.is_dir() or p.name == "samples.jsonl":
        return _run_grids(p if p.is_dir() else p.parent)
    if not p.is_file():
        raise UserError(f"{path}: no such run folder or grid file")
    from robusteval.data.audit import SourceAudit
    from robusteval.scoring.grid import load_grid

    cells = load_grid(p, SourceAudit(str(p)))
    return [PilotGrid(model, family, items, variants, grid)
            for (model, family), (items, variants, grid) in
            grids((c.model, c.family, c.item_id, c.variant, float(c.correct)) for c in cells).items()]


def _run_grids(folder: Path) -> list[PilotGrid]:
    from robusteval.compare import load_samples
    from robusteval.results.records import read_run

    record = read_run(folder)
    if record.suite != "mcq":
        raise UserError(f"{folder}: a {record.suite} run; a pilot is an mcq run or a correctness grid")
    rows = load_samples(str(folder))
    samples = record.config.get("samples", 1)
    samples = samples if isinstance(samples, int) and not isinstance(samples, bool) and samples > 0 else 1
    out = []
    for (model, family), (items, variants, grid) in grids(
            (r.model, r.family, r.item_id, r.variant, float(r.correct)) for r in rows if r.correct is not None).items():
        usage = record.models[model].usage if model in record.models else {}
        total, prompt = _tokens_per_request(usage)
        out.append(PilotGrid(model, family, items, variants, grid, samples, total, prompt))
    return out


def _tokens_per_request(usage: dict) -> tuple[float | None, float | None]:
    """(all tokens, prompt tokens) per answered request of a model's usage record, cached answers
    included (their tokens as the store recorded them); None without answered requests."""
    def count(key: str) -> float:
        value = usage.get(key, 0)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    answered = count("new") - count("failed") + count("cached")
    if answered <= 0:
        return None, None
    prompt = count("prompt_tokens") + count("cached_prompt_tokens")
    completion = count("completion_tokens") + count("cached_completion_tokens")
    return (prompt + completion) / answered, prompt / answered


def ranking_across_runs(runs: list[str]) -> dict[str, RankStability]:
    """Per sampled family every run holds: the ranking stability of every (run, model) on the items
    and variants all of them answered (each cell the mean over its samples). Families with fewer
    than 2 shared variants or 2 models are left out."""
    from robusteval.compare import load_samples
    from robusteval.metrics.rank_stability import rank_stability
    from robusteval.metrics.two_way import is_sampled

    entries: dict[tuple[str, str], dict[str, tuple[tuple[str, ...], tuple[str, ...], np.ndarray]]] = {}
    for run in runs:
        rows = load_samples(run)
        name = Path(run).name if Path(run).is_dir() else Path(run).parent.name
        for (model, family), grid in grids((r.model, r.family, r.item_id, r.variant, float(r.correct))
                                           for r in rows if r.correct is not None).items():
            entries.setdefault((name, model), {})[family] = grid
    models = [m for _, m in entries]
    labels = {key: key[1] if len(set(models)) == len(models) else f"{key[0]}/{key[1]}" for key in entries}
    out = {}
    families = [f for f in dict.fromkeys(f for grids_ in entries.values() for f in grids_)
                if is_sampled(f) and all(f in grids_ for grids_ in entries.values())]
    for family in families:
        held = [grids_[family] for grids_ in entries.values()]
        item_sets, variant_sets = [set(h[0]) for h in held[1:]], [set(h[1]) for h in held[1:]]
        items = [i for i in held[0][0] if all(i in s for s in item_sets)]
        variants = [v for v in held[0][1] if all(v in s for s in variant_sets)]
        if len(entries) < 2 or len(variants) < 2 or not items:
            continue
        cells = np.stack([_cells(h, items, variants) for h in held])  # models x items x variants
        answered = np.isfinite(cells).all(axis=(0, 2))  # items every model answered under every variant
        if not answered.any():
            continue
        scores = cells[:, answered, :].mean(axis=1)
        out[family] = rank_stability(scores, [labels[k] for k in entries], variants)
    return out


def _cells(held: tuple[tuple[str, ...], tuple[str, ...], np.ndarray], items: list[str],
           variants: list[str]) -> np.ndarray:
    row = {x: n for n, x in enumerate(held[0])}
    col = {x: n for n, x in enumerate(held[1])}
    return held[2][np.ix_([row[i] for i in items], [col[v] for v in variants])]
