"""The persona section: rank-order stability with its CI, the context × context stability matrix,
and validity per context (MDS Stress-1, CFA fit, invalid answers)."""

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
    slug,
)
from robusteval.report.plots import heatmap


def sections(run: Run) -> list[Section]:
    out = []
    for model, m in run.results.get("metrics", {}).items():
        if not isinstance(m, dict) or "rank_order_stability" not in m:
            continue
        figures, rows = [], []
        matrix = m.get("stability_matrix") or {}
        if matrix.get("contexts"):
            values = np.array([[np.nan if v is None else v for v in row] for row in matrix["values"]], dtype=float)
            figures.append(Figure(f"stability-{slug(model)}",
                                  f"{model}: rank-order stability between contexts (Spearman)",
                                  heatmap(values, matrix["contexts"], matrix["contexts"], title="stability matrix",
                                          vmin=-1, vmax=1, colorbar="mean Spearman over values")))
        for context, v in (m.get("validity") or {}).items():
            cfa = v.get("cfa") or {}
            fits = "; ".join(f"{name}: CFI {number_text(f.get('cfi'))}, SRMR {number_text(f.get('srmr'))}, "
                             f"RMSEA {number_text(f.get('rmsea'))}"
                             if f.get("cfi") is not None else f"{name}: {f.get('error', 'n/a')}"
                             for name, f in cfa.items())
            rows.append((context, number_text((v.get("mds") or {}).get("stress1")), number_text(v.get("invalid_rate")),
                         number_text(v.get("mean_item_r")), fits))
        methods = {method for v in (m.get("validity") or {}).values()
                   if (method := (v.get("mds") or {}).get("method")) is not None}
        stress = f"MDS Stress-1 ({', '.join(sorted(methods))})" if methods else "MDS Stress-1"  # --mds: the two differ
        table = TableData(f"{model}: validity per context",
                          ("context", stress, "invalid rate", "mean inter-item r", "CFA"), tuple(rows))
        notes = (*((f"n/a: {m['na_reason']}",) if m.get("na_reason") else ()),
                 "Rank-order stability (mean over values and context pairs): "
                 f"{estimate_text(m['rank_order_stability'])}",
                 _scoring_note(run.results.get("scoring", "generate"), m.get("validity") or {}))
        out.append(Section(f"persona · {model}", tuple(figures), (table,), notes))
    return out


def _scoring_note(scoring: str, validity: dict) -> str:
    if scoring == "generate":
        return "Answers parsed from the persona's replies (--scoring generate); unparseable ones are invalid."
    masses = ", ".join(f"{c} {number_text(v.get('letter_mass'))}" for c, v in validity.items())
    rule = "the most probable scale point" if scoring == "logprobs" else "the probability-weighted scale point"
    return (f"Answers read from the first token's log-probabilities after an 'Answer:' prefill: {rule} "
            f"(--scoring {scoring}). Mean probability on scale letters before renormalising: {masses}.")


def headlines(results: dict) -> list[Headline]:
    return [headline_from(model, "rank-order stability", m.get("rank_order_stability"))
            for model, m in results.get("metrics", {}).items() if isinstance(m, dict) and "rank_order_stability" in m]
