"""The terminal summary of an mcq run: one table per model and family, and the perturbed copies' counts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from robusteval.report.terminal import Table
from robusteval.results.mcq import read_as_line

if TYPE_CHECKING:  # annotations only: printing needs no statistics library
    from robusteval.estimate import Estimate
    from robusteval.results.mcq import CopyCounts, FamilyMetrics, InvalidReplies, VarianceShares
    from robusteval.results.sensitivity import Sensitivity


def fmt_estimate(est: Estimate | Mapping[str, Any] | Sequence[Any] | float | None, digits: int = 3) -> str:
    """A value with its interval as text: "value [low, high]", "value" without an interval, "n/a"
    without a value. The one copy of this formatting (terminal tables, report sections, compare):
    ``est`` is an `Estimate`, its JSON form (``{value, ci_low, ci_high}``), a ``(value, low, high)``
    tuple, or a bare number."""
    if est is None or isinstance(est, (int, float)):
        value, low, high = est, None, None
    elif hasattr(est, "low") and hasattr(est, "high"):  # an Estimate (not imported: see above)
        value, low, high = est.value, est.low, est.high  # type: ignore[union-attr]
    elif isinstance(est, Mapping):
        value, low, high = est.get("value"), est.get("ci_low"), est.get("ci_high")
    else:
        value, low, high = (*est, None, None)[:3]
    if value is None:
        return "n/a"
    if low is None or high is None:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def fmt_shares(shares: VarianceShares | None) -> str:
    """Variance shares as "variants / items / interaction" (two decimals each)."""
    return "n/a" if shares is None else f"{shares.variants:.2f} / {shares.items:.2f} / {shares.interaction:.2f}"


VALID_ONLY = "all, valid replies only"
POPULATION = "population mean, items × variants"  # metrics/two_way.py
SHARES = "variance: variant/item/interaction"


def print_mcq(console: Console, model: str, metrics: dict[str, FamilyMetrics]) -> None:
    """One table per family (accuracy per variant, consistency, spread) and its position bias."""
    for family, fm in metrics.items():
        table = Table(title=Text(f"{model} · {family}"), title_justify="left")
        macro = fm.macro_accuracy is not None  # items in two or more categories
        table.add_column("variant")
        table.add_column("accuracy (micro) [95% CI]")
        if macro:
            table.add_column("macro over categories [95% CI]")
        table.add_column("answered", justify="right")
        table.add_column("invalid", justify="right")
        table.add_column("failed", justify="right")
        against = fm.sensitivity is not None and fm.sensitivity.reference is not None
        if against:  # each variant against the unperturbed one
            table.add_column("drop rate (PDR) [95% CI]")
            table.add_column("flip rate [95% CI]")
        pad = [""] if macro else []
        tail = ["", ""] if against else []
        for name, v in fm.variants.items():
            cells = [fmt_estimate(v.accuracy), *([fmt_estimate(v.macro_accuracy)] if macro else [])]
            if against:
                vs = fm.sensitivity.per_variant.get(name)  # type: ignore[union-attr]
                tail_v = [fmt_estimate(vs.drop_rate), fmt_estimate(vs.flip_rate)] if vs else ["n/a", "n/a"]
            else:
                tail_v = []
            table.add_row(Text(name), *cells, str(v.answered), str(v.invalid), str(v.failed), *tail_v)
        table.add_section()
        table.add_row(Text("all", style="bold"), fmt_estimate(fm.accuracy),
                      *([fmt_estimate(fm.macro_accuracy)] if macro else []),
                      "", str(fm.invalid), str(fm.failed), *tail)
        if fm.accuracy_valid is not None:  # beside the as-scored figure, where invalid replies count wrong
            table.add_row(Text(VALID_ONLY, style="bold"), fmt_estimate(fm.accuracy_valid), *pad, "", "", "", *tail)
        if (pop := fm.population) is not None:  # variants sampled from a population: items and variants together
            table.add_row(Text(POPULATION, style="bold"), fmt_estimate((pop.value, pop.low, pop.high)), *pad,
                          "", "", "", *tail)
            if pop.variance_shares is not None:
                table.add_row(Text(SHARES, style="bold"), fmt_shares(pop.variance_shares), *pad, "", "", "", *tail)
        for label, est in (("consistency rate (per question)", fm.consistency_rate),
                           ("consistency rate (pooled pairs)", fm.consistency_rate_pooled),
                           ("spread (max-min accuracy)", fm.spread),
                           ("std of variant accuracies", fm.std_across_variants)):
            table.add_row(Text(label, style="bold"), fmt_estimate(est), *pad, "", "", "", *tail)
        console.print(table)
        if read_as := read_as_line(f"{model} · {family}", fm.read_as):  # the reading rule beside its figures
            console.print(Text(read_as))
        bias = Table(title=Text(f"{model} · {family} · position bias"), title_justify="left")
        bias.add_column("position")
        bias.add_column("chosen [95% CI]")
        bias.add_column("correct", justify="right")
        for position, b in fm.position_bias.items():
            correct = "n/a" if b.correct is None else f"{b.correct:.3f}"
            bias.add_row(position, fmt_estimate(b.chosen), correct)
        if fm.position_bias:  # open-answer math has no positions
            console.print(bias)
        print_categories(console, f"{model} · {family} · accuracy per category", fm)
    print_sensitivity(console, f"{model} · sensitivity per family (95% CI)", sensitivity_columns(metrics))


def sensitivity_columns(metrics: Mapping[str, FamilyMetrics]) -> dict[str, Sensitivity | None]:
    """Each family's sensitivity as scored and, where some replies were invalid, beside it over
    valid replies only (a question's invalid variants left out): how much is format failure."""
    out: dict[str, Sensitivity | None] = {}
    for family, fm in metrics.items():
        if fm.sensitivity_valid is None:
            out[family] = fm.sensitivity
            continue
        out[f"{family} (as scored)"] = fm.sensitivity
        out[f"{family} (valid replies only)"] = fm.sensitivity_valid
    return out


def print_invalid_warning(console: Console, model: str, counts: InvalidReplies, reader: str | None) -> None:
    """The warning of a model whose replies are more than `WARN_INVALID` invalid, with examples."""
    warning = counts.warning(model, reader)
    if warning is None:
        return
    console.print(Text(f"warning: {warning}", style="bold yellow"))
    for n, example in enumerate(counts.examples, 1):
        console.print(Text(f"  invalid reply {n}: {example!r}", style="yellow"))


CATEGORY_COLUMNS = ("category", "accuracy [95% CI]", "questions", "right", "wrong", "unreadable")


def category_rows(fm: FamilyMetrics) -> tuple[tuple[str, ...], ...]:
    """One row per category: accuracy, questions, and replies right, wrong (readable) and unreadable."""
    return tuple((name, fmt_estimate(c.accuracy), str(c.items), _count(c.correct), _count(c.wrong), str(c.invalid))
                 for name, c in (fm.categories or {}).items())


def _count(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def print_categories(console: Console, title: str, fm: FamilyMetrics) -> None:
    """Accuracy per category with its interval, and the replies right, wrong and unreadable behind it."""
    if not fm.categories:
        return
    table = Table(title=Text(title), title_justify="left")
    for column in CATEGORY_COLUMNS:
        table.add_column(column, justify="left" if column in CATEGORY_COLUMNS[:2] else "right")
    for row in category_rows(fm):
        table.add_row(Text(row[0]), *row[1:])
    console.print(table)


def print_sensitivity(console: Console, title: str, groups: Mapping[str, Sensitivity | None]) -> None:
    """One compact table of every sensitivity measure (rows) per family or grouping (columns), each
    "value [95% CI]"; the reference each was measured against heads its column."""
    shown = {name: s for name, s in groups.items() if s is not None}
    if not shown:
        return
    from robusteval.results.sensitivity import MEASURES

    table = Table(title=Text(title), title_justify="left")
    table.add_column("measure")
    for name, s in shown.items():
        table.add_column(Text(f"{name}\nvs {s.reference or 'no reference'}"))
    for field_name, label in MEASURES:
        cells = [fmt_estimate(getattr(s, field_name)) for s in shown.values()]
        if all(c == "n/a" for c in cells):
            continue  # e.g. POSIX without log-likelihood scoring: say it once, below
        table.add_row(label, *cells)
    console.print(table)
    missing = [label for field_name, label in MEASURES if all(getattr(s, field_name).value is None
                                                               for s in shown.values())]
    if missing:
        console.print(Text(f"n/a here: {', '.join(missing)} (docs/metrics.md says what each needs)", style="dim"))


def print_copy_counts(console: Console, counts: list[CopyCounts]) -> None:
    """What became of the perturbed copies of the questions (mcq ``--families typo,paraphrase``)."""
    if not counts:
        return
    table = Table(title="perturbed copies of the questions", title_justify="left")
    for column in ("family", "asked", "kept", "refused by checks", "failed", "why refused (attempts)"):
        table.add_column(column, justify="left" if column in ("family", "why refused (attempts)") else "right")
    for c in counts:
        why = ", ".join(f"{reason} {n}" for reason, n in sorted(c.reasons.items()))
        kept = f"{c.kept} (estimated)" if c.estimated else str(c.kept)
        table.add_row(Text(c.family), str(c.asked), kept, str(c.rejected), str(c.failed), Text(why))
    console.print(table)


def estimates(node: object, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """(path, estimate) for every ``{"value", "ci_low", ...}`` leaf of a metrics tree (results.json's
    form): what a suite with no tables of its own shows (`print_estimates`, the generic report section)."""
    if isinstance(node, Mapping):
        if "value" in node and ("ci_low" in node or "n" in node):
            yield path, node
            return
        for key, child in node.items():
            yield from estimates(child, (*path, str(key)))


def print_estimates(console: Console, suite: str, metrics: object) -> None:
    """The default terminal table of a suite without a ``print_summary``: every estimate in its metrics."""
    table = Table(title=f"{suite} metrics")
    table.add_column("metric")
    table.add_column("value [95% CI]", justify="right")
    for path, est in estimates(metrics):
        table.add_row(" / ".join(path), fmt_estimate(est))
    console.print(table)
