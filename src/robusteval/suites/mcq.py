"""The `mcq` suite (SCORE robustness): one question asked under option formats, option orders,
prompt templates, few-shot examples, and any perturbation of its text (typos, paraphrase, dialect,
OCR noise, translation...).

A group is one question's variants. Each reply is read to a shown label, mapped back to the
original option through the variant's permutation, and scored; metrics (`metrics/mcq.py`) then ask
how accurate each variant is and how often the variants of one question agree. A perturbation
family's group is the original question and its perturbed copies, written before the questions are
asked (`write_copies`); a copy that fails its checks is left out of its group and counted.

The ``seeds`` family asks the base prompt K times at temperature T (``--seeds``,
``--seed-temperature``): each draw is a variant with its own sample index and backend seed.

Open-answer math (``--data gsm8k``, ``math``, ``math500``, or a file of their schema) is a mode of
this suite, not a suite of its own: the same families (``prompt``, ``seeds``), metrics, report and
``--budget``, with the problem under math templates (`probes.math_prompts`) and the final answer
read by `readers.math` instead of an option letter (`ask_math`).

``--budget F`` asks only about F of each family's (item, variant) cells (`metrics.budget.plan`) and
records an estimate of the full grid (`results.budget`); the same command without it asks the rest.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import Annotated, Any, NamedTuple

from robusteval.data.audit import DataAudit
from robusteval.data.math import MathItem, is_math_source, load_math
from robusteval.data.mcq import DUPLICATE_RULES, load_dev_items, load_file, load_items, parse_columns
from robusteval.engine import gather_all
from robusteval.errors import UserError
from robusteval.metrics.budget import (
    DESIGNS as BUDGET_DESIGNS,
    FIRST,
    Grid,
    estimate,
    grow,
    name_covariates,
    observed_grid,
    plan,
)
from robusteval.metrics.mcq import McqTally
from robusteval.probes.apply import Perturbed, Rewriter, perturb_item
from robusteval.probes.design import FAMILIES, Copy, Design, expand, template_styles
from robusteval.probes.fewshot import ShotPool
from robusteval.probes.math_prompts import FAMILIES as MATH_FAMILIES, expand_math, load_math_templates
from robusteval.probes.registry import Rewrite, available, get, is_perturbation
from robusteval.probes.template_check import check_templates
from robusteval.probes.templates import BASE, Template, load_template_set, template_set_name
from robusteval.ranges import Range
from robusteval.readers import DEFAULT_READER, READERS, Reader, get_reader
from robusteval.readers.math import is_equivalent, read_math
from robusteval.results.budget import BudgetEstimate, budget_json, read_budget
from robusteval.results.codec import encode
from robusteval.results.mcq import CopyCounts, read_metrics, to_json
from robusteval.suites.base import SampleBase, SuiteContext, SuiteResult, csv_arg, print_noise_floor
from robusteval.types import GenParams, Item, Response, Variant

NAME = "mcq"
DEFAULT_FAMILIES = ("order", "format")
DEFAULT_DATA = "mmlu"
DEFAULT_REWRITER = "llamacpp"


@dataclass(frozen=True)
class Options:
    """mcq's own settings (flags and YAML keys of the same names)."""

    families: tuple[str, ...] = DEFAULT_FAMILIES
    cross: tuple[str, ...] = ()
    scoring: str = "generate"
    templates: str | None = None
    shots: str | None = None
    n_shots: Annotated[int, Range(1, 100)] = 5
    fewshot_multiturn: bool = True
    perturbations_per_family: Annotated[int, Range(1, 100)] = 2
    perturb_options: bool = False
    rewriter: str = DEFAULT_REWRITER
    seeds: Annotated[int, Range(2, 1000, hint='the seeds family compares draws')] = 5
    seed_temperature: Annotated[float, Range(0, 10, low_open=True)] = 0.7  # greedy draws would be one reply
    budget: Annotated[float, Range(0, 1, low_open=True, hint='e.g. --budget 0.1')] | None = None
    budget_design: str = "stratified"
    duplicates: str = "drop-both"
    reader: str = DEFAULT_READER
    columns: str | None = None  # question=Q,choices=A|B|C|D,answer=Gold: the --data file's column names


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", help="the --data file's column names, e.g. question=Question,choices=A|B|C|D,"
                                     "answer=Answer (also subject=, id=); answers as a letter, an index or "
                                     "the option's text")
    p.add_argument("--families", type=csv_arg,
                   help="comma-separated families (default: order,format): format, order, prompt, fewshot, or a "
                        "perturbation of the question (typo, paraphrase, helm:typos, invisible, typo@0.3, "
                        "language:de, ...; robusteval perturb --list)")
    p.add_argument("--scoring", choices=("generate", "loglik"),
                   help="generate: the model writes its answer (default); loglik: options scored by log-likelihood")
    p.add_argument("--cross", type=csv_arg,
                   help="also run the full design of these families crossed, e.g. format,order or typo,order")
    p.add_argument("--templates", help="YAML file of prompt templates for the prompt/fewshot families, or score: "
                                        "SCORE's own 10 prompts and its option-order prompt (A: labels)")
    p.add_argument("--shots",
                   help="JSONL/CSV file the few-shot examples are drawn from (default: the dataset's dev split)")
    p.add_argument("--shots-per-question", dest="n_shots", type=int, help="worked examples per question (default: 5)")
    p.add_argument("--fewshot-as-multiturn", dest="fewshot_multiturn", action=argparse.BooleanOptionalAction,
                   default=None, help="shots as user/assistant turns (default) or in one prompt")
    p.add_argument("--perturbations-per-family", dest="perturbations_per_family", type=int,
                   help="perturbed copies of each question per perturbation family (default: 2)")
    p.add_argument("--perturb-options", dest="perturb_options", action=argparse.BooleanOptionalAction, default=None,
                   help="perturb the options' texts too (default: the question only)")
    p.add_argument("--rewriter", help="model spec that writes rewrites such as paraphrase or dialect "
                                      f"(default: {DEFAULT_REWRITER}, the embedded model)")
    p.add_argument("--seeds", type=int, help="draws of the seeds family (default: 5)")
    p.add_argument("--seed-temperature", dest="seed_temperature", type=float,
                   help="temperature of the seeds family's draws (default: 0.7)")
    p.add_argument("--reader", choices=tuple(READERS),
                   help="how an answer is read from a reply (default: robusteval): " +
                        "; ".join(f"{r.name}: {r.summary}" for r in READERS.values()).replace("%", "%%"))
    p.add_argument("--budget", type=float,
                   help="ask only this share (0 < F <= 1) of each family's (question, variant) cells and "
                        "estimate the full grid; the same command without it asks the rest")
    p.add_argument("--duplicates", choices=DUPLICATE_RULES,
                   help="rows repeating a question and its options with another answer (AGIEval sat-en): "
                        "drop-both (default: which label is right cannot be told), keep-first, or keep-all "
                        "(as published, SCORE's choice); the data audit counts them")
    p.add_argument("--budget-design", dest="budget_design",
                   help="stratified: the cells spread evenly over questions and variants (default); adaptive: "
                        # argparse %-formats help: the shares' % signs doubled
                        f"{1 - FIRST:.0%}% of them where the fit of the first {FIRST:.0%}%'s answers is least sure")


def validate(config: Any, options: Options) -> None:
    known = f"available: {', '.join(FAMILIES)}, and the perturbations {', '.join(available())}"
    for flag, names in (("--families", options.families), ("--cross", options.cross)):
        for name in names:
            if ":" in name and name not in FAMILIES:
                get(name)  # a parameterised perturbation says what is wrong with its argument (language:zz)
        if unknown := [f for f in names if f not in FAMILIES and not is_perturbation(f)]:
            raise UserError(f"unknown {flag} {','.join(unknown)}; {known}")
        for name in names:
            if name not in FAMILIES:
                get(name)  # loads what it needs (HELM's word lists): a missing one ends here, before any request
    parse_columns(options.columns)  # a UserError naming --columns, before anything runs
    if not options.families and not options.cross:
        raise UserError("give at least one family with --families (or a design with --cross)")
    if len(options.cross) == 1:
        raise UserError("--cross needs two or more families, e.g. --cross format,order")
    if len(perturbation_families(options.cross)) > 1:
        raise UserError("--cross takes at most one perturbation of the question (each would replace the "
                        "other's text), e.g. --cross typo,order")
    for ok, message in (
        (options.scoring in ("generate", "loglik"), "--scoring must be generate or loglik"),
        (options.scoring == "generate" or config.samples == 1, "--samples applies to --scoring generate only"),
        (options.budget_design in BUDGET_DESIGNS, f"--budget-design must be one of {', '.join(BUDGET_DESIGNS)}"),
        (options.budget is not None or options.budget_design == "stratified", "--budget-design applies with --budget"),
    ):
        if not ok:
            raise UserError(message)
    sampled = "seeds" in (*options.families, *options.cross)
    if sampled and options.scoring != "generate":
        raise UserError("the seeds family samples written replies: use it with --scoring generate")
    if sampled and config.samples != 1:
        raise UserError("--samples repeats every variant; with the seeds family give the draws with --seeds K")
    get_reader(options.reader)  # an unknown name (from YAML) stops here
    if options.reader != DEFAULT_READER and options.scoring != "generate":
        raise UserError("--reader reads written replies: use it with --scoring generate")
    if is_math_source(config.data):
        validate_math(options)


def validate_math(options: Options) -> None:
    """Open-answer math has no options: only the families that do not need them apply."""
    families = math_families(options)
    if other := [f for f in (*families, *options.cross) if f not in MATH_FAMILIES] or options.cross:
        raise UserError(f"--data is open-answer math (no options): {', '.join(other) or '--cross'} cannot apply; "
                        f"use --families {','.join(MATH_FAMILIES)} (or one of them)")
    if options.scoring != "generate":
        raise UserError("--data is open-answer math: the model writes its answer (--scoring generate only)")
    if options.reader != DEFAULT_READER:
        raise UserError("--reader reads option labels; open-answer math is read by its own rules (readers/math.py)")


def math_families(options: Options) -> tuple[str, ...]:
    """The families asked of open-answer math: those given, or ``prompt,seeds`` for mcq's default
    (``order,format``, which need options)."""
    return MATH_FAMILIES if options.families == DEFAULT_FAMILIES else options.families


def perturbation_families(names: tuple[str, ...]) -> tuple[str, ...]:
    """The names among ``names`` that perturb the question's text (not format/order/prompt/fewshot)."""
    return tuple(dict.fromkeys(n for n in names if n not in FAMILIES))


async def execute(ctx: SuiteContext[Options]) -> SuiteResult:
    config, options = ctx.config, ctx.options
    data = config.data or DEFAULT_DATA
    if is_math_source(data):
        return await execute_math(ctx, data)
    items = ctx.shard_items(load_items(data, limit=config.limit, seed=config.seed, audit=ctx.audit,
                                       duplicates=options.duplicates, columns=parse_columns(options.columns)),
                            key=_item_id)
    reader = get_reader(options.reader)
    design, design_info = build_design(config, options, data, ctx.audit)
    if options.scoring == "generate":  # under loglik nothing is written, so nothing is read
        # before any request: a template whose answer the reader cannot read would make every reply invalid
        check_templates(template_styles(options.families, options.cross, design), reader,
                        max((len(i.options) for i in items), default=2))
        design_info["reader"] = reader.name
    perturbing = perturbation_families((*options.families, *options.cross))
    counts: list[CopyCounts] = []
    if perturbing:
        ctx.stage("building variants")
        needs_model = any(isinstance(get(f), Rewrite) for f in perturbing)
        rewriter = Rewriter(ctx.engine, await ctx.model(options.rewriter)) if needs_model else None
        copies, counts = await write_copies(ctx.ask_all, items, perturbing, k=options.perturbations_per_family,
                                            seed=config.seed, rewriter=rewriter,
                                            with_options=options.perturb_options)
        design = replace(design, copies=copies)
        record_counts(ctx.audit, counts)
        design_info |= {"perturbations_per_family": options.perturbations_per_family,
                        "perturb_options": options.perturb_options,
                        **({"rewriter": rewriter.model} if rewriter else {})}
    grids = None
    if options.budget is not None:
        grids = plan([i.id for i in items], ((i.id, v.family, v.name) for i in items
                                             for v in expand(i, options.families, design, options.cross)),
                     options.budget, seed=config.seed, first=_first(options))
        design_info |= {"budget": options.budget, "budget_design": options.budget_design}
    metrics_by_model, budget, invalid = {}, {}, {}
    ctx.stage("asking")
    for model in ctx.models:
        # Each sample goes to samples.jsonl and into the compact tally as it is read, and is then
        # dropped: memory does not grow with the number of samples (metrics/mcq.py, engine/stream.py).
        tally = McqTally([item.id for item in items])
        asked: list[Cell] = []  # --budget: the cells answered, for the full grid's estimate

        def keep(sample: Sample, tally: McqTally = tally, asked: list[Cell] = asked) -> None:
            tally.add(sample)  # written to samples.jsonl by `SuiteContext.stream`
            if grids is not None:
                asked.append(Cell(sample.family, sample.item_id, sample.variant, sample.correct))

        async def ask_cells(cells: set[tuple[str, str, str]] | None, keep: Callable[[Sample], None] = keep,
                            model: str = model) -> None:
            if options.scoring == "loglik":
                await ask_loglik(ctx, model, items, options.families, design, options.cross, keep, cells)
            else:
                await ask_each(ctx, model, items, options.families, ctx.params, config.samples, design,
                               options.cross, keep, cells=cells, reader=reader)

        if grids is not None:
            model_grids = await ask_budgeted(grids, ask_cells, asked)
        else:
            await ask_cells(None)
        if not ctx.engine.dry_run:  # --estimate: nothing was answered, nothing to measure
            metrics_by_model[model] = tally.metrics(options.families, cross=options.cross, seed=config.seed)
            invalid[model] = tally.invalid_replies()
            if grids is not None:
                budget[model] = budget_estimates(model_grids, asked, options.budget or 1.0, config.seed)
    extra: dict[str, Any] = {"design": design_info}
    if counts:
        extra["perturbations"] = {c.family: encode(c) for c in counts}
    if budget:
        extra["budget"] = budget_json(budget)
    if any(counts.invalid for counts in invalid.values()):  # only where some reply was unreadable
        extra["invalid_replies"] = {model: encode(counts) for model, counts in invalid.items() if counts.invalid}
    return SuiteResult(metrics=to_json(metrics_by_model), samples=[], extra=extra)


class Cell(NamedTuple):
    """What a budget estimate reads of an answered sample."""

    family: str
    item_id: str
    variant: str | int
    correct: bool | None


def _first(options: Options) -> float:
    """The share of the budget chosen before any answer: all of it, or FIRST when adaptive."""
    return FIRST if options.budget_design == "adaptive" else 1.0


def _asked_cells(grids: dict[str, Grid] | None) -> set[tuple[str, str, str]] | None:
    return None if grids is None else set().union(*(g.cells() for g in grids.values()))


async def ask_budgeted(grids: dict[str, Grid], ask_cells: Callable[[set[tuple[str, str, str]]], Awaitable[None]],
                       answered: list) -> dict[str, Grid]:
    """``--budget``'s two stages for one model: the grids' first-stage cells, then (`metrics.budget.grow`)
    the cells where the fit of those answers is least sure. ``ask_cells`` asks a set of cells and
    appends their answers to ``answered``; returns the grids with both stages. Under ``--estimate``
    nothing is answered, and the second stage is counted as a seeded draw of the same size."""
    first = _asked_cells(grids) or set()
    await ask_cells(first)
    # under --scoring loglik a grid's (``order``) answers are its label rule's, the rule every backend scores
    grown = {family: grow(grid, observed_grid(grid, _answers(answered, family, f"{family}/{LOGLIK}label")))
             for family, grid in grids.items()}
    await ask_cells((_asked_cells(grown) or set()) - first)
    return grown


def _chosen(cells: set[tuple[str, str, str]] | None, item_id: str, variant: Variant) -> bool:
    """Whether a variant is asked: every one without ``cells``, else those ``--budget`` chose."""
    return cells is None or (item_id, variant.family, variant.name) in cells


def _answers(answered: Iterable, *families: str) -> Iterator[tuple[str, str, bool | None]]:
    """The (item id, variant name, correct) answers of any of ``families``."""
    return ((c.item_id, str(c.variant), c.correct) for c in answered if c.family in families)


def budget_estimates(grids: dict[str, Grid], samples: list, budget: float, seed: int) -> dict[str, BudgetEstimate]:
    """Per family answered, the full grid's estimate from the cells this model answered: under
    --scoring loglik each rule's family (``order/loglik-text``) on its grid's (``order``) cells."""
    out = {}
    for family in dict.fromkeys(c.family for c in samples):
        grid = grids[family.split(f"/{LOGLIK}")[0]]
        out[family] = estimate(observed_grid(grid, _answers(samples, family)), names=grid.variants, exists=grid.exists,
                               covariates=name_covariates(grid.variants), budget=budget, seed=seed)
    return out


async def execute_math(ctx: SuiteContext[Options], data: str) -> SuiteResult:
    """Open-answer math: the problems under the prompt and seeds families, answers read by `readers.math`."""
    config, options = ctx.config, ctx.options
    problems, _ = load_math(data, limit=config.limit, seed=config.seed, audit=ctx.audit.source(data))
    problems = ctx.shard_items(problems, key=_problem_id)
    families = math_families(options)
    if families != options.families:  # mcq's default order,format needs options: said, never silent
        ctx.audit.source(data).note(f"open-answer math has no options: families {','.join(families)} "
                                    f"instead of {','.join(options.families)}")
    templates = load_math_templates(options.templates)
    design = Design(templates, seed=config.seed, seeds=options.seeds, seed_temperature=options.seed_temperature)
    design_info: dict[str, Any] = {"answers": "open (math)", "templates": [t.name for t in templates],
                                   "families": list(families)}
    if "seeds" in families:
        design_info |= {"seeds": options.seeds, "seed_temperature": options.seed_temperature}
    grids = None
    if options.budget is not None:
        grids = plan([p.id for p in problems], ((p.id, v.family, v.name) for p in problems
                                                for v in expand_math(p, families, design)),
                     options.budget, seed=config.seed, first=_first(options))
        design_info |= {"budget": options.budget, "budget_design": options.budget_design}
    ids = [p.id for p in problems]
    metrics_by_model, budget, invalid = {}, {}, {}
    ctx.stage("asking")
    for model in ctx.models:
        # as the generate path: each sample to samples.jsonl and the compact tally, then dropped
        tally = McqTally(ids)
        asked: list[Cell] = []

        def keep(sample: Sample, tally: McqTally = tally, asked: list[Cell] = asked) -> None:
            tally.add(sample)  # written to samples.jsonl by `SuiteContext.stream`
            if grids is not None:
                asked.append(Cell(sample.family, sample.item_id, sample.variant, sample.correct))

        async def ask_cells(cells: set[tuple[str, str, str]] | None, keep: Callable[[Sample], None] = keep,
                            model: str = model) -> None:
            await ask_math(ctx, model, problems, families, ctx.params, config.samples, design, keep, cells)

        model_grids = None
        if grids is not None:
            model_grids = await ask_budgeted(grids, ask_cells, asked)
        else:
            await ask_cells(None)
        if not ctx.engine.dry_run:
            metrics_by_model[model] = tally.metrics_in_order(families, seed=config.seed)
            invalid[model] = tally.invalid_replies()
            if model_grids is not None:
                budget[model] = budget_estimates(model_grids, asked, options.budget or 1.0, config.seed)
    extra: dict[str, Any] = {"design": design_info}
    if budget:
        extra["budget"] = budget_json(budget)
    if any(counts.invalid for counts in invalid.values()):  # only where some reply was unreadable
        extra["invalid_replies"] = {model: encode(counts) for model, counts in invalid.items() if counts.invalid}
    return SuiteResult(metrics=to_json(metrics_by_model), samples=[], extra=extra)


def _problem_id(problem: MathItem) -> str:
    return problem.id


def _item_id(item: Item) -> str:
    return item.id


def print_summary(console, result: SuiteResult) -> None:
    from robusteval.report.budget import print_budget
    from robusteval.report.table import print_copy_counts, print_invalid_warning, print_mcq
    from robusteval.results.mcq import read_copy_counts, read_invalid

    invalid = read_invalid(result.extra)
    reader = (result.extra.get("design") or {}).get("reader")
    for model, model_metrics in read_metrics(result.metrics).items():
        if model in invalid:  # first: the figures below count each invalid reply as wrong
            print_invalid_warning(console, model, invalid[model], reader)
        print_mcq(console, model, model_metrics)
    print_copy_counts(console, read_copy_counts(result.extra))
    truths = read_budget(result.extra, "budget_truth")  # score GRID --budget: the full grid's own figures
    for model, estimates in read_budget(result.extra).items():
        print_budget(console, model, estimates, truths.get(model))
    print_noise_floor(console, result.extra)


def build_design(config: Any, options: Options, data: str, audit: DataAudit | None = None) -> tuple[Design, dict]:
    """Templates and shot pool for the families asked; the info dict goes into results.json
    (where shots come from a file or a dev split, its audit goes into ``audit``)."""
    families = set(options.families) | set(options.cross)
    templates: tuple[Template, ...] = (BASE,)
    base = BASE
    if options.templates or families & {"prompt", "fewshot"}:
        templates, base = load_template_set(options.templates, data)
        templates = templates if families & {"prompt", "fewshot"} else (BASE,)
    info: dict = {"templates": [t.name for t in templates], "cross": list(options.cross)}
    if base is not BASE:
        info["base_template"] = base.name
    if named := template_set_name(options.templates, data):
        info["template_set"] = named
    shots = None
    if "fewshot" in families:
        if options.shots:
            shots = ShotPool(tuple(load_file(options.shots, audit)), options.shots)
        elif (dev := load_dev_items(data, audit)) is not None:
            shots = ShotPool(tuple(dev[0]), dev[1])
        else:
            shots = ShotPool(tuple(load_items(data)),
                             "the evaluated set itself (it has no dev split), never the question being asked")
        info |= {"shots_source": shots.source, "shots_per_question": options.n_shots,
                 "fewshot_as_multiturn": options.fewshot_multiturn}
    if "seeds" in families:
        info |= {"seeds": options.seeds, "seed_temperature": options.seed_temperature}
    return Design(templates, shots, options.n_shots, options.fewshot_multiturn, config.seed, options.seeds,
                  options.seed_temperature, base=base), info


# ------------------------------------------------------------------ perturbed copies of the questions

AskAll = Callable[[list, Callable[[Any], Awaitable[Any]]], Awaitable[list]]
_BARE = re.compile(r"\s*(?:\w|[-+]?[\d.,/%]+)\s*")  # one character, or a bare number


def gold_aliases(item: Item) -> tuple[str, ...]:
    """What a rewrite of the question must not newly contain: the gold option's text, unless it is
    one character or a bare number ("B", "42"), which a faithful rewrite can hold by chance
    (whole-word matches of such a text say nothing about leaking the answer)."""
    gold = item.options[item.answer]
    return () if _BARE.fullmatch(gold) else (gold,)


async def write_copies(ask_all: AskAll, items: list[Item], families: tuple[str, ...], *, k: int, seed: int,
                       rewriter: Rewriter | None, with_options: bool = False
                       ) -> tuple[dict[str, dict[str, tuple[Copy, ...]]], list[CopyCounts]]:
    """``k`` perturbed copies of every item's question per family (copy ``j`` seeded from the run's
    seed, the item, the family and ``j``; rewrites through ``rewriter``, cached). Returns the copies
    that passed their checks, by item and family, and per family what became of the others.

    Under ``--estimate`` a rewrite is counted, not written: its copy keeps the original text with
    its name appended, so the questions it would be asked are counted as requests of their own."""
    jobs = [(item, family, j) for family in families for item in items for j in range(1, k + 1)]

    async def one(job: tuple[Item, str, int]) -> tuple[Perturbed, tuple[Perturbed, ...]]:
        item, family, j = job
        copy_seed = f"{seed}:{item.id}:{family}#{j}"
        return await perturb_item(family, item.question, item.options, seed=copy_seed, instance=(item.id, seed + j - 1),
                                  rewriter=rewriter, answers=gold_aliases(item), with_options=with_options)

    done = await ask_all(jobs, one)
    copies: dict[str, dict[str, list[Copy]]] = {item.id: {f: [] for f in families} for item in items}
    tally: dict[str, Counter[str]] = {f: Counter() for f in families}
    reasons: dict[str, Counter[str]] = {f: Counter() for f in families}
    for (item, family, j), (question, options) in zip(jobs, done):
        name = f"{family}#{j}"
        parts = (question, *options)
        for p in parts:
            reasons[family].update(p.rejections)
        verdict = _verdict(parts)
        tally[family][verdict] += 1
        if verdict == "rejected" and not question.rejections:
            reasons[family]["unchanged"] += 1  # a pure perturbation found nothing to change
        if verdict == "failed" or verdict == "rejected":
            continue
        text = f"{item.question} ({name})" if verdict == "estimated" else question.text
        # an option no perturbation could change (or whose rewrite was refused) keeps its text
        opts = tuple(p.text or p.original for p in options) if options and verdict != "estimated" else None
        copies[item.id][family].append(Copy(name, text or item.question, opts))
    counts = [CopyCounts(family=f, kind=get(f).kind, asked=len(items) * k,
                         kept=tally[f]["kept"] + tally[f]["estimated"], rejected=tally[f]["rejected"],
                         failed=tally[f]["failed"], estimated=tally[f]["estimated"], reasons=dict(reasons[f]),
                         rewriter=rewriter.model if rewriter and isinstance(get(f), Rewrite) else None)
              for f in families]
    return {i: {f: tuple(c) for f, c in fams.items()} for i, fams in copies.items()}, counts


def _verdict(parts: tuple[Perturbed, ...]) -> str:
    """kept | estimated | failed (a rewrite request failed) | rejected: the question's copy never
    passed its checks, or a pure perturbation changed nothing (the copy would be the original)."""
    question = parts[0]
    if any(p.estimated for p in parts):
        return "estimated"
    if any(p.error is not None for p in parts):
        return "failed"
    if question.text is None or question.text == question.original:
        return "rejected"
    return "kept"


def record_counts(audit: DataAudit, counts: list[CopyCounts]) -> None:
    """The copies left out, in the run's data audit (results.json ``data`` and the report's Data section)."""
    for c in counts:
        source = audit.source(f"{c.family} copies" + (f" (written by {c.rewriter})" if c.rewriter else ""))
        source.rows_read += c.asked
        source.rows_used += c.kept
        for _ in range(c.rejected):
            source.leave_out("failed its checks")
        for _ in range(c.failed):
            source.leave_out("rewrite request failed")
        if c.estimated:
            source.note(f"--estimate: {c.estimated} copies counted, not written")
        for reason, n in c.reasons.items():
            source.anomalies[f"attempt refused: {reason}"] += n


# ------------------------------------------------------------------ asking


@dataclass(frozen=True, kw_only=True)
class Sample(SampleBase):
    """One variant's request, reply and verdict; a line of samples.jsonl.

    ``family`` is the family as results name it (``order``, ``format×order``, and under loglik
    scoring ``order/loglik-label``); ``base_family`` the design family it came from and ``rule``
    the log-likelihood rule (None when the model wrote its answer), so nothing parses ``family``."""

    LABEL = ("model", "family", "variant", "sample")

    category: str | None
    family: str
    base_family: str = ""
    rule: str | None = None
    sample: int = 0
    labels: tuple[str, ...] = ()
    order: tuple[int, ...] = ()
    turns: int = 1  # with fewshot, earlier turns hold the shots; ``prompt`` is the last user message
    answer_label: str | None = None
    # Indices in the original options; of the first option with the chosen text where a release
    # repeats an option's text (aqua-rat: "8.75" at A and C), so either copy is the same answer.
    answer_option: int | None = None
    gold_option: int = 0
    gold_label: str = ""
    correct: bool | None = None  # None when the request failed
    logliks: tuple[float, ...] = ()  # --scoring loglik: each shown option's score (POSIX reads them)


async def ask_each(ctx: SuiteContext, model: str, items: list[Item], families: tuple[str, ...], params: GenParams,
                   samples: int, design: Design, cross: tuple[str, ...], emit: Callable[[Sample], None],
                   cells: set[tuple[str, str, str]] | None = None, reader: Reader | None = None) -> None:
    """`ask`, handing each sample to ``emit`` in the same order instead of returning them all
    (`_stream`): neither the prompts nor the samples of the whole run are ever held at once."""
    read = reader or get_reader()
    await _stream(ctx, model, items, lambda item: expand(item, families, design, cross),
                  partial(_sample, reader=read), params, samples, design, emit, cells)


async def _stream(ctx: SuiteContext, model: str, items: list, expand_item: Callable[[Any], Iterable[Variant]],
                  make_sample: Callable[[str, Any, Variant, int, Response], Sample], params: GenParams,
                  samples: int, design: Design, emit: Callable[[Sample], None],
                  cells: set[tuple[str, str, str]] | None) -> None:
    """Ask every variant of every item (``cells``: only those), ``samples`` times each, and hand each
    sample to ``emit`` in the variants' order (written to samples.jsonl first): the variants are
    made item by item as the requests go out (`SuiteContext.stream`, a bounded window of requests)."""
    def jobs() -> Iterator[tuple[Any, Variant, int]]:
        for item in items:
            for v in expand_item(item):
                if _chosen(cells, item.id, v):
                    for k in range(samples):
                        yield item, v, k

    async def one(job: tuple[Any, Variant, int]) -> Sample:
        item, variant, k = job
        p, index = decoding(params, variant, design, k)
        return make_sample(model, item, variant, k, await ctx.engine.chat(model, variant.messages, p, sample=index))

    async for sample in ctx.stream(jobs(), one, requests_per_job=1):
        emit(sample)


def decoding(params: GenParams, variant: Variant, design: Design, k: int) -> tuple[GenParams, int]:
    """The generation parameters and sample index of a variant's ``k``-th request: the run's own,
    or for a draw of the seeds family the family's temperature, the backend seed ``run seed +
    draw`` and the draw as sample index (both enter the cache key: draw 3 is the same request
    whether K is 5 or 10)."""
    if variant.draw is None:
        return params, k
    return replace(params, temperature=design.seed_temperature, seed=(params.seed or 0) + variant.draw), variant.draw


@dataclass(frozen=True, kw_only=True)
class MathSample(Sample):
    """An open-answer math reply: the answer as written, the gold, and the rule that found the answer
    (`readers.math`). ``answer_option`` is 0 for an answer equal to the gold, else a number that
    names its normalised text (so the consistency rate compares answers), None when none was found."""

    answer_text: str | None = None
    gold_answer: str = ""
    extraction: str | None = None


async def ask_math(ctx: SuiteContext, model: str, problems: list[MathItem], families: tuple[str, ...],
                   params: GenParams, samples: int, design: Design, emit: Callable[[Sample], None],
                   cells: set[tuple[str, str, str]] | None = None) -> None:
    """Ask every variant of every problem (``cells``: only those), read the final answers and hand
    each sample to ``emit`` in the variants' order, as `ask_each` does (`_stream`)."""
    await _stream(ctx, model, problems, lambda problem: expand_math(problem, families, design), _math_sample,
                  params, samples, design, emit, cells)


def _math_sample(model: str, problem: MathItem, variant: Variant, k: int, response: Response) -> MathSample:
    answer = read_math(response.text)
    correct = None if answer.status == "failed" else is_equivalent(answer, problem.answer)
    option = None if answer.normalized is None else 0 if correct else _answer_id(answer.normalized)
    return MathSample(
        model=model, item_id=problem.id, category=problem.category, family=variant.family,
        base_family=variant.family, variant=variant.name, sample=k, prompt=variant.messages[-1].content,
        response=response.text, error=response.error, status=answer.status, answer_option=option,
        correct=correct, cached=response.cached, key=response.key, answer_text=answer.text,
        gold_answer=problem.answer, extraction=answer.rule)


def _answer_id(normalized: str) -> int:
    """A stable positive number for a wrong answer's normalised text (exact in a float64 array)."""
    return 1 + int(hashlib.sha256(normalized.encode()).hexdigest()[:12], 16)


ANSWER_PREFIX = "The best answer is"
LOGLIK = "loglik-"  # a loglik rule's family: order/loglik-label


async def ask_loglik(ctx: SuiteContext, model: str, items: list[Item], families: tuple[str, ...],
                     design: Design, cross: tuple[str, ...], emit: Callable[[Sample], None],
                     cells: set[tuple[str, str, str]] | None = None) -> None:
    """Score each shown option by log-likelihood instead of asking the model to write (base models).

    After the prompt and the reply prefix "The best answer is", three rules pick an option:
    ``label`` (log P of " B"), ``text`` (log P of the option's text) and ``text-norm`` (that, per
    character, as lm-evaluation-harness's acc_norm). Each rule's answers form their own family,
    e.g. ``order/loglik-label``, with all the usual metrics. Backends that return no prompt
    log-probabilities (llama.cpp) score labels only.

    Each variant is one job (its options' scores asked together) in a bounded window
    (`SuiteContext.stream`); its samples go to ``emit`` in the variants' order, rule by rule.
    ``cells`` (item id, family, variant name: ``--budget``): only those variants.
    """
    engine = ctx.engine
    with_text = engine.supports_text_loglik(model)

    def variants() -> Iterator[tuple[Item, Variant]]:
        return ((item, v) for item in items for v in expand(item, families, design, cross)
                if _chosen(cells, item.id, v))

    async def one(job: tuple[Item, Variant]) -> list[Sample]:
        item, v = job
        shown = _shown_options(item, v) if with_text else []
        continuations = [f" {label}" for label in v.labels] + [f" {text}" for text in shown]
        replies = await gather_all(engine.loglik(model, v.messages, c, ANSWER_PREFIX) for c in continuations)
        scored = {"label": replies[:len(v.labels)]}
        if with_text:
            texts = replies[len(v.labels):]
            scored["text"] = texts
            scored["text-norm"] = [replace(r, loglik=r.loglik / max(1, len(shown[p]) + 1))
                                   if r.loglik is not None else r for p, r in enumerate(texts)]
        return [_loglik_sample(model, item, v, rule, responses) for rule, responses in scored.items()]

    def requests(job: tuple[Item, Variant]) -> int:
        return len(job[1].labels) + (len(job[1].order) if with_text else 0)

    # about a window of requests under way (a variant is one job of several requests)
    widest = max((len(item.options) for item in items), default=1) * (2 if with_text else 1)
    async for group in ctx.stream(variants(), one, requests_per_job=requests, window=engine.window() // widest):
        for sample in group:
            emit(sample)


def _shown_options(item: Item, v: Variant) -> list[str]:
    """The option texts in the order the variant shows them (the item's own texts)."""
    return [item.options[i] for i in v.order]


def _loglik_sample(model: str, item: Item, v: Variant, rule: str, responses: list[Response]) -> Sample:
    failed = next((r for r in responses if not r.ok), None)
    scores = [r.loglik if r.loglik is not None else float("-inf") for r in responses]  # all set unless failed
    text = None if failed else " ".join(f"{label}={score:.4f}" for label, score in zip(v.labels, scores))
    position = None if failed else max(range(len(scores)), key=scores.__getitem__)
    reply = None if position is None else f"{ANSWER_PREFIX} {v.labels[position]}"
    response = Response(key=responses[0].key, text=reply, error=failed.error if failed else None,
                        cached=all(r.cached for r in responses))
    # the reply is written here, in the base template's phrase: robusteval's reader reads it whatever --reader
    sample = _sample(model, item, replace(v, family=f"{v.family}/{LOGLIK}{rule}"), 0, response)
    return replace(sample, response=text, base_family=v.family, rule=rule, logliks=() if failed else tuple(scores))


def make_sample(model: str, item: Item, variant: Variant, k: int, response: Response,
                reader: Reader | None = None) -> Sample:
    """A reply to ``variant`` read (by ``reader``, default robusteval's) and scored, as a run scores
    it (`robusteval score` scores replies written elsewhere with it)."""
    return _sample(model, item, variant, k, response, reader)


def _sample(model: str, item: Item, variant: Variant, k: int, response: Response,
            reader: Reader | None = None) -> Sample:
    answer = (reader or get_reader()).read(response.text, variant.labels)
    option = None
    if answer.position is not None and answer.position >= len(variant.order):
        # a label past the options shown ("J" of 9, `readers.mmlu_pro`): a wrong answer, the same one
        # whatever the order, that no option index can equal
        option = answer.position
    elif answer.position is not None:
        # a repeated text is one answer
        option = item.options.index(item.options[variant.original_index(answer.position)])
    gold = item.options.index(item.options[item.answer])
    gold_position = variant.order.index(item.answer)
    return Sample(
        model=model, item_id=item.id, category=item.category, family=variant.family,
        base_family=variant.family, variant=variant.name,
        sample=k, labels=variant.labels, order=variant.order, prompt=variant.messages[-1].content,
        turns=len(variant.messages),
        response=response.text, error=response.error, status=answer.status, answer_label=answer.label,
        answer_option=option, gold_option=gold, gold_label=variant.labels[gold_position],
        correct=None if answer.status == "failed" else option == gold, cached=response.cached,
        key=response.key,
    )


__all__ = [
    "DEFAULT_FAMILIES",
    "FAMILIES",
    "NAME",
    "MathSample",
    "Options",
    "Sample",
    "add_arguments",
    "ask_each",
    "ask_loglik",
    "ask_math",
    "build_design",
    "decoding",
    "execute",
    "make_sample",
    "print_summary",
    "validate",
    "write_copies",
]
