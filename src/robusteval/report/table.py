"""The terminal summary of an mcq run: one table per model and family."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from robusteval.metrics.stats import Estimate


def fmt_estimate(est: Estimate | Mapping | Sequence | float | None, digits: int = 3) -> str:
    """A value with its interval as text: "value [low, high]", "value" without an interval, "n/a"
    without a value. The one copy of this formatting (terminal tables, report sections, compare):
    ``est`` is an `Estimate`, its JSON form (``{value, ci_low, ci_high}``), a ``(value, low, high)``
    tuple, or a bare number."""
    if est is None or isinstance(est, (int, float)):
        value, low, high = est, None, None
    elif isinstance(est, Estimate):
        value, low, high = est.value, est.low, est.high
    elif isinstance(est, Mapping):
        value, low, high = est.get("value"), est.get("ci_low"), est.get("ci_high")
    else:
        value, low, high = (*est, None, None)[:3]
    if value is None:
        return "n/a"
    if low is None or high is None:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def print_mcq(console: Console, model: str, metrics: dict) -> None:
    for family, fm in metrics.items():
        table = Table(title=f"{model} · {family}", title_justify="left")
        macro = "macro_accuracy" in fm  # items in two or more categories
        table.add_column("variant")
        table.add_column("accuracy (micro) [95% CI]")
        if macro:
            table.add_column("macro over categories [95% CI]")
        table.add_column("answered", justify="right")
        table.add_column("invalid", justify="right")
        table.add_column("failed", justify="right")
        pad = [""] if macro else []
        for name, v in fm["variants"].items():
            cells = [fmt_estimate(v["accuracy"]), *([fmt_estimate(v.get("macro_accuracy"))] if macro else [])]
            table.add_row(name, *cells, str(v["answered"]), str(v["invalid"]), str(v["failed"]))
        table.add_section()
        table.add_row(Text("all", style="bold"), fmt_estimate(fm["accuracy"]),
                      *([fmt_estimate(fm["macro_accuracy"])] if macro else []), "", str(fm["invalid"]),
                      str(fm["failed"]))
        for label, key in (("consistency rate (per question)", "consistency_rate"),
                           ("consistency rate (pooled pairs)", "consistency_rate_pooled"),
                           ("spread (max-min accuracy)", "spread"),
                           ("std of variant accuracies", "std_across_variants")):
            table.add_row(Text(label, style="bold"), fmt_estimate(fm[key]), *pad, "", "", "")
        console.print(table)
        bias = Table(title=f"{model} · {family} · position bias", title_justify="left")
        bias.add_column("position")
        bias.add_column("chosen [95% CI]")
        bias.add_column("correct", justify="right")
        for position, b in fm["position_bias"].items():
            correct = "n/a" if b["correct"] is None else f"{b['correct']:.3f}"
            bias.add_row(position, fmt_estimate(b["chosen"]), correct)
        console.print(bias)
