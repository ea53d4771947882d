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
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from rich.console import Console

from robusteval.data.consistency import PromptSet, load_prompt_sets, prompt_sets_jsonl
from robusteval.engine import gather_all
from robusteval.errors import UserError
from robusteval.files import atomic_write
from robusteval.judges.base import Rating, SimilarityJudge
from robusteval.metrics.similarity import VARIANTS_SCOPE, summarise
from robusteval.ranges import Range
from robusteval.report.consistency_files import (
    answers_chunks,
    answers_markdown_chunks,
    heatmap_png,
    submission_chunks,
    submission_name,
)
from robusteval.report.model import slug
from robusteval.results.consistency import (
    ConsistencyExtra,
    ConsistencyMetrics,
    Generation,
    LoaderReport,
    VariationCount,
)
from robusteval.results.spool import Spool
from robusteval.suites.base import SampleBase, SuiteContext, SuiteResult, csv_arg, print_noise_floor
from robusteval.types import Message

NAME = "consistency"
JUDGES = ("oracle", "embedding", "nli")
PROMPT_SETS_FILE = "prompt-sets.jsonl"  # the generated sets, in the run folder (reload with --data)


@dataclass(frozen=True)
class Options:
    judges: tuple[str, ...] = ("oracle", "embedding")
    oracle: str = "llamacpp"
    oracle_mode: str = "set"
    oracle_retries: Annotated[int, Range(0, 100)] = 3
    oracle_max_tokens: Annotated[int, Range(1, 10**7)] = 256
    embedder: str = "auto"
    nli_model: str | None = None
    team: str = "robusteval"
    variations: tuple[str, ...] = ()
    rewriter: str = "llamacpp"
    rewrite_bounds: str = "0.5,0.995"
    save_prompt_sets: str | None = None


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
    p.add_argument("--team", help="team name: the ELOQUENT submission file is TEAM.json (TEAM-MODEL.json "
                                   "with several models), its 'source' the same (default: robusteval)")
    p.add_argument("--variations", type=csv_arg,
                   help="generate the prompt sets: --data holds plain requests (.jsonl of {id, prompt}, or .txt, "
                        "one a line), each becomes the original plus one variant per perturbation named here "
                        "(typo, ocr, helm:dialect, invisible, formality, language:sv, ...; "
                        "robusteval perturb --list)")
    p.add_argument("--rewriter", help="model spec that writes the rewrites of --variations (default: llamacpp)")
    p.add_argument("--rewrite-bounds", dest="rewrite_bounds",
                   help="LOW,HIGH: cosine similarity a same-language rewrite must keep to its original, "
                        "or off (default: 0.5,0.995)")
    p.add_argument("--save-prompt-sets", dest="save_prompt_sets", metavar="FILE",
                   help="also write the generated prompt sets to FILE (JSONL; reload with --data FILE)")


def validate(config: Any, options: Options) -> None:
    if unknown := [j for j in options.judges if j not in JUDGES]:
        raise UserError(f"unknown --judge {','.join(unknown)}; available: {', '.join(JUDGES)}")
    if not options.judges:
        raise UserError("give at least one --judge")
    if "nli" in options.judges and not options.nli_model:
        raise UserError("--judge nli needs --nli-model NAME (a Hugging Face NLI model or a local folder)")
    if options.oracle_mode not in ("set", "pairwise"):
        raise UserError("--oracle-mode must be set or pairwise")
    team = slug(options.team)
    if not team.strip("_") or team in ("results", "samples", "answers") or team.startswith(("answers-", "heatmap-")):
        raise UserError(f"--team {options.team!r}: the submission file would be {team}.json, a name the run "
                        "writes for something else; give your team's name")
    if options.variations:
        from robusteval.probes.registry import get

        for name in options.variations:
            get(name)  # a UserError listing the available names
        if len(set(options.variations)) < len(options.variations):
            raise UserError(f"--variations {','.join(options.variations)}: a name repeats; give each once")
        rewrite_bounds(options.rewrite_bounds)
    elif options.save_prompt_sets:
        raise UserError("--save-prompt-sets writes the prompt sets --variations generates; add --variations")


def rewrite_bounds(text: str) -> tuple[float, float] | None:
    """``--rewrite-bounds``: (low, high), or None for ``off``."""
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--rewrite-bounds {text}: give LOW,HIGH (e.g. 0.5,0.995) or off") from None
    if not -1 <= low < high <= 1:
        raise UserError(f"--rewrite-bounds {text}: need -1 <= LOW < HIGH <= 1 (cosine similarities)")
    return low, high


@dataclass(frozen=True, kw_only=True)
class AnswerSample(SampleBase):
    """One model's answer to one variant (sample k); a line of samples.jsonl. ``variant`` is the
    variant's index in its prompt set; ``variation`` the set's variation type."""

    LABEL = ("model", "variant", "language", "sample")

    variation: str
    language: str
    sample: int = 0
    kind: str = "answer"


@dataclass(frozen=True, kw_only=True)
class RatingSample(SampleBase):
    """One judge's rating of one model's answers to one item; also a line of samples.jsonl."""

    LABEL = ("model", "judge", "scope")

    variation: str
    judge: str
    scope: str  # "variants", or "sampling:N" for the K samples of variant N
    score: float | None
    raw: float | None = None
    detail: str | None = None
    attempts: int = 1
    kind: str = "rating"


async def execute(ctx: SuiteContext[Options]) -> SuiteResult:
    config, options = ctx.config, ctx.options
    source = ctx.audit.source(config.data or "robusteval-en")
    generation = None
    if options.variations:
        items, generation = await _generate(ctx, source)
        report = None
    else:
        items, report = load_prompt_sets(config.data, limit=config.limit, seed=config.seed, audit=source)
        items = ctx.shard_items(items, key=_set_id)
        from rich.text import Text

        for line in report.lines():
            ctx.console.print(Text(line, style="yellow"))
    judges = await _make_judges(ctx)

    async def answer(model: str, item: PromptSet, v: int, k: int) -> AnswerSample:
        variant = item.variants[v]
        r = await ctx.engine.chat(model, (Message("user", variant.prompt),), ctx.params, sample=k)
        return AnswerSample(model=model, item_id=item.id, variation=item.variation, variant=v,
                            language=variant.language, sample=k, prompt=variant.prompt, response=r.text,
                            status="ok" if r.ok else "failed", error=r.error, cached=r.cached, key=r.key)

    async def one(job: tuple[str, PromptSet]) -> tuple[str, list[AnswerSample], list[RatingSample]]:
        """A model's answers to one item's variants, then every judge's ratings of them (a rating
        reads the answers of one item only)."""
        model, item = job
        answers = await gather_all(answer(model, item, v, k) for v in range(len(item.variants))
                                   for k in range(config.samples))
        jobs = [(judge, group) for group in _rating_groups(answers, [item], [model], config.samples)
                for judge in judges.values()]
        return model, answers, await gather_all(_rate(judge, group) for judge, group in jobs)

    def requests(job: tuple[str, PromptSet]) -> int:
        """An item's answers, then the oracle's ratings of them (one group, and one per variant's samples)."""
        item = job[1]
        ratings = 1 + (len(item.variants) if config.samples > 1 else 0)
        oracle = ratings * (1 if options.oracle_mode == "set" else 3) if "oracle" in judges else 0
        return config.samples * len(item.variants) + oracle

    ctx.stage("asking and judging" if "oracle" in judges else "asking")
    # Each answer goes to samples.jsonl as it comes (model by model, item by item: the order they
    # always had), and is then dropped: the ratings (one per item and judge) are kept and written
    # after the answers; the files that show every answer read each model's sample-0 responses back
    # from a spool, an item at a time.
    ratings: list[RatingSample] = []
    said = {model: Spool() for model in ctx.models}  # per model, a line per item: its responses
    async for model, answers, rated in ctx.stream(((m, item) for m in ctx.models for item in items), one,
                                                  requests_per_job=requests, window=ctx.engine.window(),
                                                  write=lambda done: done[1]):
        said[model].write(json.dumps([a.response for a in answers if a.sample == 0]) + "\n")
        ratings += rated
    ctx.samples.write_all(ratings)

    record = summarise(ratings, items, ctx.models, list(judges), seed=config.seed)
    loader = LoaderReport(report.source, list(report.fixes), list(report.skipped)) if report is not None else None
    record = ConsistencyMetrics(judges=record.judges, agreement=record.agreement, loader=loader,
                                generation=generation)
    def responses(model: str) -> Iterator[list[str | None]]:
        return (json.loads(line) for line in said[model].lines())

    files: dict[str, Any] = {}
    for m in ctx.models:  # the ELOQUENT submission (named after the team) and our answers file, per model
        stem = submission_name(options.team, m, ctx.models)
        files[f"{stem}.json"] = partial(lambda m, stem: submission_chunks(zip(items, responses(m)), stem), m, stem)
        files[f"answers-{slug(m)}.json"] = partial(
            lambda m: answers_chunks(zip(items, responses(m)), m, options.team), m)
    files["answers.md"] = lambda: answers_markdown_chunks(
        ((item, dict(zip(ctx.models, row))) for item, row in zip(items, zip(*(responses(m) for m in ctx.models)))),
        ratings, ctx.models)
    if options.variations:
        files[PROMPT_SETS_FILE] = prompt_sets_jsonl(items)
    for name, judge_metrics in record.judges.items():
        png = heatmap_png(judge_metrics, items, ctx.models, name)
        if png is not None:
            files[f"heatmap-{name}.png"] = png
    extra = ConsistencyExtra(items=len(items), variants=sum(len(i.variants) for i in items),
                             judges={name: _judge_info(j) for name, j in judges.items()})
    return SuiteResult(metrics=record, samples=[], extra=extra, files=files)


async def _generate(ctx: SuiteContext[Options], source: Any) -> tuple[list[PromptSet], Generation]:
    """The prompt sets made from ``--data``'s plain requests by ``--variations`` (see
    `probes.prompt_sets`); left-out variants are counted in the data audit and the record."""
    from robusteval.data.prompts import load_prompts
    from robusteval.probes.apply import Rewriter
    from robusteval.probes.prompt_sets import generate_sets, needs_rewriter

    config, options = ctx.config, ctx.options
    # a generated set keeps its request's id, so sharding the requests shards the sets the same way
    prompts = ctx.shard_items(load_prompts(config.data, limit=config.limit, seed=config.seed, audit=source),
                              key=lambda prompt: prompt.id)
    ctx.stage("building variants")
    rewriter = Rewriter(ctx.engine, await ctx.model(options.rewriter)) if needs_rewriter(options.variations) else None
    bounds = rewrite_bounds(options.rewrite_bounds)
    encode = _rewrite_encoder(options, prompts) if rewriter is not None and bounds is not None else None
    out = await generate_sets(prompts, options.variations, seed=config.seed, rewriter=rewriter, encode=encode,
                              bounds=bounds)
    for r in out.rejected:
        source.leave_out(f"variant {r.variation} left out: {r.reason}", r.item_id)
    for item_id in out.dropped:
        source.leave_out("request left out: no variant passed its checks", item_id)
    source.note(f"prompt sets generated by --variations {','.join(options.variations)}; "
                f"stored in the run folder as {PROMPT_SETS_FILE}")
    if not out.sets:
        raise UserError(f"--variations {','.join(options.variations)}: no variant of any request in {config.data} "
                        f"passed its checks ({len(out.rejected)} left out); see the rewriter with --rewriter, "
                        f"or --rewrite-bounds off")
    counts = {}
    for name in options.variations:
        reasons: dict[str, int] = {}
        for r in out.rejected:
            if r.variation == name:
                reasons[r.reason] = reasons.get(r.reason, 0) + 1
        counts[name] = VariationCount(kept=out.kept[name], rejected=sum(reasons.values()), reasons=reasons)
    generation = Generation(prompts=len(prompts), sets=len(out.sets), variations=counts,
                            dropped_prompts=out.dropped, estimated=out.estimated, file=PROMPT_SETS_FILE)
    if options.save_prompt_sets:
        from rich.text import Text

        if ctx.engine.dry_run:  # the rewrites were counted, not written: nothing worth saving
            ctx.console.print(Text(f"--estimate: the prompt sets are not written to {options.save_prompt_sets}"))
        else:
            path = _save(options.save_prompt_sets, prompt_sets_jsonl(out.sets))
            ctx.console.print(Text(f"prompt sets written to {path} (reuse: --data {path})"))
    return out.sets, generation


def _set_id(item: PromptSet) -> str:
    return item.id


def _save(path_text: str, text: str) -> Path:
    path = Path(path_text).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(path, text)
    except OSError as exc:
        raise UserError(f"--save-prompt-sets {path_text}: cannot write it ({exc.strerror or exc})") from None


def _rewrite_encoder(options: Options, prompts: Any) -> Any:
    """The sentence embedder that checks rewrites' similarity to their originals (timed: a local model)."""
    from robusteval.judges.embedding import load_embedder

    languages = tuple(p.language for p in prompts)
    name = options.embedder if options.embedder != "auto" else (
        "minilm" if all(lang.lower().startswith("en") for lang in languages) else "e5")
    return lambda texts: load_embedder(name).encode(texts)


async def _make_judges(ctx: SuiteContext[Options]) -> dict[str, SimilarityJudge]:
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

            assert options.nli_model is not None  # validate() requires it
            load_nli(options.nli_model)  # fail early, before any answer is asked
            judges[name] = NLIJudge(options.nli_model)
    return judges


def _judge_info(judge: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"class": type(judge).__name__}
    for attribute in ("model", "mode", "retries", "embedder", "model_name", "calibrations"):
        if hasattr(judge, attribute):
            info[attribute] = getattr(judge, attribute)
    if (clock := getattr(judge, "clock", None)) is not None:  # a local model: its time, off the event loop
        info["local_model_s"] = round(sum(t.seconds for t in clock.spent.values()), 3)
        info["local_model_calls"] = sum(t.calls for t in clock.spent.values())
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


async def _rate(judge: SimilarityJudge, group: _Group) -> RatingSample:
    failed = [a for a in group.answers if a.status != "ok"]
    if failed:
        return _rating(judge, group, Rating(None, attempts=0), status="failed",
                       error=f"{len(failed)} answer(s) failed: {failed[0].error}")
    languages = tuple(a.language for a in group.answers)
    rating: Rating = await judge.rate([a.response or "" for a in group.answers], group.item.hint, languages)
    return _rating(judge, group, rating, status="ok" if rating.score is not None else "invalid")


def _rating(judge: SimilarityJudge, group: _Group, rating: Rating, *, status: str,
            error: str | None = None) -> RatingSample:
    return RatingSample(model=group.model, item_id=group.item.id, variation=group.item.variation, judge=judge.name,
                        scope=group.scope, score=rating.score, raw=rating.raw, detail=rating.detail,
                        attempts=rating.attempts, status=status, error=error)


def print_summary(console: Console, result: SuiteResult) -> None:
    from robusteval.report.terminal_consistency import print_consistency

    print_consistency(console, result.metrics, result.extra, result.determinism)
    print_noise_floor(console, result.determinism)
