"""The terminal summary of a tree run: accuracy by tree level per mode, the RAG failure stages,
and what building and answering cost (model requests and local-model time)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from robusteval.estimate import Estimate
from robusteval.report.table import fmt_estimate, print_sensitivity
from robusteval.report.terminal import Table
from robusteval.results.codec import encode
from robusteval.results.tree import STAGES, TreeExtra, TreeMetrics


def _est(e: Estimate | None, *, ci: bool = True) -> str:
    if e is None:
        return "n/a"
    data = encode(e)
    return fmt_estimate(data if ci else {"value": data["value"]})


def print_tree(console: Console, metrics: TreeMetrics, extra: TreeExtra) -> None:
    """Tables for every model of ``metrics``; ``extra``: the run's tree shapes, trees and cost."""
    shapes = extra.tree_shapes
    trees_info = extra.trees
    console.print(Text(f"trees: {shapes.get('trees')} ({shapes.get('evaluated')} of {shapes.get('nodes')} nodes "
                       f"evaluable; full tree = {trees_info.get('full_tree_nodes')} nodes)"))
    for model, m in metrics.items():
        levels = sorted({lv for mm in m.modes.values() for lv in mm.levels}, key=int)
        table = Table(title=Text(f"{model}: accuracy by tree level [95% CI]"), title_justify="left")
        for col in ("mode", "all", *[f"level {lv}" for lv in levels], "paraphrase", "lexical", "F1", "ROUGE-L"):
            table.add_column(col)
        for mode, mm in m.modes.items():
            level_cells = [_est(mm.by_level[lv].accuracy if lv in mm.by_level else None) for lv in levels]
            kind = {k: _est(mm.by_kind[k].accuracy if k in mm.by_kind else None) for k in ("paraphrase", "lexical")}
            table.add_row(Text(mode), _est(mm.accuracy), *level_cells, kind["paraphrase"], kind["lexical"],
                          _est(mm.f1, ci=False), _est(mm.rougeL, ci=False))
        console.print(table)
        print_sensitivity(console, f"{model}: sensitivity per mode, node kinds and levels against the root (95% CI)",
                          {f"{mode} · {grouping}": s for mode, mm in m.modes.items()
                           for grouping, s in (("kinds", mm.sensitivity_by_kind), ("levels", mm.sensitivity_by_level))})
        rag = {mode: mm for mode, mm in m.modes.items() if mm.failure_stages is not None}
        if rag:
            stages = Table(title=Text(f"{model}: RAG failure stage (share of answers)"), title_justify="left")
            for col in ("mode", *STAGES, "context recall@k"):
                stages.add_column(col)
            for mode, mm in rag.items():
                fs = mm.failure_stages or {}
                cells = [f"{fs[s].count} ({fs[s].share:.0%})" if s in fs and fs[s].share is not None else "-"
                         for s in STAGES]
                stages.add_row(Text(mode), *cells, _est(mm.context_recall, ci=False))
            console.print(stages)
    cost = extra.costs
    if cost.get("build"):
        b = cost["build"]
        console.print(Text(f"build: {b['total']['requests']:.0f} requests, {b['total']['tokens']:.0f} tokens, "
                           f"{b['wall_s']} s{_local(b)}; per tree {b['mean_per_tree']['tokens']:.0f} tokens; "
                           f"full dataset ({b['extrapolated_to_dataset']['questions']}): "
                           f"~{b['extrapolated_to_dataset']['tokens']} tokens"))
    for model, e in (cost.get("evaluate") or {}).items():
        console.print(Text(f"evaluate {model}: {e['total']['requests']:.0f} requests, "
                           f"{e['total']['tokens']:.0f} tokens, {e['wall_s']} s{_local(e)}; "
                           f"full dataset ({e['extrapolated_to_dataset']['questions']}): "
                           f"~{e['extrapolated_to_dataset']['tokens']} tokens"))


def _local(cost: dict[str, Any]) -> str:
    """" (local models: embedding 1.20 s, ner 0.31 s)" where the summary has them."""
    spent = cost.get("local_models") or {}
    if not spent:
        return ""
    return " (local models: " + ", ".join(f"{kind} {s['seconds']:.2f} s" for kind, s in spent.items()) + ")"
