"""The terminal tables of a `consistency` run, read from its typed metrics record."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from robusteval.report.model import rating_text
from robusteval.report.table import fmt_estimate as _fmt  # the one copy
from robusteval.report.terminal import Table
from robusteval.results.consistency import ConsistencyExtra, ConsistencyMetrics, Generation


def print_consistency(console: Console, metrics: ConsistencyMetrics, extra: ConsistencyExtra,
                      determinism: dict[str, dict[str, Any]] | None = None) -> None:
    """Per judge, the items × models table with sums and means; judge agreement; generated sets;
    ``determinism``: the backend's noise per model, where the run measured it."""
    if metrics.generation is not None:
        print_generation(console, metrics.generation)
    for judge, jm in metrics.judges.items():
        models = list(jm.models)
        table = Table(title=f"consistency · {judge} judge · similarity of answers across variants (0-5)",
                      title_justify="left")
        table.add_column("item")
        for m in models:
            table.add_column(Text(m), justify="right")
        table.add_column("item mean", justify="right")
        for item_id, row in jm.table.items():
            table.add_row(Text(item_id), *[rating_text(row[m]) for m in models], rating_text(jm.item_mean[item_id]))
        table.add_section()
        table.add_row(Text("sum [95% CI]", style="bold"), *[_fmt(jm.models[m].sum, 2) for m in models], "")
        table.add_row(Text("mean [95% CI]", style="bold"), *[_fmt(jm.models[m].mean, 2) for m in models], "")
        table.add_row("missing ratings", *[str(jm.models[m].missing) for m in models], "")
        if any(jm.models[m].sampling_mean is not None for m in models):
            table.add_row(Text("same-variant samples mean", style="bold"),
                          *[_fmt(jm.models[m].sampling_mean, 2) for m in models], "")
            table.add_row(Text("style effect (variants − samples)", style="bold"),
                          *[_fmt(jm.models[m].style_effect, 2) for m in models], "")
        if any(jm.models[m].sensitivity is not None for m in models):
            shares = [jm.models[m].sensitivity for m in models]
            threshold = next(ss.threshold for ss in shares if ss is not None)
            for label, measure in ((f"share rated >= {threshold:g} [95% CI]", "consistent_share"),
                                   ("spread across variations", "spread"), ("std across variations", "std")):
                table.add_row(Text(label, style="bold"),
                              *[_fmt(getattr(ss, measure), 2) if ss else "n/a" for ss in shares], "")
        if noise := determinism:
            from robusteval.engine.determinism import noise_cell

            table.add_row(Text("backend noise: same request, other reply", style="bold"),
                          *[noise_cell(noise.get(m)) for m in models], "")
        if spent := extra.local_time(judge):
            table.caption = f"{spent[0]:.1f} s in the local {judge} model"
        console.print(table)
    if (agreement := metrics.agreement) is not None:
        console.print(Text(
            f"judge agreement: Krippendorff's alpha (interval) = {_fmt(agreement.krippendorff_alpha_interval, 3)}; "
            "Spearman " + ", ".join(f"{k} = {_fmt(v, 3)}" for k, v in agreement.spearman.items())
            + "; mean |difference| "
            + ", ".join(f"{k} = {_fmt(v, 2)}" for k, v in agreement.mean_abs_difference.items())))


def print_generation(console: Console, generation: Generation) -> None:
    """How many variants each variation gave, and how many were left out (and why)."""
    table = Table(title=f"consistency · prompt sets generated from {generation.prompts} requests "
                        f"({generation.sets} sets kept)" + (" · estimate: rewrites counted, not written"
                                                              if generation.estimated else ""),
                  title_justify="left")
    for column in ("variation", "variants kept", "left out", "why left out"):
        table.add_column(column, justify="left" if column in ("variation", "why left out") else "right")
    for name, count in generation.variations.items():
        reasons = ", ".join(f"{reason} {n}" for reason, n in count.reasons.items())
        table.add_row(Text(name), str(count.kept), str(count.rejected), Text(reasons))
    if generation.dropped_prompts:
        table.caption = "no variant left, no set: " + ", ".join(generation.dropped_prompts[:10])
    console.print(table)
