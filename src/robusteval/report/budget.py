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
from robusteval.results.budget import BudgetEstimate

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
# An interval is printed only where benchmarks/budget.py found such intervals holding the truth in at
# least 90% of 20 repeats (docs/performance.md). Per-variant accuracies held 0.88-0.99 on every grid
# and budget measured (0.88: noise, about 0.90 over seeds of the draws), from 2 asked cells per
# variant (the real 109 x 10 grid at 2%) up. The quantiles and spread of 100 variants held 0.90-1.00
# from 27 cells each (the narrow MMLU shape at 5%) up, but the 95% quantile's only 0.85 from 11 (at
# 2%; 0.85-0.87 over 8 seeds of the draws); of 10 variants they held 0.85-1.00 on the synthetic grids
# but 0.65-0.85 (some quantile, at every budget from 2 to 75 cells per variant) on the real
# 10-template grids the Rasch model fits worse, so never below MANY_VARIANTS.
VARIANT_CELLS = 2  # per-variant intervals: every variant needs this many asked cells
MANY_VARIANTS = 50  # quantiles and spread: this many variants ...
FEW_CELLS = 20  # ... each with this many asked cells
UNCHECKED = "(intervals marked † not shown: fewer than 90% of such intervals held the truth in benchmarks/budget.py)"


def trusted(estimate: BudgetEstimate) -> tuple[bool, bool]:
    """Whether this estimate's intervals are of a kind the benchmark showed to hold the truth in at
    least 90% of repeats: (the per-variant accuracies', the quantiles' and spread's)."""
    counts = list(estimate.asked_per_variant.values())
    if not counts or estimate.asked >= estimate.cells:
        return True, True  # an older run (nothing to judge by), or the full grid (nothing estimated)
    return min(counts) >= VARIANT_CELLS, len(counts) >= MANY_VARIANTS and min(counts) >= FEW_CELLS


def trust_line(estimate: BudgetEstimate) -> str:
    """How far the figures rest on the model, and which rule left an interval out: the words say
    the thresholds `trusted` applies to this estimate."""
    counts = list(estimate.asked_per_variant.values())
    if not counts:
        return ""
    line = f"asked cells per variant: {min(counts)}-{max(counts)}"
    per_variant, summary = trusted(estimate)
    if not per_variant:
        thin = sum(c < VARIANT_CELLS for c in counts)
        line += f"; {thin} of {len(counts)} variants have fewer than {VARIANT_CELLS}"
    if not summary:
        line += (f"; quantiles and spread need {MANY_VARIANTS} or more variants"
                 if len(counts) < MANY_VARIANTS else
                 f"; {sum(c < FEW_CELLS for c in counts)} of {len(counts)} variants have fewer than {FEW_CELLS}, "
                 "which the quantiles and spread need")
    return line + ("" if per_variant and summary else f" {UNCHECKED}")


def covariates_line(estimate: BudgetEstimate) -> str:
    """What the estimate was told of the variants before asking (``--budget-covariates``): each kind
    asked and its columns, a kind that had nothing to say of this family said so; "" for an older run."""
    if not estimate.covariates:
        return ""
    kinds = ", ".join(f"{kind} ({n} column{'s' * (n != 1)})" if n else f"{kind} (nothing for this family)"
                      for kind, n in estimate.covariates.items())
    return f"covariates: {kinds}"


def _notes(estimate: BudgetEstimate) -> list[str]:
    """The lines under a budget table: how far its figures rest on the model, what it was told."""
    return [line for line in (trust_line(estimate), covariates_line(estimate)) if line]


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
        for line in _notes(e):
            console.print(Text(line))
    if estimates:
        console.print(Text(SCORE_NOTE if truths else NOTE, style="dim"))


def budget_section(run: Run) -> Section | None:
    """The report's section for a budgeted run (None for a full run)."""
    truths = run.extra.budget_truth or {}
    tables = []
    notes = [SCORE_NOTE if truths else NOTE]
    for model, families in (run.extra.budget or {}).items():
        for family, e in families.items():
            truth = truths.get(model, {}).get(family)
            tables.append(TableData(_title(model, family, e), _columns(truth is not None), tuple(rows(e, truth))))
            notes += [f"{model} · {family}: {line}" for line in _notes(e)]
    return Section("mcq · budgeted estimate", tables=tuple(tables), notes=tuple(notes)) if tables else None
