"""Leaderboards from a folder of runs: one table per suite, a row per (run, model), a column per
headline metric, and a rank by the first metric in which models that cannot be told apart share a
rank (`metrics.ranking`: paired over the items both answered where the suite's per-item extractor
(`report.item_values`) gives that metric per item, by their 95% intervals otherwise). Pure: reads
run files, returns data; the server renders it."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from robusteval.errors import UserError
from robusteval.metrics.ranking import Entry, tie_ranks
from robusteval.report.sections import headlines
from robusteval.results.records import read_results


@dataclass(frozen=True)
class Row:
    run_id: str
    model: str
    started: str
    values: dict[str, tuple[float | None, float | None, float | None]]  # metric -> (value, low, high)
    rank: int | None = None  # by the board's first metric; equal for rows that cannot be told apart
    tied: bool = False


@dataclass(frozen=True)
class Board:
    suite: str
    metrics: tuple[str, ...]
    rows: tuple[Row, ...]


def find_runs(runs_dir: Path) -> list[tuple[str, dict]]:
    """(run folder name, results) for every direct subfolder holding a readable results.json."""
    out = []
    for child in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
        if child.is_dir() and not child.is_symlink() and (child / "results.json").is_file():
            try:
                out.append((child.name, read_results(child)))
            except (OSError, UnicodeDecodeError, UserError):
                continue  # a run being written, or a broken file: leave it out, never crash the page
    return out


def boards(runs_dir: Path) -> list[Board]:
    runs = find_runs(runs_dir)
    return boards_from(runs, {name: runs_dir / name for name, _ in runs})


def boards_from(runs: list[tuple[str, dict]], folders: dict[str, Path] | None = None) -> list[Board]:
    """One board per suite from (run name, results) pairs; a run's folder (``folders``), where given,
    holds the samples.jsonl whose per-item scores rank models by a paired test."""
    by_suite: dict[str, list[Row]] = {}
    metric_order: dict[str, dict[str, None]] = {}
    for folder, results in runs:
        suite = str(results.get("suite", "?"))
        per_model: dict[str, dict] = {}
        for h in headlines(results):
            per_model.setdefault(h.model, {})[h.metric] = (h.value, h.low, h.high)
            metric_order.setdefault(suite, {})[h.metric] = None
        for model, values in per_model.items():
            by_suite.setdefault(suite, []).append(Row(folder, model, str(results.get("started", "")), values))
    out = []
    for suite, rows in sorted(by_suite.items()):
        metrics = tuple(metric_order.get(suite, {}))
        ranked = _ranked(rows, metrics[0], folders or {}, dict(runs)) if metrics else rows
        out.append(Board(suite, metrics, tuple(ranked)))
    return out


def _ranked(rows: list[Row], metric: str, folders: dict[str, Path], results: dict[str, dict]) -> list[Row]:
    scores = {run: item_scores(folders[run] / "samples.jsonl", metric, results.get(run)) if run in folders else {}
              for run in {r.run_id for r in rows}}
    entries = [Entry(f"{i}", *(r.values.get(metric) or (None, None, None)),
                     items=scores[r.run_id].get(r.model, {})) for i, r in enumerate(rows)]
    return [replace(row, rank=rank.rank, tied=rank.tied) for row, rank in zip(rows, tie_ranks(entries))]


def item_scores(samples: Path, metric: str, results: dict | None = None) -> dict[str, dict[str, float]]:
    """model -> item id -> the model's value of ``metric`` on that item, from the suite's per-item
    extractor (`report.item_values`: mcq and tree accuracy, mcq consistency rate, tree F1,
    consistency similarity, hallucination detection accuracy); empty for a metric that is no mean of
    per-item values (detection F1, persona stability), or when the files cannot be read."""
    from robusteval.report.item_values import item_values

    if results is None:  # the samples alone: their suite is that of the results.json beside them
        try:
            results = read_results(samples.parent)
        except (OSError, ValueError, UserError):
            results = {}
    if not isinstance(results, dict):
        return {}
    rows = []
    try:
        if samples.is_file():
            with samples.open(encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return {}  # a file being written or broken: rank by intervals
    for measure in item_values(str(results.get("suite", "")), results, rows):
        if measure.metric == metric:
            return measure.values
    return {}
