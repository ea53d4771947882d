"""The consistency section: items × models heatmaps per judge, model means with CIs, judge
agreement, the generated prompt sets (kept and left-out variants) and the local models' time.
Reads the run's typed record (`results.consistency.ConsistencyMetrics`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from robusteval.engine.determinism import NOISE_NOTE, noise_cell, summaries
from robusteval.estimate import Estimate
from robusteval.report.model import Figure, Headline, Run, Section, TableData, estimate_text, headline_from
from robusteval.report.plots import bars_with_ci, has_value, heatmap
from robusteval.results.consistency import ConsistencyExtra, ConsistencyMetrics


def _est(e: Estimate | None) -> str:
    return estimate_text(None if e is None else e.as_dict(), 2)


def sections(run: Run) -> list[Section]:
    metrics: ConsistencyMetrics | None = run.metrics
    if metrics is None:
        return [Section("consistency: same request, different style", notes=("This run has no metrics.",))]
    figures, tables = [], []
    noise = run.record.determinism or {}
    extra: ConsistencyExtra = run.extra
    if (generation := metrics.generation) is not None:
        tables.append(TableData(
            f"Prompt sets generated from {generation.prompts} requests: {generation.sets} kept"
            + (" (estimate: rewrites counted, not written)" if generation.estimated else ""),
            ("variation", "variants kept", "left out", "why left out"),
            tuple((name, str(c.kept), str(c.rejected), ", ".join(f"{r} {n}" for r, n in c.reasons.items()))
                  for name, c in generation.variations.items())))
    for judge, jm in metrics.judges.items():
        items, models = list(jm.table), list(jm.models)
        matrix = np.array([[np.nan if jm.table[i][m] is None else jm.table[i][m] for m in models]
                           for i in items], dtype=float).reshape(len(items), len(models))
        if matrix.size and not np.isnan(matrix).all():
            figures.append(Figure(f"heatmap-{judge}", f"{judge}: similarity of each model's answers per item (0-5)",
                                  heatmap(matrix, items, models, title=f"{judge} judge", vmin=0, vmax=5, fmt="{:.1f}",
                                          colorbar="0 different .. 5 same content")))
        means = [jm.models[m].mean.as_dict() for m in models]
        if has_value(means):
            figures.append(Figure(f"means-{judge}", f"{judge}: mean similarity per model (95% CI over items)",
                                  bars_with_ci(models, means, ylim=(0, 5), title=f"{judge}: mean similarity",
                                               ylabel="0-5")))
        tables.append(TableData(f"{judge} judge: robustness per model", (
            "model", "sum", "mean", "rated", "missing", "same-variant samples", "style effect",
            *(("backend noise (same request twice)",) if noise else ())), tuple(
            (m, _est(s.sum), _est(s.mean), str(s.rated), str(s.missing), _est(s.sampling_mean), _est(s.style_effect),
             *((noise_cell(noise.get(m)),) if noise else ()))
            for m, s in jm.models.items())))
        if sensitivity := sensitivity_table(judge, jm.models):
            tables.append(sensitivity)
    notes = []
    if (agreement := metrics.agreement) is not None:
        alpha = agreement.krippendorff_alpha_interval
        notes.append("Judge agreement: Krippendorff's alpha (interval) = "
                     f"{'n/a' if alpha is None else f'{alpha:.3f}'}; "
                     + "; ".join(f"Spearman {k} = {'n/a' if v is None else f'{v:.3f}'}"
                                 for k, v in agreement.spearman.items()))
    local = [f"{judge} {seconds:.1f} s ({calls} calls)" for judge in extra.judges
             if (spent := extra.local_time(judge)) is not None for seconds, calls in [spent]]
    if local:
        notes.append("Time in local judge models (off the event loop): " + "; ".join(local))
    if generation is not None and generation.dropped_prompts:
        notes.append(f"Requests with no variant left (no prompt set): {', '.join(generation.dropped_prompts)}")
    if noise_lines := summaries(run.record.determinism):
        notes += [NOISE_NOTE, *noise_lines]
    if metrics.loader is not None and metrics.loader.fixed:
        fixed = metrics.loader.fixed
        notes.append(f"The prompt-set loader repaired {len(fixed)} syntax error(s): " + "; ".join(fixed[:5]))
    return [Section("consistency: same request, different style", tuple(figures), tuple(tables), tuple(notes))]


def sensitivity_table(judge: str, models: dict[str, Any]) -> TableData | None:
    """The measures that apply to whole-item ratings (docs/metrics.md): the share of items rated at or
    above the threshold, and the spread, std and mean per variation type, per model (in points)."""
    rows = [(m, s.sensitivity) for m, s in models.items() if s.sensitivity is not None]
    if not rows:
        return None
    variations = list(dict.fromkeys(v for _, ss in rows for v in ss.by_variation))
    threshold = rows[0][1].threshold
    return TableData(f"{judge} judge: sensitivity across variation types (0-5 points, 95% CI)", (
        "model", f"share rated >= {threshold:g}", "spread (best - worst variation)", "std across variations",
        *(f"mean · {v}" for v in variations)), tuple(
        (m, _est(ss.consistent_share), _est(ss.spread), _est(ss.std),
         *(_est(ss.by_variation.get(v)) for v in variations))
        for m, ss in rows))


def headlines(metrics: ConsistencyMetrics | None) -> list[Headline]:
    if metrics is None:
        return []
    return [headline_from(model, f"{judge} mean similarity (0-5)", s.mean.as_dict())
            for judge, jm in metrics.judges.items() for model, s in jm.models.items()]
