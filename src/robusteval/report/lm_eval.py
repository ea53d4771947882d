"""lm-evaluation-harness's own figures beside robusteval's (``score`` on lm-eval's output with its
``results_*.json``), in the terminal and the report: per model, every metric both give, the difference, and its
reasons where they differ."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from robusteval.report.model import Run, Section, TableData
from robusteval.report.terminal import Table
from robusteval.results.lm_eval import LmEvalFigure

COLUMNS = ("task", "lm-eval metric", "robusteval", "lm-eval", "ours", "difference", "why")
NOTE = ("lm-eval's figures from its results_*.json beside robusteval's of the same replies (lm-eval rounds to 4 "
        "decimals); where they differ, the reasons counted from lm-eval's own reading of each reply in its log.")


def _ours(f: LmEvalFigure) -> str:
    name = f"{f.family} {f.variant} {f.measure}" if f.variant else f"{f.family} {f.measure}"
    return name.replace("_", " ")


def rows(figures: list[LmEvalFigure]) -> list[tuple[str, ...]]:
    """One row per figure: task, lm-eval's metric, robusteval's measure, both values, the difference
    (``=`` where they agree) and the reasons."""
    out: list[tuple[str, ...]] = []
    for f in figures:
        ours = "n/a" if f.robusteval is None else f"{f.robusteval:.4f}"
        diff = "=" if f.agrees else ("n/a" if f.difference is None else f"{f.difference:+.4f}")
        out.append((f.task, f.metric, _ours(f), f"{f.lm_eval:.4f}", ours, diff, "; ".join(f.reasons)))
    return out


def _title(model: str, figures: list[LmEvalFigure]) -> str:
    return f"{model} · lm-eval's figures beside robusteval's: {sum(f.agrees for f in figures)} of {len(figures)} equal"


def print_lm_eval(console: Console, model: str, figures: list[LmEvalFigure]) -> None:
    table = Table(title=Text(_title(model, figures)), title_justify="left")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for cells in rows(figures):
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    console.print(Text(NOTE, style="dim"))


def lm_eval_section(run: Run) -> Section | None:
    """The report's section for a folder scored with lm-eval's results_*.json (None otherwise)."""
    tables = tuple(TableData(_title(model, figures), COLUMNS, tuple(rows(figures)))
                   for model, figures in (run.extra.lm_eval or {}).items())
    return Section("mcq · lm-eval's own figures", tables=tables, notes=(NOTE,)) if tables else None
