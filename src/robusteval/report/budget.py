"""A budgeted run's estimate of the full grid (mcq ``--budget``), in the terminal and in the report:
per family, each variant's estimated accuracy, the quantiles of the variants' accuracies and the
spread, each with its interval, and how many of the grid's cells were asked."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from robusteval.report.model import Run, Section, TableData
from robusteval.report.table import fmt_estimate
from robusteval.report.terminal import Table
from robusteval.results.budget import BudgetEstimate, read_budget

NOTE = ("--budget: only the cells counted as asked were asked; the rest are predicted by a Rasch model "
        "(logit = item + variant) fitted to them, and the intervals come from a bootstrap over items that "
        "refits the model. The same command without --budget asks the remaining cells (the asked ones are "
        "cached) and gives the full grid's numbers. The family metrics and sensitivity measures elsewhere in "
        "a budgeted run are of the asked cells only: a question asked under one variant is its own worst and "
        "best case, so the per-question measures (worst-case accuracy, consistency, flips) understate "
        "sensitivity there.")


def rows(estimate: BudgetEstimate) -> list[tuple[str, str]]:
    """(what, value [95% interval]) rows: the variants, then the quantiles and the spread."""
    out = [(name, fmt_estimate(e)) for name, e in estimate.variants.items()]
    out += [(f"{q} quantile of variant accuracies", fmt_estimate(e)) for q, e in estimate.quantiles.items()]
    out.append(("spread (max-min accuracy)", fmt_estimate(estimate.spread)))
    return out


def _title(model: str, family: str, e: BudgetEstimate) -> str:
    return f"{model} · {family} · estimate of the full grid from {e.asked} of {e.cells} cells (--budget {e.budget:g})"


def print_budget(console: Console, model: str, estimates: dict[str, BudgetEstimate]) -> None:
    for family, e in estimates.items():
        table = Table(title=Text(_title(model, family, e)), title_justify="left")
        table.add_column("variant / statistic")
        table.add_column("estimated accuracy [95% interval]")
        for what, value in rows(e):
            table.add_row(Text(what), value)
        console.print(table)
    if estimates:
        console.print(Text(NOTE, style="dim"))


def budget_section(run: Run) -> Section | None:
    """The report's section for a budgeted run (None for a full run)."""
    tables = tuple(TableData(_title(model, family, e), ("variant / statistic", "estimated accuracy [95% interval]"),
                             tuple(rows(e)))
                   for model, families in read_budget(run.results).items() for family, e in families.items())
    return Section("mcq · budgeted estimate", tables=tables, notes=(NOTE,)) if tables else None
