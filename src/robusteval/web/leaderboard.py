"""Leaderboards from a folder of runs: one table per suite, a row per (run, model), a column per
headline metric. Pure: reads results.json files, returns data; the server renders it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from robusteval.report.sections import headlines


@dataclass(frozen=True)
class Row:
    run_id: str
    model: str
    started: str
    values: dict[str, tuple[float | None, float | None, float | None]]  # metric -> (value, low, high)


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
    return boards_from(find_runs(runs_dir))


def boards_from(runs: list[tuple[str, dict]]) -> list[Board]:
    """One board per suite from (run name, results) pairs."""
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
    return [Board(suite, tuple(metric_order.get(suite, {})), tuple(rows)) for suite, rows in sorted(by_suite.items())]
