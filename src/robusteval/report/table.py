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
        table.add_column("variant")
        table.add_column("accuracy [95% CI]")
        table.add_column("answered", justify="right")
        table.add_column("invalid", justify="right")
        table.add_column("failed", justify="right")
        for name, v in fm["variants"].items():
            table.add_row(name, fmt_estimate(v["accuracy"]), str(v["answered"]), str(v["invalid"]), str(v["failed"]))
        table.add_section()
        table.add_row(Text("all (micro)", style="bold"), fmt_estimate(fm["accuracy"]), "", str(fm["invalid"]), str(fm["failed"]))
        if "macro_accuracy" in fm:
            table.add_row(Text("all (macro over categories)", style="bold"), fmt_estimate(fm["macro_accuracy"]), "", "", "")
        table.add_row(Text("consistency rate (per question)", style="bold"), fmt_estimate(fm["consistency_rate"]), "", "", "")
        table.add_row(Text("consistency rate (pooled pairs)", style="bold"), fmt_estimate(fm["consistency_rate_pooled"]), "", "", "")
        table.add_row(Text("spread (max-min accuracy)", style="bold"), fmt_estimate(fm["spread"]), "", "", "")
        table.add_row(Text("std of variant accuracies", style="bold"), fmt_estimate(fm["std_across_variants"]), "", "", "")
        console.print(table)
        bias = Table(title=f"{model} · {family} · position bias", title_justify="left")
        bias.add_column("position")
        bias.add_column("chosen [95% CI]")
        bias.add_column("correct", justify="right")
        for position, b in fm["position_bias"].items():
            correct = "n/a" if b["correct"] is None else f"{b['correct']:.3f}"
            bias.add_row(position, fmt_estimate(b["chosen"]), correct)
        console.print(bias)
