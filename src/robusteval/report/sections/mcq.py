"""The mcq section: accuracy per variant with CIs, consistency, spread, position bias, and what
became of the perturbed copies of the questions. Reads the typed records of `results.mcq`."""

from __future__ import annotations

from robusteval.engine.determinism import NOISE_NOTE, summaries
from robusteval.estimate import Estimate
from robusteval.report.budget import budget_section
from robusteval.report.formats import design_tables
from robusteval.report.lm_eval import lm_eval_section
from robusteval.report.model import Figure, Headline, Run, Section, TableData, slug
from robusteval.report.plots import bars_with_ci, has_value
from robusteval.report.search import search_section
from robusteval.report.sections.sensitivity import NOTE as SENSITIVITY_NOTE, measures_table, variants_table
from robusteval.report.table import CATEGORY_COLUMNS, category_rows, fmt_estimate, fmt_shares, sensitivity_columns
from robusteval.results.mcq import CopyCounts, FamilyMetrics, InvalidReplies, McqExtra, McqMetrics


def sections(run: Run) -> list[Section]:
    out = []
    extra: McqExtra = run.extra
    invalid, reader = extra.invalid_replies or {}, extra.reader
    metrics: McqMetrics = run.metrics or {}
    formats = extra.formats  # the formats family's layouts, for its best and worst
    for model, families in metrics.items():
        figures, summary_rows = [], []
        for family, fm in families.items():
            names = list(fm.variants)
            stem = f"{slug(model)}-{slug(family)}"
            accuracy = [fm.variants[n].accuracy.as_dict() for n in names]
            if has_value(accuracy):  # every variant n/a (no readable reply): no empty axis
                figures.append(Figure(f"accuracy-{stem}", f"{model} · {family}: accuracy per variant (95% CI)",
                                      bars_with_ci(names, accuracy, title=f"{family}: accuracy per variant",
                                                   ylabel="accuracy")))
            chosen = {p: b.chosen.as_dict() for p, b in fm.position_bias.items()}
            if has_value(list(chosen.values())):
                figures.append(Figure(f"position-{stem}",
                                      f"{model} · {family}: how often each shown position is chosen (dashed: "
                                      f"every position alike, 1/{len(chosen)})",
                                      bars_with_ci(list(chosen), list(chosen.values()),
                                                   title=f"{family}: share of answers per position", ylabel="chosen",
                                                   reference=1 / len(chosen),
                                                   reference_label=f"chance (1/{len(chosen)})")))
            summary_rows.append((family, *map(fmt_estimate, (fm.accuracy, fm.consistency_rate,
                                                             fm.consistency_rate_pooled, fm.spread)),
                                 str(fm.invalid), str(fm.failed)))
        table = TableData(f"{model}: robustness per family",
                          ("family", "accuracy", "consistency rate", "pooled CR", "spread (max-min)", "invalid",
                           "failed"), tuple(summary_rows))
        noise = summaries(run.record.determinism, model)
        sensitivity = sensitivity_tables(model, families)
        notes = ((SENSITIVITY_NOTE,) if sensitivity else ()) + ((NOISE_NOTE, *noise) if noise else ())
        if any(fm.sensitivity_valid is not None for fm in families.values()):
            notes = (VALID_ONLY_NOTE, *notes)
        warned = invalid_table(model, invalid[model], reader) if model in invalid else None
        if warned is not None:
            notes = (f"Warning: {invalid[model].warning(model, reader)}", *notes)
        population = population_table(model, families)
        if population is not None:
            notes = (*notes, POPULATION_NOTE)
        out.append(Section(f"mcq · {model}", tuple(figures),
                           (*([warned] if warned else []), table, *([population] if population else []),
                            *design_tables(model, families, formats),
                            *sensitivity, *variant_tables(model, families),
                            *category_tables(model, families)),
                           notes))
    ranking = ranking_section(metrics)  # two or more models on a sampled family: does their order hold?
    if ranking is not None:
        out.append(ranking)
    copies = copies_section(extra.copy_counts)
    budget = budget_section(run)  # --budget: the estimate of the full grid
    search = search_section(run)  # --search: the best and worst variant found
    lm_eval = lm_eval_section(run)  # score on lm-eval's output: its figures beside ours
    return [*out, *([lm_eval] if lm_eval else []), *([budget] if budget else []), *([search] if search else []),
            *([copies] if copies else [])]


VALID_ONLY_NOTE = ("Sensitivity over valid replies only: a question's invalid variants are left out (not counted "
                   "wrong, never a flip), so the gap to the as-scored figures is format failure, not the answer "
                   "changing.")


def ranking_section(metrics: McqMetrics) -> Section | None:
    """Per family whose variants are a sample and that two or more models answered: the share of
    variants each model wins against each other, Kendall's W and the chance the top changes
    (`report.rankings.from_metrics`); None for a run of one model."""
    from robusteval.report.rank_stability import NOTE, table
    from robusteval.report.rankings import from_metrics

    found = from_metrics(metrics)
    if not found:
        return None
    return Section("mcq · ranking across variants", tables=tuple(table(f"{family}: variants won", rs)
                                                                 for family, rs in found.items()), notes=(NOTE,))


def invalid_table(model: str, counts: InvalidReplies, reader: str | None) -> TableData | None:
    """The first invalid replies of a model above the warning's share, None at or under it."""
    if counts.warning(model, reader) is None:
        return None
    return TableData(f"{model}: {counts.invalid} of {counts.replies} replies invalid ({counts.share:.0%}); "
                     f"the first {len(counts.examples)}", ("#", "reply"),
                     tuple((str(n), text) for n, text in enumerate(counts.examples, 1)))


def copies_section(counts: list[CopyCounts]) -> Section | None:
    """How many perturbed copies each perturbation family asked for, kept and left out (and why)."""
    if not counts:
        return None
    rows = tuple((c.family, c.kind, c.rewriter or "", str(c.asked), str(c.kept), str(c.rejected), str(c.failed),
                  ", ".join(f"{reason} {n}" for reason, n in sorted(c.reasons.items())))
                 for c in counts)
    notes = ["A copy that never passed its checks (still a question, no gold answer newly in it, changed at all) "
             "is left out of its question's group, which then holds the original and the copies kept."]
    if any(c.estimated for c in counts):
        notes.append("--estimate: rewrites were counted, not written; kept counts every copy.")
    return Section("mcq · perturbed copies of the questions",
                   tables=(TableData("Copies per perturbation family",
                                     ("family", "kind", "rewriter", "asked", "kept", "refused by checks",
                                      "failed requests", "why attempts were refused"), rows),),
                   notes=tuple(notes))


POPULATION_NOTE = ("Population mean: for a family whose variants are a sample (templates, paraphrases, sampled "
                   "draws), the mean accuracy over the questions and variants one could have drawn, with an interval "
                   "over both (docs/statistics.md); the accuracy beside it is clustered by question, how sure we are "
                   "on the variants asked. Variance shares: of one cell's variance, from the variants, the questions, "
                   "and their interaction with the noise.")


def population_table(model: str, families: dict[str, FamilyMetrics]) -> TableData | None:
    """Per family whose variants are a sample: the population mean over questions and variants beside
    the accuracy on the variants asked, and the variance shares (None where no family is a sample)."""
    rows = []
    for family, fm in families.items():
        pop = fm.population
        if pop is None:
            continue
        rows.append((family, fmt_estimate(fm.accuracy), fmt_estimate((pop.value, pop.low, pop.high)),
                     str(pop.items), str(pop.variants), fmt_shares(pop.variance_shares)))
    if not rows:
        return None
    return TableData(f"{model}: population mean over questions and variants (95% CI)",
                     ("family", "accuracy (these variants)", "population mean", "questions", "variants",
                      "variance: variants / questions / interaction"), tuple(rows))


def sensitivity_tables(model: str, families: dict[str, FamilyMetrics]) -> list[TableData]:
    """Every sensitivity measure per family, then each family's variants against its reference."""
    overall = measures_table(f"{model}: sensitivity per family (95% CI)", sensitivity_columns(families))
    per_variant = [variants_table(f"{model} · {family}: each variant against the unperturbed one", fm.sensitivity)
                   for family, fm in families.items()]
    return [t for t in (overall, *per_variant) if t is not None]


def variant_tables(model: str, families: dict[str, FamilyMetrics]) -> list[TableData]:
    """Accuracy per variant, micro and (with two or more categories) macro over categories: SCORE
    reports MMLU-Pro's per-prompt accuracy as the macro one, AGIEval's as the micro one."""
    out = []
    for family, fm in families.items():
        macro = any(v.macro_accuracy is not None for v in fm.variants.values())
        columns = ("variant", "accuracy (micro)", *(("macro over categories",) if macro else ()), "answered")
        rows = tuple((name, fmt_estimate(v.accuracy), *((fmt_estimate(v.macro_accuracy),) if macro else ()),
                      str(v.answered))
                     for name, v in fm.variants.items())
        out.append(TableData(f"{model} · {family}: accuracy per variant", columns, rows))
    return out


def category_tables(model: str, families: dict[str, FamilyMetrics]) -> list[TableData]:
    """Accuracy per category (MMLU-Pro category, MMLU subject, AGIEval subset) with its interval,
    and the replies read right, wrong and unreadable behind it (items in two or more categories)."""
    return [TableData(f"{model} · {family}: accuracy per category", CATEGORY_COLUMNS, category_rows(fm))
            for family, fm in families.items() if fm.categories]


def headlines(metrics: McqMetrics | None) -> list[Headline]:
    """Per family: accuracy (and, where some replies were invalid, over valid ones only) and consistency rate."""
    out = []
    for model, families in (metrics or {}).items():
        for family, fm in families.items():
            out.append(_headline(model, f"{family} accuracy", fm.accuracy))
            if fm.accuracy_valid is not None:  # some replies invalid (counted wrong above): left out here
                out.append(_headline(model, f"{family} accuracy (valid replies only)", fm.accuracy_valid))
            out.append(_headline(model, f"{family} consistency rate", fm.consistency_rate))
    return out


def _headline(model: str, metric: str, est: Estimate) -> Headline:
    return Headline(model, metric, est.value, est.low, est.high, n=est.n)

