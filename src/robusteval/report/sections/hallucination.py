"""The hallucination section: detection F1 per detector (and vote) with CIs, position bias, the
generator × detector matrix, detector agreement, and what the generators produced. Read from the
typed record (`HallucinationMetrics`): a detector's model is its ``detector`` field, never a piece
of the configuration's name (a model label may hold "/")."""

from __future__ import annotations

import numpy as np

from robusteval.estimate import Estimate
from robusteval.report.model import Figure, Headline, Run, Section, TableData, number_text
from robusteval.report.plots import bars_with_ci, has_value, heatmap
from robusteval.report.table import fmt_estimate
from robusteval.results.hallucination import HallucinationMetrics, one_sided


def _metrics(metrics: HallucinationMetrics | None) -> HallucinationMetrics:
    """The run's metrics record (`Run.metrics`; an empty one where the run holds none)."""
    return metrics or HallucinationMetrics()


def _text(est: Estimate | None) -> str:
    return fmt_estimate(None if est is None else est.as_dict())


def sections(run: Run) -> list[Section]:
    metrics = _metrics(run.metrics)
    figures, tables, notes = [], [], []
    for step, m in metrics.steps().items():
        if not m.detectors:
            continue
        names = list(m.detectors)
        f1s = [m.detectors[n].f1.as_dict() for n in names]
        if has_value(f1s):
            figures.append(Figure(f"{step}-f1", f"{step}: F1 per detector (95% CI over items)",
                                  bars_with_ci(names, f1s, title=f"{step}: F1", ylabel="F1")))
        tables.append(TableData(f"{step}: detectors", ("detector", "F1", "accuracy", "precision", "recall",
                                                       "chose first shown", "order consistency", "invalid", "failed"),
                                tuple((n, _text(d.f1), _text(d.accuracy), _text(d.precision), _text(d.recall),
                                       _text(d.position_bias.chose_first), _text(d.order_consistency), str(d.invalid),
                                       str(d.failed)) for n, d in m.detectors.items())))
        notes += [f"warning: {w}" for w in one_sided(step, m)]
        a = m.agreement
        notes.append(f"{step}: Fleiss' kappa {number_text(a.fleiss_kappa)}; " + "; ".join(
            f"{pair}: Cohen's kappa {number_text(p.cohen_kappa)}, MCC {number_text(p.mcc)}"
            for pair, p in a.pairwise.items()))
    if metrics.cross is not None and metrics.cross.matrix:
        matrix = metrics.cross.matrix
        generators, detectors = list(matrix), metrics.cross.matrix_configs()
        values = np.array([[_value(matrix[g][d].f1) if d in matrix[g] else np.nan for d in detectors]
                           for g in generators])
        if not np.isnan(values).all():  # no F1 anywhere: an empty grid says nothing
            figures.append(Figure("generator-detector", "F1 of each detector on each generator's hypotheses",
                                  heatmap(values, generators, detectors, title="generator × detector F1", vmin=0,
                                          vmax=1, colorbar="F1")))
    if metrics.generation:
        rows = []
        for generator, g in metrics.generation.items():
            for judge, j in g.judges.items():
                rows.append((generator, _text(g.valid), str(g.invalid), judge, _text(j.hyp_plus_faithful),
                             _text(j.hyp_minus_hallucinated)))
            if not g.judges:
                rows.append((generator, _text(g.valid), str(g.invalid), "-", "n/a", "n/a"))
        tables.append(TableData("generation: parsed outputs and how the judge saw them",
                                ("generator", "valid", "invalid", "judge", "hyp+ judged faithful",
                                 "hyp− judged hallucinated"), tuple(rows)))
    return [Section("hallucination: generate and detect", tuple(figures), tuple(tables), tuple(notes))]


def headlines(metrics: HallucinationMetrics | None) -> list[Headline]:
    """Detection and cross F1 of every configuration, filed under the model that detected (the NLI
    baseline and votes under their own names)."""
    out = []
    for step, m in _metrics(metrics).steps().items():
        for name, d in m.detectors.items():
            f1 = d.f1
            out.append(Headline(d.detector or name, f"{step} F1 ({name})", f1.value, f1.low, f1.high, n=f1.n))
    return out


def _value(est: Estimate) -> float:
    return np.nan if est.value is None else est.value
