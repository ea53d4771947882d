"""mcq's settings: its flags, their checks, and the design (templates, shots) they give."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Annotated, Any

from robusteval.data.audit import DataAudit
from robusteval.data.ids import DEFAULT_ID_RULE, ID_RULES
from robusteval.data.math import is_math_source
from robusteval.data.mcq import DUPLICATE_RULES, load_dev_items, load_file, load_items, parse_columns
from robusteval.errors import UserError
from robusteval.metrics.budget import (
    DESIGNS as BUDGET_DESIGNS,
    FIRST,
)
from robusteval.metrics.budget_covariates import COVARIATES, DEFAULT_COVARIATES, check_covariates
from robusteval.metrics.search import DEFAULT_METHOD as DEFAULT_SEARCH_METHOD, METHODS as SEARCH_METHODS, SEARCHES
from robusteval.probes.design import FAMILIES, Design, is_family
from robusteval.probes.fewshot import ShotPool
from robusteval.probes.formats import example, formats_count, sample_formats
from robusteval.probes.math_prompts import FAMILIES as MATH_FAMILIES
from robusteval.probes.registry import available, get, is_perturbation
from robusteval.probes.templates import BASE, Template, load_template_set, template_set_name
from robusteval.probes.variant_texts import EXAMPLE
from robusteval.ranges import Range
from robusteval.readers import DEFAULT_READER, READERS, get_reader
from robusteval.suites.base import csv_arg

NAME = "mcq"
DEFAULT_FAMILIES = ("order", "format")
DEFAULT_DATA = "mmlu"
DEFAULT_REWRITER = "llamacpp"
BUDGET = Range(0, 1, low_open=True, hint="e.g. --budget 0.1")  # a share of the cells: `run` and `score` take it


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
    budget: Annotated[float, BUDGET] | None = None
    budget_design: str = "stratified"
    budget_covariates: tuple[str, ...] = DEFAULT_COVARIATES
    search: str | None = None  # best-worst: ask only the cells a budgeted search picks (`suites.mcq.search`)
    calls: Annotated[float, BUDGET] | None = None  # the share of each family's cells the search may ask
    search_method: str | None = None
    duplicates: str = "drop-both"
    duplicate_ids: str = DEFAULT_ID_RULE
    reader: str = DEFAULT_READER
    columns: str | None = None  # question=Q,choices=A|B|C|D,answer=Gold: the --data file's column names


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", help="the --data file's column names, e.g. question=Question,choices=A|B|C|D,"
                                     "answer=Answer (also subject=, id=); answers as a letter, an index or "
                                     "the option's text")
    p.add_argument("--families", type=csv_arg,
                   help="comma-separated families (default: order,format): format, order, prompt, fewshot, "
                        "formats:N (N formats of FormatSpread's grammar, default 20), circular (every cyclic "
                        "rotation of the options, OpenCompass's CircularEval), or a "
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
    p.add_argument("--search", choices=SEARCHES,
                   help="best-worst: find each family's best and worst variant asking only the cells a budgeted "
                        "search picks, in rounds (resumable; the same command without it asks the rest)")
    p.add_argument("--calls", type=float, metavar="F",
                   help="with --search: the share (0 < F <= 1) of each family's (question, variant) cells it may "
                        "ask, e.g. 0.125 (FormatSpread's) or 0.02")
    p.add_argument("--search-method", dest="search_method",
                   help=f"with --search: {', '.join(SEARCH_METHODS)} (default: {DEFAULT_SEARCH_METHOD}; "
                        "docs/statistics.md)")
    p.add_argument("--duplicates", choices=DUPLICATE_RULES,
                   help="rows repeating a question and its options with another answer (AGIEval sat-en): "
                        "drop-both (default: which label is right cannot be told), keep-first, or keep-all "
                        "(as published, SCORE's choice); the data audit counts them")
    p.add_argument("--duplicate-ids", dest="duplicate_ids", choices=ID_RULES,
                   help="two different rows with one id: error (default: refused, naming both lines), first "
                        "(the first row kept, the later left out) or rename (the later kept as ID~2...); "
                        "the data audit counts them")
    p.add_argument("--budget-design", dest="budget_design",
                   help="stratified: the cells spread evenly over questions and variants (default); adaptive: "
                        # argparse %-formats help: the shares' % signs doubled
                        f"{1 - FIRST:.0%}% of them where the fit of the first {FIRST:.0%}%'s answers is least sure")
    p.add_argument("--budget-covariates", dest="budget_covariates", type=csv_arg, metavar="LIST",
                   help=f"what --budget's estimate is told of each variant before asking, a comma list of "
                        f"{', '.join(COVARIATES)} (default: {','.join(DEFAULT_COVARIATES)}): names, the settings "
                        "in a crossed design's variant names; text, each variant's template text embedded with "
                        "the offline MiniLM (prompt, fewshot, format; needs robusteval[embed]); gold, the gold "
                        "option's position (order); none, nothing")


def validate(config: Any, options: Options) -> None:
    known = f"available: {', '.join(FAMILIES)}, and the perturbations {', '.join(available())}"
    for flag, names in (("--families", options.families), ("--cross", options.cross)):
        for name in names:
            if ":" in name and not is_family(name):
                get(name)  # a parameterised perturbation says what is wrong with its argument (language:zz)
        if unknown := [f for f in names if not is_family(f) and not is_perturbation(f)]:
            raise UserError(f"unknown {flag} {','.join(unknown)}; {known}")
        for name in names:
            if not is_family(name):
                get(name)  # loads what it needs (HELM's word lists): a missing one ends here, before any request
    parse_columns(options.columns)  # a UserError naming --columns, before anything runs
    if not options.families and not options.cross:
        raise UserError("give at least one family with --families (or a design with --cross)")
    if len(options.cross) == 1:
        raise UserError("--cross needs two or more families, e.g. --cross format,order")
    if len(perturbation_families(options.cross)) > 1:
        raise UserError("--cross takes at most one perturbation of the question (each would replace the "
                        "other's text), e.g. --cross typo,order")
    layouts = [f for f in options.cross if f in ("format", "prompt", "fewshot") or formats_count(f) is not None]
    if any(formats_count(f) is not None for f in layouts) and len(layouts) > 1:
        raise UserError(f"--cross {','.join(layouts)}: a formats:N format is its own prompt and label style; "
                        "cross it with order, circular or a perturbation, e.g. --cross formats:20,order")
    for ok, message in (
        (options.scoring in ("generate", "loglik"), "--scoring must be generate or loglik"),
        (options.scoring == "generate" or config.samples == 1, "--samples applies to --scoring generate only"),
        (options.budget_design in BUDGET_DESIGNS, f"--budget-design must be one of {', '.join(BUDGET_DESIGNS)}"),
        (options.budget is not None or options.budget_design == "stratified", "--budget-design applies with --budget"),
        (options.budget is not None or options.budget_covariates == DEFAULT_COVARIATES,
         "--budget-covariates applies with --budget"),
    ):
        if not ok:
            raise UserError(message)
    check_covariates("--budget-covariates", options.budget_covariates)
    validate_search(options)
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


def validate_search(options: Options) -> None:
    """``--search``'s flags: one message for each mistake, before any request."""
    if options.search is None:
        if options.calls is not None or options.search_method is not None:
            raise UserError("--calls and --search-method apply with --search best-worst")
        return
    for ok, message in (
        (options.search in SEARCHES, f"--search must be one of {', '.join(SEARCHES)}"),
        (options.calls is not None, "--search needs --calls F, the share of the cells it may ask (e.g. 0.125)"),
        (options.search_method in (None, *SEARCH_METHODS),
         f"--search-method must be one of {', '.join(SEARCH_METHODS)}"),
        (options.budget is None, "--search and --budget each choose which cells to ask: give one of them"),
        (options.scoring == "generate", "--search reads written answers: use it with --scoring generate"),
    ):
        if not ok:
            raise UserError(message)


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
    return tuple(dict.fromkeys(n for n in names if not is_family(n)))



def build_design(config: Any, options: Options, data: str, audit: DataAudit | None = None,
                 max_options: int = 4) -> tuple[Design, dict[str, Any]]:
    """Templates, shot pool and grammar formats for the families asked; the info dict goes into
    results.json (where shots come from a file or a dev split, its audit goes into ``audit``).
    ``max_options``: the most options a question has (a format's numbering must label them all)."""
    families = set(options.families) | set(options.cross)
    templates: tuple[Template, ...] = (BASE,)
    base = BASE
    if options.templates or families & {"prompt", "fewshot"}:
        templates, base = load_template_set(options.templates, data)
        templates = templates if families & {"prompt", "fewshot"} else (BASE,)
    info: dict[str, Any] = {"templates": [t.name for t in templates], "cross": list(options.cross)}
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
    counts = [n for f in families if (n := formats_count(f)) is not None]
    formats = sample_formats(max(counts), config.seed, max_options) if counts else ()
    if formats:  # each format's choices and layout: what the report shows and a search reads as covariates
        info["formats"] = {f.name: {**f.describe(), "layout": f.layout(),
                                    "example": example(f, EXAMPLE.question, EXAMPLE.options)} for f in formats}
    return Design(templates, shots, options.n_shots, options.fewshot_multiturn, config.seed, options.seeds,
                  options.seed_temperature, base=base, formats=formats), info
