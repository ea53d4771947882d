"""The `consistency` suite (ELOQUENT 2024 robustness): same request, different style, same content?

A group is one prompt set: the same request in several styles (formality, dialect, spelling, ...)
or languages. Every model under test answers every variant; judges rate how similar each model's
answers to one item are, 0 (different) to 5 (same content). Per judge we report the items × models
table, the per-item mean (difficulty) and the per-model sum and mean (robustness) with bootstrap
CIs over items. With ``--samples K`` at temperature > 0, each variant's K answers are also rated
among themselves: the model's own run-to-run variation, the floor against which the style effect
(variants score − sampling score) is read. With two or more judges, their agreement is reported.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass

import numpy as np

from robusteval.data.consistency import PromptSet, load_prompt_sets
from robusteval.engine import gather_all
from robusteval.errors import UserError
from robusteval.files import slug
from robusteval.judges.base import Rating, SimilarityJudge
from robusteval.metrics.agreement import agreement_report
from robusteval.metrics.stats import bootstrap
from robusteval.suites.base import SuiteContext, SuiteResult, csv_arg, print_noise_floor
from robusteval.types import Message

NAME = "consistency"
JUDGES = ("oracle", "embedding", "nli")
VARIANTS_SCOPE = "variants"  # a rating of one answer per variant; "sampling:N" rates variant N's samples


@dataclass(frozen=True)
class Options:
    judges: tuple[str, ...] = ("oracle", "embedding")
    oracle: str = "llamacpp"
    oracle_mode: str = "set"
    oracle_retries: int = 3
    oracle_max_tokens: int = 256
    embedder: str = "auto"
    nli_model: str | None = None
    team: str = "robusteval"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", dest="judges", type=csv_arg,
                   help=f"similarity judges, comma-separated: {', '.join(JUDGES)} (default: oracle,embedding)")
    p.add_argument("--oracle", help="model spec of the LLM oracle (default: llamacpp, the embedded model)")
    p.add_argument("--oracle-mode", dest="oracle_mode", choices=("set", "pairwise"),
                   help="set: rate all answers of an item at once (ELOQUENT); pairwise: rate each pair, average")
    p.add_argument("--oracle-retries", dest="oracle_retries", type=int,
                   help="re-asks of an unparseable rating before it is recorded as missing (default: 3)")
    p.add_argument("--oracle-max-tokens", dest="oracle_max_tokens", type=int, help="oracle reply limit (default: 256)")
    p.add_argument("--embedder", help="minilm, e5, or a sentence-transformers model; auto: minilm for English "
                                      "items, multilingual e5 otherwise (default: auto)")
    p.add_argument("--nli-model", dest="nli_model", help="Hugging Face NLI model name or folder for --judge nli")
    p.add_argument("--team", help="team name written into the ELOQUENT submission files")


def validate(config, options: Options) -> None:
    if unknown := [j for j in options.judges if j not in JUDGES]:
        raise UserError(f"unknown --judge {','.join(unknown)}; available: {', '.join(JUDGES)}")
    if not options.judges:
        raise UserError("give at least one --judge")
    if "nli" in options.judges and not options.nli_model:
        raise UserError("--judge nli needs --nli-model NAME (a Hugging Face NLI model or a local folder)")
    if options.oracle_mode not in ("set", "pairwise"):
        raise UserError("--oracle-mode must be set or pairwise")
    if options.oracle_retries < 0 or options.oracle_max_tokens < 1:
        raise UserError("--oracle-retries must be >= 0 and --oracle-max-tokens >= 1")


@dataclass(frozen=True)
class AnswerSample:
    """One model's answer to one variant (sample k); a line of samples.jsonl."""

    model: str
    item_id: str
    variation: str
    variant: int
    language: str
    sample: int
    prompt: str
    response: str | None
    status: str  # ok | failed
    error: str | None
    cached: bool
    key: str
    kind: str = "answer"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RatingSample:
    """One judge's rating of one model's answers to one item; also a line of samples.jsonl."""

    model: str
    item_id: str
    variation: str
    judge: str
    scope: str  # "variants", or "sampling:N" for the K samples of variant N
    score: float | None
    raw: float | None
    detail: str | None
    attempts: int
    status: str  # ok | invalid (rating missing) | failed (an answer failed)
    error: str | None = None
    kind: str = "rating"

    def as_dict(self) -> dict:
        return asdict(self)


async def execute(ctx: SuiteContext) -> SuiteResult:
    config, options = ctx.config, ctx.options
    items, report = load_prompt_sets(config.data, limit=config.limit, seed=config.seed,
                                     audit=ctx.audit.source(config.data or "robusteval-en"))
    from rich.text import Text

    for line in report.lines():
        ctx.console.print(Text(line, style="yellow"))
    judges = await _make_judges(ctx)

    jobs = [(model, item, v, k) for model in ctx.models for item in items
            for v in range(len(item.variants)) for k in range(config.samples)]
    ctx.engine.expect(len(jobs))

    async def answer(model: str, item: PromptSet, v: int, k: int) -> AnswerSample:
        variant = item.variants[v]
        r = await ctx.engine.chat(model, (Message("user", variant.prompt),), ctx.params, sample=k)
        return AnswerSample(model, item.id, item.variation, v, variant.language, k, variant.prompt,
                            r.text, "ok" if r.ok else "failed", r.error, r.cached, r.key)

    answers = await gather_all(answer(*job) for job in jobs)
    groups = _rating_groups(answers, items, ctx.models, config.samples)
    if "oracle" in judges:
        ctx.engine.expect(len(groups) * (1 if options.oracle_mode == "set" else 3))
    ratings = await gather_all(_rate(judge, group) for group in groups for judge in judges.values())

    metrics = summarise(ratings, items, ctx.models, list(judges), seed=config.seed)
    metrics["loader"] = {"source": report.source, "fixed": list(report.fixes), "skipped": list(report.skipped)}
    files: dict[str, str | bytes] = {f"submission-{_slug(m)}.json": submission(answers, items, m, options.team)
                                     for m in ctx.models}
    files["answers.md"] = answers_markdown(answers, ratings, items, ctx.models)
    for judge in judges:
        png = heatmap_png(metrics["judges"][judge], items, ctx.models, judge)
        if png is not None:
            files[f"heatmap-{judge}.png"] = png
    extra = {"items": len(items), "variants": sum(len(i.variants) for i in items),
             "judges": {name: _judge_info(j) for name, j in judges.items()}}
    return SuiteResult(metrics=metrics, samples=[*answers, *ratings], extra=extra, files=files)


async def _make_judges(ctx: SuiteContext) -> dict:
    options = ctx.options
    judges: dict[str, SimilarityJudge] = {}
    for name in options.judges:
        if name == "oracle":
            from robusteval.judges.oracle import OracleJudge

            label = await ctx.model(options.oracle)
            judges[name] = OracleJudge(ctx.engine, label, mode=options.oracle_mode, retries=options.oracle_retries,
                                       max_tokens=options.oracle_max_tokens)
        elif name == "embedding":
            from robusteval.judges.embedding import EmbeddingJudge

            judges[name] = EmbeddingJudge(options.embedder)
        else:
            from robusteval.judges.nli import NLIJudge, load_nli

            load_nli(options.nli_model)  # fail early, before any answer is asked
            judges[name] = NLIJudge(options.nli_model)
    return judges


def _judge_info(judge) -> dict:
    info = {"class": type(judge).__name__}
    for attribute in ("model", "mode", "retries", "embedder", "model_name", "calibrations"):
        if hasattr(judge, attribute):
            info[attribute] = getattr(judge, attribute)
    return info


@dataclass(frozen=True)
class _Group:
    model: str
    item: PromptSet
    scope: str
    answers: tuple[AnswerSample, ...]


def _rating_groups(answers: list[AnswerSample], items: list[PromptSet], models: list[str],
                   samples: int) -> list[_Group]:
    """Per model and item: one answer per variant (sample 0); with K samples, also each variant's K answers."""
    index = {(a.model, a.item_id, a.variant, a.sample): a for a in answers}
    groups = []
    for model in models:
        for item in items:
            variants = range(len(item.variants))
            groups.append(_Group(model, item, VARIANTS_SCOPE, tuple(index[model, item.id, v, 0] for v in variants)))
            if samples > 1:
                groups += [_Group(model, item, f"sampling:{v}",
                                  tuple(index[model, item.id, v, k] for k in range(samples))) for v in variants]
    return groups


async def _rate(judge, group: _Group) -> RatingSample:
    failed = [a for a in group.answers if a.status != "ok"]
    if failed:
        return RatingSample(group.model, group.item.id, group.item.variation, judge.name, group.scope, None, None,
                            None, 0, "failed", f"{len(failed)} answer(s) failed: {failed[0].error}")
    languages = tuple(a.language for a in group.answers)
    rating: Rating = await judge.rate([a.response or "" for a in group.answers], group.item.hint, languages)
    return RatingSample(group.model, group.item.id, group.item.variation, judge.name, group.scope, rating.score,
                        rating.raw, rating.detail, rating.attempts, "ok" if rating.score is not None else "invalid")


def summarise(ratings: list[RatingSample], items: list[PromptSet], models: list[str], judges: list[str], *,
              seed: int = 0) -> dict:
    """Items × models tables per judge, per-item and per-model aggregates with CIs, and judge agreement."""
    item_ids = [i.id for i in items]
    out: dict = {"judges": {}}
    variant_scores: dict[str, np.ndarray] = {}
    for judge in judges:
        table = _table(ratings, judge, VARIANTS_SCOPE, item_ids, models)
        variant_scores[judge] = table.ravel()
        per_model = {}
        for j, model in enumerate(models):
            column = table[:, j]
            per_model[model] = {
                "sum": bootstrap(column, _nansum, seed=seed).as_dict(),
                "mean": bootstrap(column, _nanmean, seed=seed).as_dict(),
                "rated": int(np.sum(~np.isnan(column))),
                "missing": int(np.sum(np.isnan(column))),
                "by_variation": _by_variation(column, items),
            }
            sampling = _sampling_scores(ratings, judge, model, items)
            if sampling is not None:
                paired = np.column_stack([column, sampling])
                per_model[model]["sampling_mean"] = bootstrap(sampling, _nanmean, seed=seed).as_dict()
                per_model[model]["style_effect"] = bootstrap(
                    paired, lambda rows: _nanmean(rows[:, 0] - rows[:, 1]), seed=seed).as_dict()
        out["judges"][judge] = {
            "table": {item_id: {m: _num(table[i, j]) for j, m in enumerate(models)}
                      for i, item_id in enumerate(item_ids)},
            "item_mean": {item_id: _num(_nanmean(table[i])) for i, item_id in enumerate(item_ids)},
            "models": per_model,
        }
    if len(judges) >= 2:
        units = [f"{item_id}|{m}" for item_id in item_ids for m in models]
        out["agreement"] = agreement_report(variant_scores, units)
    return out


def _table(ratings, judge: str, scope: str, item_ids: list[str], models: list[str]) -> np.ndarray:
    cell = {(r.item_id, r.model): r.score for r in ratings if r.judge == judge and r.scope == scope}
    return np.array([[np.nan if cell.get((i, m)) is None else cell[i, m] for m in models] for i in item_ids],
                    dtype=float).reshape(len(item_ids), len(models))


def _sampling_scores(ratings, judge: str, model: str, items: list[PromptSet]) -> np.ndarray | None:
    """Per item: the mean over variants of the rating of that variant's K samples (None without samples)."""
    by_item: dict[str, list[float]] = {}
    for r in ratings:
        if r.judge == judge and r.model == model and r.scope.startswith("sampling:"):
            by_item.setdefault(r.item_id, []).append(np.nan if r.score is None else r.score)
    if not by_item:
        return None
    return np.array([_nanmean(np.array(by_item.get(i.id, [np.nan]))) for i in items], dtype=float)


def _by_variation(column: np.ndarray, items: list[PromptSet]) -> dict:
    groups: dict[str, list[float]] = {}
    for value, item in zip(column, items):
        groups.setdefault(item.variation, []).append(value)
    return {v: {"mean": _num(_nanmean(np.array(s))), "items": len(s)} for v, s in groups.items()}


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(x.mean()) if len(x) else float("nan")


def _nansum(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nansum(x)) if (~np.isnan(x)).any() else float("nan")


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 4)


def _slug(model: str) -> str:
    return slug(model, keep="-_.")


def submission(answers: list[AnswerSample], items: list[PromptSet], model: str, team: str) -> str:
    """The model's answers in the ELOQUENT robustness submission layout: each item's variants, each
    with its language, prompt and response (sample 0)."""
    by_key = {(a.item_id, a.variant): a for a in answers if a.model == model and a.sample == 0}
    payload = {"eloquent-robustness-submission": {
        "team": team, "system": model, "submissionid": f"{team}-{_slug(model)}",
        "date": time.strftime("%Y-%m-%d"),
        "items": [{"id": item.id, "variation": item.variation,
                   "variants": [{"language": v.language, "prompt": v.prompt,
                                 "response": by_key[item.id, i].response if (item.id, i) in by_key else None}
                                for i, v in enumerate(item.variants)]} for item in items]}}
    return json.dumps(payload, indent=2, ensure_ascii=False)


def answers_markdown(answers: list[AnswerSample], ratings: list[RatingSample], items: list[PromptSet],
                     models: list[str]) -> str:
    """Per item, the variants side by side with each model's answers and the judges' ratings."""
    by_key = {(a.model, a.item_id, a.variant): a for a in answers if a.sample == 0}
    scores = {(r.model, r.item_id, r.judge): r.score for r in ratings if r.scope == VARIANTS_SCOPE}
    judges = list(dict.fromkeys(r.judge for r in ratings))
    lines = ["# Answers side by side", ""]
    for item in items:
        lines += [f"## {item.id} ({item.variation})", ""]
        if item.hint:
            lines += [f"Judge hint: {item.hint}", ""]
        lines += ["| variant | language | prompt | " + " | ".join(models) + " |",
                  "|---|---|---|" + "---|" * len(models)]
        for i, v in enumerate(item.variants):
            cells = [_cell(by_key[m, item.id, i].response if (m, item.id, i) in by_key else None) for m in models]
            lines.append(f"| {i + 1} | {v.language} | {_cell(v.prompt)} | " + " | ".join(cells) + " |")
        rated = ", ".join(f"{m} {j}: {_fmt(scores.get((m, item.id, j)))}" for m in models for j in judges)
        lines += ["", f"Ratings (0-5): {rated}", ""]
    return "\n".join(lines)


def _cell(text: str | None) -> str:
    if text is None:
        return "*(failed)*"
    return text.replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def _fmt(x: float | None) -> str:
    return "missing" if x is None else f"{x:.2f}"


def heatmap_png(judge_metrics: dict, items: list[PromptSet], models: list[str], judge: str) -> bytes | None:
    """The items × models table as a heatmap (missing cells grey), for reports and papers."""
    from robusteval.report.plots import heatmap

    table = np.array([[np.nan if judge_metrics["table"][i.id][m] is None else judge_metrics["table"][i.id][m]
                       for m in models] for i in items], dtype=float)
    if table.size == 0:
        return None
    return heatmap(table, [f"{i.id} ({i.variation})" for i in items], models, vmin=0, vmax=5, fmt="{:.1f}",
                   title=f"Similarity of answers across variants: {judge}", colorbar="0 different .. 5 same content")


def print_summary(console, result: SuiteResult) -> None:
    from rich.table import Table
    from rich.text import Text

    from robusteval.report.table import fmt_estimate

    metrics = result.metrics
    for judge, jm in metrics["judges"].items():
        models = list(jm["models"])
        table = Table(title=f"consistency · {judge} judge · similarity of answers across variants (0-5)",
                      title_justify="left")
        table.add_column("item")
        for m in models:
            table.add_column(m, justify="right")
        table.add_column("item mean", justify="right")
        for item_id, row in jm["table"].items():
            table.add_row(item_id, *[_fmt(row[m]) for m in models], _fmt(jm["item_mean"][item_id]))
        table.add_section()
        table.add_row(Text("sum [95% CI]", style="bold"),
                      *[fmt_estimate(jm["models"][m]["sum"], 2) for m in models], "")
        table.add_row(Text("mean [95% CI]", style="bold"),
                      *[fmt_estimate(jm["models"][m]["mean"], 2) for m in models], "")
        table.add_row("missing ratings", *[str(jm["models"][m]["missing"]) for m in models], "")
        if any("sampling_mean" in jm["models"][m] for m in models):
            table.add_row(Text("same-variant samples mean", style="bold"),
                          *[fmt_estimate(jm["models"][m].get("sampling_mean"), 2) for m in models], "")
            table.add_row(Text("style effect (variants − samples)", style="bold"),
                          *[fmt_estimate(jm["models"][m].get("style_effect"), 2) for m in models], "")
        if noise := result.extra.get("determinism"):
            from robusteval.engine.determinism import noise_cell

            table.add_row("[bold]backend noise: same request, other reply",
                          *[noise_cell(noise.get(m)) for m in models], "")
        console.print(table)
    if agreement := metrics.get("agreement"):
        alpha = agreement["krippendorff_alpha_interval"]
        console.print(f"judge agreement: Krippendorff's alpha (interval) = "
                      f"{'n/a' if alpha is None else f'{alpha:.3f}'}; Spearman "
                      + ", ".join(f"{k} = {'n/a' if v is None else f'{v:.3f}'}"
                                  for k, v in agreement["spearman"].items())
                      + "; mean |difference| "
                      + ", ".join(f"{k} = {'n/a' if v is None else f'{v:.2f}'}"
                                  for k, v in agreement["mean_abs_difference"].items()), highlight=False)
    print_noise_floor(console, result.extra)

