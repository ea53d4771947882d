"""The sensitivity tables every suite's section shares: every measure (rows) per family, node
grouping or variation (columns), and each variant against the reference (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Mapping

from robusteval.report.model import TableData
from robusteval.report.table import fmt_estimate
from robusteval.results.sensitivity import MEASURES, Sensitivity

NOTE = ("Sensitivity measures (docs/metrics.md gives each one's paper and formula): every interval is 95% and "
        "clustered by item; flip and drop rates are against the reference named in the column head; n/a where "
        "the run does not allow a measure (POSIX needs --scoring loglik; flip and drop rates a reference).")


def measures_table(title: str, groups: Mapping[str, Sensitivity | None]) -> TableData | None:
    """Every measure per group, "value [95% CI]"; None when no group has any."""
    shown = {name: s for name, s in groups.items() if s is not None}
    if not shown:
        return None
    columns = ("measure", *(f"{name} (vs {s.reference or 'no reference'})" for name, s in shown.items()))
    rows = tuple((label, *(fmt_estimate(getattr(s, field)) for s in shown.values())) for field, label in MEASURES)
    return TableData(title, columns, rows)


def variants_table(title: str, s: Sensitivity | None) -> TableData | None:
    """Each variant's accuracy, performance drop rate and flip rate against the reference."""
    if s is None or not s.per_variant:
        return None
    rows = tuple((name, fmt_estimate(v.accuracy), fmt_estimate(v.drop_rate), fmt_estimate(v.flip_rate))
                 for name, v in s.per_variant.items())
    return TableData(f"{title} (reference: {s.reference or 'none'})",
                     ("variant", "accuracy", "drop rate (PDR)", "flip rate"), rows)
