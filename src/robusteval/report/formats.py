"""The rows a researcher reproducing FormatSpread or CircularEval looks for, for the terminal and the
HTML/Markdown report alike (`TableData`):

- `formats` family: every format's accuracy, best first, with its layout; the best and the worst
  format shown on an example question; the spread (best minus worst) with its interval;
- `circular` family: CircularEval's accuracy (every rotation right) and "at least j of n" beside
  the accuracy under each rotation.
"""

from __future__ import annotations

from rich.console import Console

from robusteval.report.model import TableData
from robusteval.report.table import fmt_estimate
from robusteval.report.terminal import print_table_data
from robusteval.results.mcq import FamilyMetrics, FormatInfo


def _is_formats(family: str) -> bool:
    return family == "formats" or family.startswith("formats:")


def ranked(fm: FamilyMetrics) -> list[str]:
    """The variants best first (by accuracy; those without one last, in their order)."""
    known = [n for n, v in fm.variants.items() if v.accuracy.value is not None]
    unknown = [n for n in fm.variants if n not in known]
    return sorted(known, key=lambda n: -(fm.variants[n].accuracy.value or 0.0)) + unknown


def formats_tables(model: str, family: str, fm: FamilyMetrics, infos: dict[str, FormatInfo]) -> list[TableData]:
    """Each format's accuracy, best first, with its layout; then the best and worst shown, and the spread."""
    order = ranked(fm)
    rows = tuple((str(rank), name, fmt_estimate(fm.variants[name].accuracy),
                  repr(infos[name].layout) if name in infos else "")
                 for rank, name in enumerate(order, 1))
    out = [TableData(f"{model} · {family}: accuracy per format, best first (95% CI)",
                     ("#", "format", "accuracy", "layout"), rows)]
    if len(order) >= 2 and order[0] in infos and order[-1] in infos:
        best, worst = order[0], order[-1]
        out.append(TableData(
            f"{model} · {family}: best and worst format, on an example question; spread {fmt_estimate(fm.spread)}",
            ("", "format", "accuracy", "as shown"),
            (("best", best, fmt_estimate(fm.variants[best].accuracy), infos[best].example),
             ("worst", worst, fmt_estimate(fm.variants[worst].accuracy), infos[worst].example),
             ("spread (best - worst)", "", fmt_estimate(fm.spread), ""))))
    return out


def circular_table(model: str, family: str, fm: FamilyMetrics) -> TableData | None:
    """CircularEval's figures beside the accuracy under each rotation (None for another family)."""
    c = fm.circular
    if c is None:
        return None
    rows = [("circular accuracy (every rotation right)", fmt_estimate(c.accuracy), str(c.questions))]
    rows += [(f"at least {j.replace('/', ' of ')} rotations right", fmt_estimate(e), str(e.n))
             for j, e in c.at_least.items()]
    rows += [(f"accuracy under {name}", fmt_estimate(v.accuracy), str(v.answered)) for name, v in fm.variants.items()]
    rows.append(("accuracy over all rotations", fmt_estimate(fm.accuracy), ""))
    title = f"{model} · {family}: CircularEval (95% CI)"
    if c.incomplete:
        title += f"; {c.incomplete} questions with a failed rotation left out"
    return TableData(title, ("measure", "value", "questions"), tuple(rows))


def design_tables(model: str, families: dict[str, FamilyMetrics], infos: dict[str, FormatInfo]) -> list[TableData]:
    """The formats' and circular families' tables of one model, in the families' order."""
    out: list[TableData] = []
    for family, fm in families.items():
        if _is_formats(family):
            out += formats_tables(model, family, fm, infos)
        elif (table := circular_table(model, family, fm)) is not None:
            out.append(table)
    return out


def print_design_tables(console: Console, model: str, families: dict[str, FamilyMetrics],
                        infos: dict[str, FormatInfo]) -> None:
    """`design_tables` in the terminal."""
    for data in design_tables(model, families, infos):
        print_table_data(console, data)
