"""The persona section: rank-order stability with its CI, the context × context stability matrix,
and validity per context (MDS Stress-1, CFA fit, invalid answers), read from the typed record
(`ModelStability` per model)."""

from __future__ import annotations

import numpy as np

from robusteval.report.model import Figure, Headline, Run, Section, TableData, number_text, slug
from robusteval.report.plots import heatmap
from robusteval.report.table import fmt_estimate
from robusteval.results.persona import ContextValidity, PersonaMetrics, stability_caveat


def sections(run: Run) -> list[Section]:
    out = []
    metrics: PersonaMetrics = run.metrics or {}
    for model, m in metrics.items():
        figures, rows = [], []
        matrix = m.stability_matrix
        values = np.array([[np.nan if v is None else v for v in row] for row in matrix.values], dtype=float)
        if matrix.contexts and not np.isnan(values).all():
            figures.append(Figure(f"stability-{slug(model)}",
                                  f"{model}: rank-order stability between contexts (Spearman)",
                                  heatmap(values, matrix.contexts, matrix.contexts, title="stability matrix",
                                          vmin=-1, vmax=1, colorbar="mean Spearman over values")))
        for context, v in m.validity.items():
            fits = "; ".join(f"{name}: CFI {number_text(f.cfi)}, SRMR {number_text(f.srmr)}, "
                             f"RMSEA {number_text(f.rmsea)}"
                             if f.cfi is not None else f"{name}: {f.error or 'n/a'}"
                             for name, f in v.cfa.items())
            rows.append((context, number_text(v.mds.stress1), number_text(v.invalid_rate),
                         number_text(v.mean_item_r), fits))
        methods = {v.mds.method for v in m.validity.values() if v.mds.method is not None}
        stress = f"MDS Stress-1 ({', '.join(sorted(methods))})" if methods else "MDS Stress-1"  # --mds: the two differ
        table = TableData(f"{model}: validity per context",
                          ("context", stress, "invalid rate", "mean inter-item r", "CFA"), tuple(rows))
        notes = (*((f"n/a: {m.na_reason}",) if m.na_reason else ()),
                 "Rank-order stability (mean over values and context pairs): "
                 f"{fmt_estimate(m.rank_order_stability.as_dict())}"
                 + (f" ({caveat})" if (caveat := stability_caveat(m)) else ""),
                 _scoring_note(run.extra.scoring, m.validity))
        out.append(Section(f"persona · {model}", tuple(figures), (table,), notes))
    return out


def _scoring_note(scoring: str, validity: dict[str, ContextValidity]) -> str:
    if scoring == "generate":
        return "Answers parsed from the persona's replies (--scoring generate); unparseable ones are invalid."
    masses = ", ".join(f"{c} {number_text(v.letter_mass)}" for c, v in validity.items())
    rule = "the most probable scale point" if scoring == "logprobs" else "the probability-weighted scale point"
    return (f"Answers read from the first token's log-probabilities after an 'Answer:' prefill: {rule} "
            f"(--scoring {scoring}). Mean probability on scale letters before renormalising: {masses}.")


def headlines(metrics: PersonaMetrics | None) -> list[Headline]:
    return [Headline(model, "rank-order stability", m.rank_order_stability.value, m.rank_order_stability.low,
                     m.rank_order_stability.high, n=m.rank_order_stability.n)
            for model, m in (metrics or {}).items()]
