"""The tree section: accuracy by tree level and node kind per mode (closed-book, RAG per retriever)
with CIs, and the failure stages of the RAG pipeline."""

from __future__ import annotations

import numpy as np

from robusteval.report.model import Figure, Headline, Run, Section, TableData, estimate_text, headline_from, slug
from robusteval.report.plots import bars_with_ci, heatmap


def sections(run: Run) -> list[Section]:
    out = []
    for model, m in run.results.get("metrics", {}).items():
        modes = m.get("modes", {})
        figures, tables = [], []
        for mode, mm in modes.items():
            levels = sorted(mm.get("by_level", {}), key=lambda x: int(x) if str(x).isdigit() else 0)
            if levels:
                figures.append(Figure(f"level-{slug(model)}-{mode}",
                                      f"{model} · {mode}: accuracy by tree level (95% CI)",
                                      bars_with_ci([f"level {lv}" for lv in levels],
                                                   [mm["by_level"][lv].get("accuracy") for lv in levels],
                                                   title=f"{mode}: accuracy by level", ylabel="accuracy")))
        stages = list(dict.fromkeys(s for mm in modes.values() for s in (mm.get("failure_stages") or {})))
        rag = [mode for mode, mm in modes.items() if mm.get("failure_stages")]
        if stages and rag:
            shares = np.array([[modes[mode]["failure_stages"].get(s, {}).get("share", np.nan) for s in stages]
                               for mode in rag], dtype=float)
            figures.append(Figure(f"stages-{slug(model)}",
                                  f"{model}: where each RAG answer went wrong (share of nodes)",
                                  heatmap(shares, rag, stages, title="failure stage", vmin=0, vmax=1,
                                          colorbar="share of nodes")))
        tables.append(TableData(f"{model}: accuracy and overlap per mode", (
            "mode", "accuracy", "token F1", "BLEU", "ROUGE-L", "by kind", "drop root→deepest"), tuple(
            (mode, estimate_text(mm.get("accuracy")), estimate_text(mm.get("f1")), estimate_text(mm.get("bleu")),
             estimate_text(mm.get("rougeL")),
             "; ".join(f"{k}: {estimate_text(v.get('accuracy'))}" for k, v in (mm.get("by_kind") or {}).items()),
             estimate_text(mm.get("drop_root_to_deepest")) if isinstance(mm.get("drop_root_to_deepest"), dict) else
             str(mm.get("drop_root_to_deepest", ""))) for mode, mm in modes.items())))
        out.append(Section(f"tree · {model}", tuple(figures), tuple(tables)))
    return out


def headlines(results: dict) -> list[Headline]:
    return [headline_from(model, f"{mode} accuracy", mm.get("accuracy"))
            for model, m in results.get("metrics", {}).items() for mode, mm in m.get("modes", {}).items()]
