"""The hallucination run's tables: in the terminal, in summary.md, and the matrix as CSV, all from
the typed record (`HallucinationMetrics`)."""

from __future__ import annotations

import csv
import io

from rich.console import Console
from rich.text import Text

from robusteval.report.table import fmt_estimate as _fmt  # the one copy
from robusteval.report.terminal import Table
from robusteval.results.hallucination import HallucinationMetrics, MatrixCell, one_sided

Rows = list[list[str]]


def summary_tables(metrics: HallucinationMetrics) -> list[tuple[str, list[str], Rows]]:
    """(title, header, rows) of every summary table; the terminal and summary.md show the same."""
    tables: list[tuple[str, list[str], Rows]] = []
    if metrics.generation:
        rows = []
        for generator, g in metrics.generation.items():
            for judge, j in g.judges.items():
                rows.append([generator, _fmt(g.valid), str(g.invalid), str(g.failed), judge,
                             _fmt(j.hyp_plus_faithful), _fmt(j.hyp_minus_hallucinated), str(j.unjudged)])
            if not g.judges:
                rows.append([generator, _fmt(g.valid), str(g.invalid), str(g.failed), "(no judge)", "n/a", "n/a", ""])
        tables.append(("generation", ["generator", "valid output", "invalid", "failed", "judge", "hyp+ faithful",
                                      "hyp- hallucinated", "unjudged"], rows))
    for step, m in metrics.steps().items():
        rows = [[config, _fmt(d.f1), _fmt(d.accuracy), _fmt(d.precision), _fmt(d.recall), str(d.samples),
                 str(d.invalid), str(d.failed), _fmt(d.position_bias.chose_first), _fmt(d.position_bias.gold_first),
                 _fmt(d.order_consistency)]
                for config, d in m.detectors.items()]
        tables.append((step, ["detector", "F1", "accuracy", "precision", "recall", "samples", "invalid", "failed",
                              "chose 1st", "gold 1st", "order consistency"], rows))
        breakdown = [[config, attribute, group, _fmt(g.f1), _fmt(g.accuracy), str(g.samples)]
                     for config, d in m.detectors.items()
                     for attribute, groups in d.breakdowns().items() for group, g in groups.items()]
        tables.append((f"{step} by scenario, language and type",
                       ["detector", "by", "group", "F1", "accuracy", "samples"], breakdown))
        a = m.agreement
        rows = [[pair, _fmt(v.cohen_kappa), _fmt(v.mcc), _fmt(v.agreement), str(v.n)] for pair, v in a.pairwise.items()]
        rows.append([f"all ({len(a.configs)}): Fleiss' kappa", _fmt(a.fleiss_kappa), "", "", str(a.fleiss_n)])
        tables.append((f"{step} agreement", ["detectors", "Cohen's kappa", "MCC", "raw agreement", "pairs"], rows))
        if m.matrix is not None:
            configs = m.matrix_configs()
            rows = [[generator] + [_fmt(row[c].f1) if c in row else "" for c in configs]
                    for generator, row in m.matrix.items()]
            tables.append(("generator x detector (F1)", ["generator \\ detector", *configs], rows))
    return tables


def summary_markdown(metrics: HallucinationMetrics) -> str:
    out = ["# hallucination: summary", ""]
    warnings = [w for step, m in metrics.steps().items() for w in one_sided(step, m)]
    out += [*(f"- **warning**: {w}" for w in warnings), *([""] if warnings else [])]
    for title, header, rows in summary_tables(metrics):
        out += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        out.append("")
    return "\n".join(out)


def matrix_csv(cells: dict[str, dict[str, MatrixCell]]) -> str:
    """generator,detector,f1,f1_low,f1_high,accuracy,samples,invalid: one line per cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["generator", "detector", "f1", "f1_low", "f1_high", "accuracy", "samples", "invalid"])
    for generator, row in cells.items():
        for config, cell in row.items():
            writer.writerow([generator, config, cell.f1.value, cell.f1.low, cell.f1.high, cell.accuracy.value,
                             cell.samples, cell.invalid])
    return buffer.getvalue()


def print_tables(console: Console, metrics: HallucinationMetrics) -> None:
    """The summary tables but the long breakdown (in summary.md and results.json); every cell literal."""
    for title, header, rows in summary_tables(metrics):
        if "by scenario" in title:
            continue
        table = Table(title=Text(title), title_justify="left")
        for column in header:
            table.add_column(Text(column))
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
    for step, m in metrics.steps().items():
        for warning in one_sided(step, m):
            console.print(Text(f"warning: {warning}", style="yellow"))
