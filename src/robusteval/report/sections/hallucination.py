"""The hallucination section: detection F1 per detector (and vote) with CIs, position bias, the
generator × detector matrix, detector agreement, and what the generators produced."""

from __future__ import annotations

import numpy as np

from robusteval.report.model import (
    Figure,
    Headline,
    Run,
    Section,
    TableData,
    estimate_text,
    headline_from,
    number_text,
)
from robusteval.report.plots import bars_with_ci, heatmap


def sections(run: Run) -> list[Section]:
    metrics = run.results.get("metrics", {})
    figures, tables, notes = [], [], []
    for step in ("detection", "cross"):
        detectors = metrics.get(step, {}).get("detectors", {})
        if not detectors:
            continue
        names = list(detectors)
        figures.append(Figure(f"{step}-f1", f"{step}: F1 per detector (95% CI over items)",
                              bars_with_ci(names, [detectors[n].get("f1") for n in names], title=f"{step}: F1",
                                           ylabel="F1")))
        tables.append(TableData(f"{step}: detectors", ("detector", "F1", "accuracy", "precision", "recall",
                                                       "chose first shown", "order consistency", "invalid", "failed"),
                                tuple((n, estimate_text(d.get("f1")), estimate_text(d.get("accuracy")),
                                       estimate_text(d.get("precision")), estimate_text(d.get("recall")),
                                       estimate_text((d.get("position_bias") or {}).get("chose_first")),
                                       estimate_text(d.get("order_consistency")), str(d.get("invalid", "")),
                                       str(d.get("failed", ""))) for n, d in detectors.items())))
        if agreement := metrics.get(step, {}).get("agreement"):
            fleiss = agreement.get("fleiss_kappa")
            notes.append(f"{step}: Fleiss' kappa {'n/a' if fleiss is None else f'{fleiss:.3f}'}; " + "; ".join(
                f"{pair}: Cohen's kappa {number_text(a.get('cohen_kappa'))}, MCC {number_text(a.get('mcc'))}"
                for pair, a in agreement.get("pairwise", {}).items()))
    if matrix := metrics.get("cross", {}).get("matrix"):
        generators = list(matrix)
        detectors = list(dict.fromkeys(d for row in matrix.values() for d in row))
        values = np.array([[_value((matrix[g].get(d) or {}).get("f1")) for d in detectors] for g in generators])
        figures.append(Figure("generator-detector", "F1 of each detector on each generator's hypotheses",
                              heatmap(values, generators, detectors, title="generator × detector F1", vmin=0, vmax=1,
                                      colorbar="F1")))
    generation = metrics.get("generation", {})
    if generation:
        rows = []
        for generator, g in generation.items():
            for judge, j in (g.get("judges") or {"-": {}}).items():
                rows.append((generator, estimate_text(g.get("valid")), str(g.get("invalid", "")), judge,
                             estimate_text(j.get("hyp+_faithful")), estimate_text(j.get("hyp-_hallucinated"))))
        tables.append(TableData("generation: parsed outputs and how the judge saw them",
                                ("generator", "valid", "invalid", "judge", "hyp+ judged faithful",
                                 "hyp− judged hallucinated"), tuple(rows)))
    return [Section("hallucination: generate and detect", tuple(figures), tuple(tables), tuple(notes))]


def headlines(results: dict) -> list[Headline]:
    out = []
    metrics = results.get("metrics", {})
    for step in ("detection", "cross"):
        for name, d in metrics.get(step, {}).get("detectors", {}).items():
            out.append(headline_from(name.split("/")[0] if "/" in name and not name.startswith("vote(") else name,
                                     f"{step} F1 ({name})", d.get("f1")))
    return out


def _value(est) -> float:
    return np.nan if not est or est.get("value") is None else est["value"]
