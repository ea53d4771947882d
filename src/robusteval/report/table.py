"""The terminal summary of an mcq run: one table per model and family."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _fmt(est: dict | None) -> str:
    if not est or est.get("value") is None:
        return "n/a"
    if est.get("ci_low") is None:
        return f"{est['value']:.3f}"
    return f"{est['value']:.3f} [{est['ci_low']:.3f}, {est['ci_high']:.3f}]"


def print_mcq(console: Console, model: str, metrics: dict) -> None:
    for family, fm in metrics.items():
        table = Table(title=f"{model} · {family}", title_justify="left")
        table.add_column("variant")
        table.add_column("accuracy [95% CI]")
        table.add_column("answered", justify="right")
        table.add_column("invalid", justify="right")
        table.add_column("failed", justify="right")
        for name, v in fm["variants"].items():
            table.add_row(name, _fmt(v["accuracy"]), str(v["answered"]), str(v["invalid"]), str(v["failed"]))
        table.add_section()
        table.add_row("[bold]all (micro)", _fmt(fm["accuracy"]), "", str(fm["invalid"]), str(fm["failed"]))
        if "macro_accuracy" in fm:
            table.add_row("[bold]all (macro over categories)", _fmt(fm["macro_accuracy"]), "", "", "")
        table.add_row("[bold]consistency rate (per question)", _fmt(fm["consistency_rate"]), "", "", "")
        table.add_row("[bold]consistency rate (pooled pairs)", _fmt(fm["consistency_rate_pooled"]), "", "", "")
        table.add_row("[bold]spread (max-min accuracy)", _fmt(fm["spread"]), "", "", "")
        table.add_row("[bold]std of variant accuracies", _fmt(fm["std_across_variants"]), "", "", "")
        console.print(table)
        bias = Table(title=f"{model} · {family} · position bias", title_justify="left")
        bias.add_column("position")
        bias.add_column("chosen [95% CI]")
        bias.add_column("correct", justify="right")
        for position, b in fm["position_bias"].items():
            correct = "n/a" if b["correct"] is None else f"{b['correct']:.3f}"
            bias.add_row(position, _fmt(b["chosen"]), correct)
        console.print(bias)
