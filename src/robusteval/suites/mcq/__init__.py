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

from collections.abc import Callable
from dataclasses import replace

from rich.console import Console

from robusteval.data.math import is_math_source
from robusteval.data.mcq import load_items, parse_columns
from robusteval.probes.apply import Rewriter
from robusteval.probes.design import expand, template_styles
from robusteval.probes.registry import Rewrite, get
from robusteval.probes.template_check import check_templates
from robusteval.readers import get_reader
from robusteval.results.mcq import CopyCounts, McqExtra
from robusteval.suites.base import SuiteContext, SuiteResult, print_noise_floor
from robusteval.suites.mcq.ask import Sample, ask_each, ask_loglik
from robusteval.suites.mcq.budget import ask_models, plan_budget
from robusteval.suites.mcq.copies import record_counts, write_copies
from robusteval.suites.mcq.math import execute_math
from robusteval.suites.mcq.options import (
    DEFAULT_DATA,
    NAME,
    Options,
    add_arguments,
    build_design,
    perturbation_families,
    validate,
)
from robusteval.suites.mcq.search import plan_search
from robusteval.types import Item


async def execute(ctx: SuiteContext[Options]) -> SuiteResult:
    config, options = ctx.config, ctx.options
    data = config.data or DEFAULT_DATA
    if is_math_source(data):
        return await execute_math(ctx, data)
    loaded = load_items(data, limit=config.limit, seed=config.seed, audit=ctx.audit, duplicates=options.duplicates,
                        columns=parse_columns(options.columns), duplicate_ids=options.duplicate_ids)
    items = ctx.shard_items(loaded, key=_item_id)
    reader = get_reader(options.reader)
    # the formats are drawn for the widest question of all shards: every shard draws the same ones
    design, design_info = build_design(config, options, data, ctx.audit,
                                       max((len(i.options) for i in loaded), default=4))
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
        # a distractor is an option of another question of the subject in the whole dataset, not only those asked
        pool = (load_items(data, duplicates=options.duplicates, columns=parse_columns(options.columns),
                           duplicate_ids=options.duplicate_ids) if "add_distractor" in perturbing else None)
        copies, counts = await write_copies(ctx.ask_all, items, perturbing, k=options.perturbations_per_family,
                                            seed=config.seed, rewriter=rewriter,
                                            with_options=options.perturb_options, pool=pool)
        design = replace(design, copies=copies)
        record_counts(ctx.audit, counts)
        design_info |= {"perturbations_per_family": options.perturbations_per_family,
                        "perturb_options": options.perturb_options,
                        **({"rewriter": rewriter.model} if rewriter else {})}
    grids = None
    if options.budget is not None:
        grids, info = plan_budget(options, [i.id for i in items], ((i.id, v.family, v.name) for i in items
                                  for v in expand(i, options.families, design, options.cross)), config.seed, design)
        design_info |= info
    searches = None
    if options.search is not None:
        searches, info = plan_search(options, [i.id for i in items], ((i.id, v.family, v.name) for i in items
                                     for v in expand(i, options.families, design, options.cross)), config.seed,
                                     design)
        design_info |= info

    async def ask(model: str, cells: set[tuple[str, str, str]] | None, keep: Callable[[Sample], None]) -> None:
        if options.scoring == "loglik":
            await ask_loglik(ctx, model, items, options.families, design, options.cross, keep, cells)
        else:
            await ask_each(ctx, model, items, options.families, ctx.params, config.samples, design,
                           options.cross, keep, cells=cells, reader=reader)

    asked = await ask_models(ctx, [item.id for item in items], grids, ask,
                             lambda tally: tally.metrics(options.families, cross=options.cross, seed=config.seed),
                             searches)
    return asked.result(McqExtra(design=design_info, perturbations={c.family: c for c in counts} or None))


def _item_id(item: Item) -> str:
    return item.id


def print_summary(console: Console, result: SuiteResult) -> None:
    from robusteval.report.budget import print_budget
    from robusteval.report.formats import print_design_tables
    from robusteval.report.lm_eval import print_lm_eval
    from robusteval.report.search import print_search
    from robusteval.report.table import print_copy_counts, print_invalid_warning, print_mcq
    extra: McqExtra = result.extra
    invalid = extra.invalid_replies or {}
    formats = extra.formats
    for model, model_metrics in result.metrics.items():
        if model in invalid:  # first: the figures below count each invalid reply as wrong
            print_invalid_warning(console, model, invalid[model], extra.reader)
        print_mcq(console, model, model_metrics)
        print_design_tables(console, model, model_metrics, formats)
    print_copy_counts(console, extra.copy_counts)
    truths = extra.budget_truth or {}  # score GRID --budget: the full grid's own figures
    for model, estimates in (extra.budget or {}).items():
        print_budget(console, model, estimates, truths.get(model))
    found = extra.search_truth or {}  # score GRID --search: the full grid's best and worst
    for model, searched in (extra.search or {}).items():
        print_search(console, model, searched, found.get(model))
    for model, figures in (extra.lm_eval or {}).items():  # score on lm-eval's output folder
        print_lm_eval(console, model, figures)
    print_noise_floor(console, result.determinism)


__all__ = ["NAME", "Options", "Sample", "add_arguments", "execute", "print_summary", "validate"]
