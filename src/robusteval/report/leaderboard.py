"""Leaderboards from a folder of runs: one table per suite, a row per (run, model), a column per
headline metric, and a rank by the first metric in which models that cannot be told apart share a
rank (`metrics.ranking`: paired over the items both answered where the suite's per-item extractor
(`report.item_values`) gives that metric per item, by their 95% intervals otherwise). Pure: reads
run files, returns data; the server renders it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.files import slug
from robusteval.metrics.ranking import Entry, tie_ranks
from robusteval.report.sections import headlines
from robusteval.results.folder import RESERVED_MARK
from robusteval.results.records import read_results


@dataclass(frozen=True)
class Row:
    run_id: str
    model: str
    started: str
    values: dict[str, tuple[float | None, float | None, float | None]]  # metric -> (value, low, high)
    rank: int | None = None  # by the board's first metric; equal for rows that cannot be told apart
    tied: bool = False
    n: int | float | None = None  # the units behind the first metric's value (items, sentences, personas)
    basis: str = ""  # how the row was told apart from (or joined) its tie group's leader: paired | intervals
    # mcq, a family whose variants are a sample: whether the row beats the next rank group under most
    # variants (`report.rank_stability.versus_next_text`); empty elsewhere and for the last group
    across_variants: str = ""


@dataclass(frozen=True)
class Board:
    suite: str
    metrics: tuple[str, ...]
    rows: tuple[Row, ...]
    dataset: str = ""  # the data the runs read: runs on other data are another board
    size: str = ""  # the items asked for (--limit, "all", a shard): a number on 20 items is no rival to one on 2,000

    @property
    def key(self) -> str:
        """An id for the board (HTML anchor, file name): suite, dataset and size."""
        return slug(f"{self.suite}-{self.dataset}-{self.size}")

    @property
    def ranked_rows(self) -> list[Row]:
        """The rows best rank first (rows without a rank last), as the page first shows them."""
        return sorted(self.rows, key=lambda r: (r.rank is None, r.rank or 0))

    @property
    def tie_groups(self) -> list[tuple[int, list[Row]]]:
        """(rank, rows) of every rank two or more rows share, best rank first."""
        groups: dict[int, list[Row]] = {}
        for row in self.rows:
            if row.tied and row.rank is not None:
                groups.setdefault(row.rank, []).append(row)
        return sorted(groups.items())


def data_of(results: dict[str, Any]) -> tuple[str, str]:
    """(dataset, size) of a run: what it read (``--data``, else the sources its data audit names,
    else the suite's default set) and which items it asked (``--limit`` with its seed, all, a shard)."""
    config: dict[str, Any] = results["config"] if isinstance(results.get("config"), dict) else {}
    dataset = config.get("data")
    if not dataset:
        audit: dict[str, Any] = results["data"] if isinstance(results.get("data"), dict) else {}
        listed = audit.get("sources")
        sources = [str(s.get("source")) for s in (listed if isinstance(listed, list) else [])
                   if isinstance(s, dict) and s.get("source")]
        dataset = " + ".join(sources) if sources else "default"
    limit = config.get("limit")
    # --limit draws a seeded sample: another seed asks other questions
    size = f"{limit} items, seed {config.get('seed', 0)}" if isinstance(limit, int) else "all items"
    if config.get("shard"):
        size += f", shard {config['shard']}"
    return str(dataset), size


def _larger_first(size: str) -> tuple[int, str]:
    """A board's place among those of its suite and dataset: all items first, then by falling size."""
    head = size.split(" ", 1)[0]
    return (-int(head) if head.isdigit() else -(10**18), size)


@dataclass(frozen=True)
class LeftOut:
    """A run folder the leaderboard does not rank, and why (the page lists it under the boards)."""

    run_id: str
    reason: str


UNFINISHED = f"unfinished: a run is writing it, or was stopped before it finished (it holds {RESERVED_MARK})"


@dataclass(frozen=True)
class Leaderboard:
    """What the page of a folder of runs shows: its boards, and the folders left out of them."""

    boards: list[Board]
    left_out: list[LeftOut]


def find_runs(runs_dir: Path) -> tuple[list[tuple[str, dict[str, Any]]], list[LeftOut]]:
    """(run folder name, results) for every direct subfolder holding a finished run's readable
    results.json, and the folders left out: unfinished runs (`results.folder.RESERVED_MARK`, even
    beside a results.json: a run stopped as it wrote its files is not a second finished row) and
    broken files (the one-line reason `read_results` gives), so that one bad folder never takes
    the page down and is never left out without a word."""
    runs, left_out = [], []
    for child in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
        if not child.is_dir() or child.is_symlink():
            continue
        if (child / RESERVED_MARK).exists():
            left_out.append(LeftOut(child.name, UNFINISHED))
        elif (child / "results.json").is_file():
            try:
                runs.append((child.name, read_results(child)))
            except UserError as exc:
                left_out.append(LeftOut(child.name, str(exc)))
    return runs, left_out


def file_version(path: Path) -> tuple[int, int, int] | None:
    """A file's version (modification time, size, inode: an atomic replace is a new inode), None if absent."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def runs_state(runs_dir: Path) -> tuple[Any, ...]:
    """What the leaderboard of ``runs_dir`` is built from, as a comparable value: each direct
    subfolder's name and the `file_version` of its results.json, samples.jsonl and unfinished mark.
    A page built from one state is right until the state changes."""
    children = sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []
    return tuple((c.name, *(file_version(c / name) for name in ("results.json", "samples.jsonl", RESERVED_MARK)))
                 for c in children)


def leaderboard(runs_dir: Path) -> Leaderboard:
    runs, left_out = find_runs(runs_dir)
    found = boards_from(runs, {name: runs_dir / name for name, _ in runs}, left_out)
    return Leaderboard(found, sorted(left_out, key=lambda left: left.run_id))


def boards(runs_dir: Path) -> list[Board]:
    return leaderboard(runs_dir).boards


def boards_from(runs: list[tuple[str, dict[str, Any]]], folders: dict[str, Path] | None = None,
                left_out: list[LeftOut] | None = None) -> list[Board]:
    """One board per suite, dataset and size from (run name, results) pairs: runs on other data or
    another number of items are never ranked in one table. A run's folder (``folders``), where
    given, holds the samples.jsonl whose per-item scores rank models by a paired test. With
    ``left_out`` (the page's list), a run whose rows cannot be built is added there, not raised."""
    by_board: dict[tuple[str, str, str], list[Row]] = {}
    metric_order: dict[tuple[str, str, str], dict[str, None]] = {}
    for folder, results in runs:
        try:
            key, rows, run_metrics = _rows_of(folder, results)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a results.json of an odd shape
            if left_out is None:
                raise
            left_out.append(LeftOut(folder, f"its results.json cannot be shown ({type(exc).__name__}: {exc})"))
            continue
        by_board.setdefault(key, []).extend(rows)
        metric_order.setdefault(key, {}).update(dict.fromkeys(run_metrics))
    out = []
    for (suite, dataset, size), rows in sorted(by_board.items(), key=lambda kv: (*kv[0][:2], _larger_first(kv[0][2]))):
        metrics = tuple(metric_order.get((suite, dataset, size), {}))
        ranked = _ranked(rows, metrics[0], folders or {}, dict(runs)) if metrics else rows
        if metrics:  # the runs whose records hold per-variant accuracies (mcq's), else unchanged
            ranked = _across_variants(ranked, metrics[0], dict(runs))
        out.append(Board(suite, metrics, tuple(ranked), dataset, size))
    return out


def _rows_of(folder: str, results: dict[str, Any]) -> tuple[tuple[str, str, str], list[Row], list[str]]:
    """A run's board key, its rows (one per model) and its headline metrics in order."""
    key = (str(results.get("suite", "?")), *data_of(results))
    per_model: dict[str, dict[str, Any]] = {}
    ns: dict[str, int | float | None] = {}
    metrics: dict[str, None] = {}
    for h in headlines(results):
        per_model.setdefault(h.model, {})[h.metric] = (h.value, h.low, h.high)
        ns.setdefault(h.model, h.n)  # the first metric's n: the one the rank is by
        metrics[h.metric] = None
    rows = [Row(folder, model, str(results.get("started", "")), values, n=ns.get(model))
            for model, values in per_model.items()]
    return key, rows, list(metrics)


def _ranked(rows: list[Row], metric: str, folders: dict[str, Path], results: dict[str, dict[str, Any]]) -> list[Row]:
    scores = {run: item_scores(folders[run] / "samples.jsonl", metric, results.get(run)) if run in folders else {}
              for run in {r.run_id for r in rows}}
    entries = [Entry(f"{i}", *(r.values.get(metric) or (None, None, None)),
                     items=scores[r.run_id].get(r.model, {})) for i, r in enumerate(rows)]
    return [replace(row, rank=rank.rank, tied=rank.tied, basis=rank.basis)
            for row, rank in zip(rows, tie_ranks(entries))]


def _across_variants(rows: list[Row], metric: str, results: dict[str, dict[str, Any]]) -> list[Row]:
    """Each ranked row against every row of the next rank group: the share of the family's variants
    it wins against the one that challenges it most (`report.rankings.versus`). Tie groups are never split:
    the column only says whether a rank the items tell apart also holds across the variants."""
    from robusteval.report.rank_stability import versus_next_text
    from robusteval.report.rankings import variant_scores, versus

    family = metric.removesuffix(" accuracy")
    scores = [variant_scores(results.get(r.run_id, {}), r.model, family) if family != metric else {} for r in rows]
    if not any(scores):
        return rows
    out = []
    for row, mine in zip(rows, scores):
        below = [r.rank for r in rows if r.rank is not None and row.rank is not None and r.rank > row.rank]
        pairs = [versus(mine, theirs) for r, theirs in zip(rows, scores) if below and r.rank == min(below)]
        found = [p for p in pairs if p is not None]
        out.append(replace(row, across_variants=versus_next_text(min(found, key=lambda p: p.low))) if found
                   else row)
    return out


def item_scores(samples: Path, metric: str, results: dict[str, Any] | None = None) -> dict[str, dict[str, float]]:
    """model -> item id -> the model's value of ``metric`` on that item, from the suite's per-item
    extractor (`report.item_values`: mcq and tree accuracy, mcq consistency rate, tree F1,
    consistency similarity, hallucination detection accuracy); empty for a metric that is no mean of
    per-item values (detection F1, persona stability), or when the files cannot be read. Cached per
    version of the samples file (`report.item_values.run_item_values`)."""
    from robusteval.report.item_values import run_item_values

    if results is None:  # the samples alone: their suite is that of the results.json beside them
        try:
            results = read_results(samples.parent)
        except (OSError, ValueError, UserError):
            results = {}
    if not isinstance(results, dict):
        return {}
    try:
        measures = run_item_values(str(results.get("suite", "")), results, samples)
    except (OSError, ValueError, UserError):
        return {}  # a file being written or broken: rank by intervals
    for measure in measures:
        if measure.metric == metric:
            return measure.values
    return {}
