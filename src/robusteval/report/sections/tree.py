"""The tree section: accuracy by tree level and node kind per mode (closed-book, RAG per retriever)
with CIs, and the failure stages of the RAG pipeline; read from the typed record (results/tree.py)."""

from __future__ import annotations

import numpy as np

from robusteval.report.model import Figure, Headline, Run, Section, TableData, slug
from robusteval.report.plots import bars_with_ci, has_value, heatmap
from robusteval.report.sections.sensitivity import NOTE as SENSITIVITY_NOTE, measures_table, variants_table
from robusteval.report.table import fmt_estimate
from robusteval.results.tree import TreeMetrics


def sections(run: Run) -> list[Section]:
    out = []
    metrics: TreeMetrics = run.metrics or {}
    for model, m in metrics.items():
        figures, tables = [], []
        for mode, mm in m.modes.items():
            if has_value([mm.by_level[lv].accuracy.as_dict() for lv in mm.levels]):
                figures.append(Figure(f"level-{slug(model)}-{mode}",
                                      f"{model} · {mode}: accuracy by tree level (95% CI)",
                                      bars_with_ci([f"level {lv}" for lv in mm.levels],
                                                   [mm.by_level[lv].accuracy.as_dict() for lv in mm.levels],
                                                   title=f"{mode}: accuracy by level", ylabel="accuracy")))
        rag = {mode: mm.failure_stages for mode, mm in m.modes.items() if mm.failure_stages}
        stages = list(dict.fromkeys(s for fs in rag.values() for s in fs))
        if stages:
            shares = np.array([[fs[s].share if s in fs and fs[s].share is not None else np.nan for s in stages]
                               for fs in rag.values()], dtype=float)
            figures.append(Figure(f"stages-{slug(model)}",
                                  f"{model}: where each RAG answer went wrong (share of nodes)",
                                  heatmap(shares, list(rag), stages, title="failure stage", vmin=0, vmax=1,
                                          colorbar="share of nodes")))
        tables.append(TableData(f"{model}: accuracy and overlap per mode", (
            "mode", "accuracy", "token F1", "BLEU", "ROUGE-L", "by kind", "drop root→deepest"), tuple(
            (mode, fmt_estimate(mm.accuracy), fmt_estimate(mm.f1), fmt_estimate(mm.bleu), fmt_estimate(mm.rougeL),
             "; ".join(f"{k}: {fmt_estimate(v.accuracy)}" for k, v in mm.by_kind.items()),
             fmt_estimate(mm.drop_root_to_deepest) if mm.drop_root_to_deepest is not None else "")
            for mode, mm in m.modes.items())))
        perturbations = sorted({p for mm in m.modes.values() for p in mm.by_perturbation})
        if perturbations:
            tables.append(TableData(f"{model}: accuracy by perturbation", ("perturbation", *m.modes), tuple(
                (p, *[fmt_estimate(mm.by_perturbation.get(p)) for mm in m.modes.values()]) for p in perturbations)))
        groups = {f"{mode} · {grouping}": s for mode, mm in m.modes.items()
                  for grouping, s in (("kinds", mm.sensitivity_by_kind), ("levels", mm.sensitivity_by_level))}
        sensitivity = [t for t in (measures_table(f"{model}: sensitivity, node kinds and levels against the root "
                                                  "(95% CI)", groups),
                                   *(variants_table(f"{model} · {name}: each group against the root", s)
                                     for name, s in groups.items())) if t is not None]
        out.append(Section(f"tree · {model}", tuple(figures), (*tables, *sensitivity),
                           (SENSITIVITY_NOTE,) if sensitivity else ()))
    return out


def headlines(metrics: TreeMetrics | None) -> list[Headline]:
    return [Headline(model, f"{mode} accuracy", mm.accuracy.value, mm.accuracy.low, mm.accuracy.high, n=mm.accuracy.n)
            for model, m in (metrics or {}).items() for mode, mm in m.modes.items()]
