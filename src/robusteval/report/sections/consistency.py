"""The consistency section: items × models heatmaps per judge, model means with CIs, judge agreement."""

from __future__ import annotations

import numpy as np

from robusteval.engine.determinism import NOISE_NOTE, noise_cell, summaries
from robusteval.report.model import Figure, Headline, Run, Section, TableData, estimate_text, headline_from
from robusteval.report.plots import bars_with_ci, heatmap


def sections(run: Run) -> list[Section]:
    metrics = run.results.get("metrics", {})
    figures, tables = [], []
    for judge, jm in metrics.get("judges", {}).items():
        items, models = list(jm["table"]), list(jm["models"])
        matrix = np.array([[np.nan if jm["table"][i][m] is None else jm["table"][i][m] for m in models]
                           for i in items], dtype=float).reshape(len(items), len(models))
        if matrix.size:
            figures.append(Figure(f"heatmap-{judge}", f"{judge}: similarity of each model's answers per item (0-5)",
                                  heatmap(matrix, items, models, title=f"{judge} judge", vmin=0, vmax=5, fmt="{:.1f}",
                                          colorbar="0 different .. 5 same content")))
        figures.append(Figure(f"means-{judge}", f"{judge}: mean similarity per model (95% CI over items)",
                              bars_with_ci(models, [jm["models"][m]["mean"] for m in models], ylim=(0, 5),
                                           title=f"{judge}: mean similarity", ylabel="0-5")))
        noise = run.results.get("determinism") or {}
        tables.append(TableData(f"{judge} judge: robustness per model", (
            "model", "sum", "mean", "rated", "missing", "same-variant samples", "style effect",
            *(("backend noise (same request twice)",) if noise else ())), tuple(
            (m, estimate_text(s["sum"], 2), estimate_text(s["mean"], 2), str(s["rated"]), str(s["missing"]),
             estimate_text(s.get("sampling_mean"), 2), estimate_text(s.get("style_effect"), 2),
             *((noise_cell(noise.get(m)),) if noise else ()))
            for m, s in jm["models"].items())))
    notes = []
    if agreement := metrics.get("agreement"):
        alpha = agreement.get("krippendorff_alpha_interval")
        notes.append("Judge agreement: Krippendorff's alpha (interval) = "
                     f"{'n/a' if alpha is None else f'{alpha:.3f}'}; "
                     + "; ".join(f"Spearman {k} = {'n/a' if v is None else f'{v:.3f}'}"
                                 for k, v in agreement.get("spearman", {}).items()))
    if noise_lines := summaries(run.results):
        notes += [NOISE_NOTE, *noise_lines]
    if fixed := metrics.get("loader", {}).get("fixed"):
        notes.append(f"The prompt-set loader repaired {len(fixed)} syntax error(s): " + "; ".join(fixed[:5]))
    return [Section("consistency: same request, different style", tuple(figures), tuple(tables), tuple(notes))]


def headlines(results: dict) -> list[Headline]:
    return [headline_from(model, f"{judge} mean similarity (0-5)", s["mean"])
            for judge, jm in results.get("metrics", {}).get("judges", {}).items() for model, s in jm["models"].items()]
