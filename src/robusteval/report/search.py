"""A budgeted best/worst search (mcq ``--search best-worst``, ``score GRID --search``), in the
terminal and in the report: per family, the variant found best and the one found worst (names, and
their strings where the family has them), each one's accuracy on the items it was asked, the spread
between them with its interval, and the calls used; after ``score GRID --search``, the full grid's
own best and worst beside."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from robusteval.report.model import Run, Section, TableData
from robusteval.report.table import fmt_estimate
from robusteval.report.terminal import Table
from robusteval.results.search import FoundVariant, SearchResult

NOTE = ("--search best-worst: each accuracy is of the items the search asked of that variant (n), with a 95% "
        "Wilson interval; the spread is best minus worst with Newcombe's interval. Being the highest and lowest "
        "found, both lean outward (a search's winner's curse): the same command without --search asks every "
        "cell and gives the full grid's numbers.")
COLUMNS = ("", "variant", "accuracy [95% CI]", "n", "text")


def _title(model: str, family: str, r: SearchResult) -> str:
    return (f"{model} · {family} · search for the best and worst ({r.method}): {r.calls} of {r.cells} cells "
            f"({r.calls / max(r.cells, 1):.1%}; asked for {r.share:g})")


def shared_lines(texts: list[str]) -> int:
    """How many leading lines every text shares (an instruction all variants begin with): shown once
    in each row, it would fill the column and hide where the variants differ."""
    split = [t.split("\n") for t in texts]
    count = 0
    while split and all(len(lines) > count + 1 for lines in split) and len({lines[count] for lines in split}) == 1:
        count += 1
    return count


def _row(role: str, v: FoundVariant, skip: int) -> tuple[str, ...]:
    text = "⏎".join((v.text or "").split("\n")[skip:])
    text = ("…⏎" if skip else "") + text
    return role, v.name, fmt_estimate(v.accuracy), str(v.accuracy.n), text[:80] + ("…" if len(text) > 80 else "")


def rows(r: SearchResult, truth: SearchResult | None) -> list[tuple[str, ...]]:
    shown = [r.best, r.worst] + ([truth.best, truth.worst] if truth is not None else [])
    texts = [v.text for v in shown if v.text]
    skip = shared_lines(texts) if len(texts) == len(shown) else 0
    out = [_row("best", r.best, skip), _row("worst", r.worst, skip), ("spread", "", fmt_estimate(r.spread), "", "")]
    if truth is not None:
        out += [_row("full grid's best", truth.best, skip), _row("full grid's worst", truth.worst, skip),
                ("full grid's spread", "", fmt_estimate(truth.spread), "", "")]
        found = [truth.accuracies.get(v.name) for v in (r.best, r.worst)]
        if None not in found and truth.spread.value:
            gap = float(found[0]) - float(found[1])  # type: ignore[arg-type]
            out.append(("found on the full grid", f"{r.best.name} - {r.worst.name}", f"{gap:.3f}", "",
                        f"{gap / truth.spread.value:.0%} of the full grid's spread"))
    return out


def print_search(console: Console, model: str, results: dict[str, SearchResult],
                 truths: dict[str, SearchResult] | None = None) -> None:
    for family, r in results.items():
        table = Table(title=Text(_title(model, family, r)), title_justify="left")
        for column in COLUMNS:
            table.add_column(column)
        for cells in rows(r, (truths or {}).get(family)):
            table.add_row(*(Text(c) for c in cells))
        console.print(table)
    if results:
        console.print(Text(NOTE, style="dim"))


def search_section(run: Run) -> Section | None:
    """The report's section for a searched run (None otherwise)."""
    truths = run.extra.search_truth or {}
    tables = [TableData(_title(model, family, r), COLUMNS, tuple(rows(r, truths.get(model, {}).get(family))))
              for model, families in (run.extra.search or {}).items() for family, r in families.items()]
    return Section("mcq · best and worst variant (search)", tables=tuple(tables), notes=(NOTE,)) if tables else None
