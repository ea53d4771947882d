"""What a report is made of: sections with figures and tables, and headline numbers for leaderboards.

Suites build these from their own results (``report_section`` and ``headlines`` in the suite's
module); `report.render` turns them into HTML and Markdown. Every string in them is plain text
and is escaped when rendered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from robusteval.files import slug
from robusteval.report.table import fmt_estimate
from robusteval.results.records import RunRecord, run_record

__all__ = ["estimate_text", "fmt_estimate", "slug"]  # re-exported: the sections import them from here


@dataclass(frozen=True)
class Figure:
    name: str  # file name stem for the PNG beside the Markdown summary
    title: str
    png: bytes


@dataclass(frozen=True)
class TableData:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Section:
    title: str
    figures: tuple[Figure, ...] = ()
    tables: tuple[TableData, ...] = ()
    notes: tuple[str, ...] = ()
    audit: bool = False  # about the inputs, not the results: shown after them, folded (<details>)


@dataclass(frozen=True)
class Headline:
    """One number a leaderboard ranks models by (higher is better unless said otherwise)."""

    model: str
    metric: str
    value: float | None
    low: float | None = None
    high: float | None = None
    higher_is_better: bool = True
    n: int | float | None = None  # the units behind the value (items, source sentences, personas)


@dataclass
class Run:
    """A finished run as read back from its folder."""

    path: Path
    results: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)  # the explorer's rows: the first items' samples
    missing: tuple[str, ...] = ()  # what the folder lacks (e.g. samples.jsonl), said in the report

    @property
    def suite(self) -> str:
        return str(self.results.get("suite", "?"))

    @property
    def run_id(self) -> str:
        return str(self.results.get("run_id", getattr(self.path, "name", "?")))

    @cached_property
    def record(self) -> RunRecord:
        """results.json as its typed record, decoded once for every section and headline
        (`results.records.run_record`)."""
        return run_record(self.results)

    @property
    def metrics(self) -> Any:
        """The suite's typed metrics record (None where the run holds none: an --estimate, a tree build)."""
        return self.record.metrics or None

    @property
    def extra(self) -> Any:
        """The suite's typed extra record (its `SuiteSpec.extra`; plain JSON for a suite without one)."""
        return self.record.extra


# The one value-with-interval formatter, under the name the report sections use.
estimate_text = fmt_estimate


def headline_from(model: str, metric: str, est: dict[str, Any] | None, higher_is_better: bool = True) -> Headline:
    est = est or {}
    return Headline(model, metric, est.get("value"), est.get("ci_low"), est.get("ci_high"), higher_is_better,
                    est.get("n"))


def rating_text(x: float | None) -> str:
    """A judge's 0-5 rating: two decimals, or "missing" where the judge gave none (never 0)."""
    return "missing" if x is None else f"{x:.2f}"


def number_text(x: float | None) -> str:
    return fmt_estimate(x)
