"""Leaderboards from a folder of runs: one table per suite, a row per (run, model), a column per
headline metric, and a rank by the first metric in which models that cannot be told apart share a
rank (`metrics.ranking`: paired over the items both answered where samples.jsonl gives per-item
scores, by their 95% intervals otherwise). Pure: reads run files, returns data; the server renders it."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from robusteval.metrics.ranking import Entry, tie_ranks
from robusteval.report.sections import headlines


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
        results_file = child / "results.json"
        if child.is_dir() and not child.is_symlink() and results_file.is_file():
            try:
                out.append((child.name, json.loads(results_file.read_text(encoding="utf-8"))))
            except (OSError, json.JSONDecodeError):
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
        out.append(Board(suite, metrics, tuple(_ranked(rows, metrics[0], folders or {}) if metrics else rows)))
    return out


def _ranked(rows: list[Row], metric: str, folders: dict[str, Path]) -> list[Row]:
    scores = {run: item_scores(folders[run] / "samples.jsonl", metric) if run in folders else {}
              for run in {r.run_id for r in rows}}
    entries = [Entry(f"{i}", *(r.values.get(metric) or (None, None, None)),
                     items=scores[r.run_id].get(r.model, {})) for i, r in enumerate(rows)]
    return [replace(row, rank=rank.rank, tied=rank.tied) for row, rank in zip(rows, tie_ranks(entries))]


def item_scores(samples: Path, metric: str) -> dict[str, dict[str, float]]:
    """model -> item id -> mean correctness, for an "X accuracy" headline whose samples carry ``correct``
    and name X as their ``family`` (mcq) or ``mode`` (tree); empty for any other metric or no file."""
    part = metric.removesuffix(" accuracy")
    if part == metric or not samples.is_file():
        return {}
    sums: dict[str, dict[str, list[float]]] = {}
    try:
        with samples.open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if not isinstance(row, dict) or not isinstance(row.get("correct"), bool):
                    continue
                if part not in (row.get("family"), row.get("mode")) or row.get("status") == "failed":
                    continue
                total = sums.setdefault(str(row.get("model")), {}).setdefault(str(row.get("item_id")), [0.0, 0.0])
                total[0] += row["correct"]
                total[1] += 1
    except (OSError, ValueError):
        return {}  # a file being written or broken: rank by intervals
    return {model: {item: s / n for item, (s, n) in items.items()} for model, items in sums.items()}
