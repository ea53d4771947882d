"""A budgeted estimate of the full grid (mcq ``--budget``, ``score GRID --budget``), in the terminal
and in the report: per family, each variant's estimated accuracy with how many of its cells were
asked, the quantiles of the variants' accuracies and the spread, each with its interval where
benchmarks/budget.py showed such intervals to hold the truth, and, after ``score GRID --budget``,
the full grid's own value beside each."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from robusteval.estimate import Estimate
from robusteval.report.model import Run, Section, TableData
from robusteval.report.table import fmt_estimate
from robusteval.report.terminal import Table
from robusteval.results.budget import BudgetEstimate, read_budget

NOTE = ("--budget: only the cells counted as asked were asked; the rest are predicted by a Rasch model "
        "(logit = item + variant) whose items' and variants' spreads are fitted to them (empirical Bayes), and "
        "each figure is its posterior median with the central 95% of its posterior draws, which complete the "
        "unasked cells with answers. The same command without --budget asks the remaining cells (the asked ones "
        "are cached) and gives the full grid's numbers. The family metrics and sensitivity measures elsewhere in "
        "a budgeted run are of the asked cells only: a question asked under one variant is its own worst and "
        "best case, so the per-question measures (worst-case accuracy, consistency, flips) understate "
        "sensitivity there.")
SCORE_NOTE = ("score --budget: the estimate is what `run mcq --budget` with the same share and seed would have "
              "reported, from the cells it would have asked of this grid (a Rasch model with empirical-Bayes "
              "spreads; posterior medians and the central 95% of the posterior draws); 'full grid' is the grid's own "
              "value. The family metrics above are of the whole grid.")
# Where benchmarks/budget.py found intervals holding the truth in fewer than 90% of 20 repeats
# (docs/performance.md), they are not printed. Per-variant accuracies: 10 variants x 20 asked cells
# held 0.78-0.79, x 50 cells of a grid the Rasch model cannot express 0.80, from 100 cells 0.90-0.94.
# Quantiles and spread of 10 variants: 0.70-0.95 at 2%, 0.80 at 5% of that grid, so never below
# MANY_VARIANTS. With many variants the fitted spread of the variants carries the few cells of each
# from FEW_CELLS on (100 variants x 27 cells: 0.90-1.00 for every figure; x 11 cells the median's
# interval held 0.85).
THIN_CELLS = 100  # a variant with fewer asked cells leans on the model
MANY_VARIANTS = 50
FEW_CELLS = 25  # ... with many variants, each needs this many
UNCHECKED = "(intervals marked † not shown: fewer than 90% of such intervals held the truth in benchmarks/budget.py)"


def trusted(estimate: BudgetEstimate) -> tuple[bool, bool]:
    """Whether this estimate's intervals are of a kind the benchmark showed to hold the truth in at
    least 90% of repeats: (the per-variant accuracies', the quantiles' and spread's)."""
    counts = list(estimate.asked_per_variant.values())
    if not counts or estimate.asked >= estimate.cells:
        return True, True  # an older run (nothing to judge by), or the full grid (nothing estimated)
    many = len(counts) >= MANY_VARIANTS and min(counts) >= FEW_CELLS
    return many or min(counts) >= THIN_CELLS, many


def trust_line(estimate: BudgetEstimate) -> str:
    """How far the figures rest on the model: the variants with few asked cells."""
    counts = list(estimate.asked_per_variant.values())
    if not counts:
        return ""
    thin = sum(c < THIN_CELLS for c in counts)
    return (f"asked cells per variant: {min(counts)}-{max(counts)}; {thin} of {len(counts)} variants have fewer "
            f"than {THIN_CELLS}" + ("" if all(trusted(estimate)) else f" {UNCHECKED}"))


def _shown(e: Estimate, ok: bool) -> str:
    return fmt_estimate(e) if ok else f"{fmt_estimate(Estimate(e.value))} †"


def rows(estimate: BudgetEstimate, truth: BudgetEstimate | None = None) -> list[tuple[str, ...]]:
    """(what, value [95% interval], asked cells[, full grid]) rows: the variants, then the quantiles
    and the spread. An interval the benchmark does not back is left out and marked †."""
    per_variant, summary = trusted(estimate)

    def row(what: str, e: Estimate, ok: bool, asked: str, true: Estimate | None) -> tuple[str, ...]:
        return (what, _shown(e, ok), asked) + ((fmt_estimate(true),) if truth is not None else ())

    out = [row(name, e, per_variant, str(estimate.asked_per_variant.get(name, "")),
               truth.variants.get(name) if truth else None) for name, e in estimate.variants.items()]
    out += [row(f"{q} quantile of variant accuracies", e, summary, "", truth.quantiles.get(q) if truth else None)
            for q, e in estimate.quantiles.items()]
    out.append(row("spread (max-min accuracy)", estimate.spread, summary, "", truth.spread if truth else None))
    return out


def _columns(truth: bool) -> tuple[str, ...]:
    head = ("variant / statistic", "estimated accuracy [95% interval]", "asked cells")
    return head + (("full grid",) if truth else ())


def _title(model: str, family: str, e: BudgetEstimate) -> str:
    return f"{model} · {family} · estimate of the full grid from {e.asked} of {e.cells} cells (--budget {e.budget:g})"


def print_budget(console: Console, model: str, estimates: dict[str, BudgetEstimate],
                 truths: dict[str, BudgetEstimate] | None = None) -> None:
    for family, e in estimates.items():
        truth = (truths or {}).get(family)
        table = Table(title=Text(_title(model, family, e)), title_justify="left")
        for column in _columns(truth is not None):
            table.add_column(column)
        for cells in rows(e, truth):
            table.add_row(*(Text(c) for c in cells))
        console.print(table)
        if line := trust_line(e):
            console.print(Text(line))
    if estimates:
        console.print(Text(SCORE_NOTE if truths else NOTE, style="dim"))


def budget_section(run: Run) -> Section | None:
    """The report's section for a budgeted run (None for a full run)."""
    truths = read_budget(run.results, "budget_truth")
    tables = []
    notes = [SCORE_NOTE if truths else NOTE]
    for model, families in read_budget(run.results).items():
        for family, e in families.items():
            truth = truths.get(model, {}).get(family)
            tables.append(TableData(_title(model, family, e), _columns(truth is not None), tuple(rows(e, truth))))
            if line := trust_line(e):
                notes.append(f"{model} · {family}: {line}")
    return Section("mcq · budgeted estimate", tables=tuple(tables), notes=tuple(notes)) if tables else None
