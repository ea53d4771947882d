"""The terminal summary of an mcq run: one table per model and family."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text


def fmt_estimate(est: dict | None, digits: int = 3) -> str:
    """An `Estimate.as_dict()` as "value [low, high]" (or "n/a")."""
    if not est or est.get("value") is None:
        return "n/a"
    if est.get("ci_low") is None:
        return f"{est['value']:.{digits}f}"
    return f"{est['value']:.{digits}f} [{est['ci_low']:.{digits}f}, {est['ci_high']:.{digits}f}]"


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
