"""The mcq section: accuracy per variant with CIs, consistency, spread, and position bias."""

from __future__ import annotations

from robusteval.engine.determinism import NOISE_NOTE, summaries
from robusteval.report.model import Figure, Headline, Run, Section, TableData, estimate_text, headline_from, slug
from robusteval.report.plots import bars_with_ci


def sections(run: Run) -> list[Section]:
    out = []
    for model, families in run.results.get("metrics", {}).items():
        figures, summary_rows = [], []
        for family, fm in families.items():
            names = list(fm.get("variants", {}))
            stem = f"{slug(model)}-{slug(family)}"
            figures.append(Figure(f"accuracy-{stem}", f"{model} · {family}: accuracy per variant (95% CI)",
                                  bars_with_ci(names, [fm["variants"][n]["accuracy"] for n in names],
                                               title=f"{family}: accuracy per variant", ylabel="accuracy")))
            if fm.get("position_bias"):
                positions = list(fm["position_bias"])
                figures.append(Figure(f"position-{stem}",
                                      f"{model} · {family}: how often each shown position is chosen",
                                      bars_with_ci(positions, [fm["position_bias"][p]["chosen"] for p in positions],
                                                   title=f"{family}: share of answers per position", ylabel="chosen")))
            summary_rows.append((family, estimate_text(fm.get("accuracy")), estimate_text(fm.get("consistency_rate")),
                                 estimate_text(fm.get("consistency_rate_pooled")), estimate_text(fm.get("spread")),
                                 str(fm.get("invalid", "")), str(fm.get("failed", ""))))
        table = TableData(f"{model}: robustness per family",
                          ("family", "accuracy", "consistency rate", "pooled CR", "spread (max-min)", "invalid",
                           "failed"), tuple(summary_rows))
        noise = summaries(run.results, model)
        out.append(Section(f"mcq · {model}", tuple(figures), (table, *variant_tables(model, families)),
                           (NOISE_NOTE, *noise) if noise else ()))
    return out


def variant_tables(model: str, families: dict) -> list[TableData]:
    """Accuracy per variant, micro and (with two or more categories) macro over categories: SCORE
    reports MMLU-Pro's per-prompt accuracy as the macro one, AGIEval's as the micro one."""
    out = []
    for family, fm in families.items():
        variants = fm.get("variants", {})
        macro = any("macro_accuracy" in v for v in variants.values())
        columns = ("variant", "accuracy (micro)", *(("macro over categories",) if macro else ()), "answered")
        rows = tuple((name, estimate_text(v.get("accuracy")),
                      *((estimate_text(v.get("macro_accuracy")),) if macro else ()), str(v.get("answered", "")))
                     for name, v in variants.items())
        out.append(TableData(f"{model} · {family}: accuracy per variant", columns, rows))
    return out


def headlines(results: dict) -> list[Headline]:
    out = []
    for model, families in results.get("metrics", {}).items():
        for family, fm in families.items():
            out.append(headline_from(model, f"{family} accuracy", fm.get("accuracy")))
            out.append(headline_from(model, f"{family} consistency rate", fm.get("consistency_rate")))
    return out
