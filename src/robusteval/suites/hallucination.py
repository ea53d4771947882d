"""The `hallucination` suite (CLEF 2024 HalluciGen): generate, detect and cross-evaluate hallucinations.

A group is one source sentence with two hypotheses, one faithful and one hallucinated, in two
scenarios: paraphrase (en, sv) and translation (en-de, de-en, en-fr, fr-en). Steps:

- generation: each model under test writes hyp+ (faithful) and hyp− (hallucinated) for every
  source; a judge (the embedded LLM with a fixed yes/no prompt by default, and/or an NLI model)
  says whether hyp+ is faithful and hyp− hallucinated;
- detection: detectors (``--detector``, default the models under test) say which of the two
  hypotheses of a labelled item is hallucinated, under three prompt variants, with the order of
  the hypotheses seeded (or both orders); an NLI model is a baseline detector;
- cross: the detectors judge the pairs the generators wrote, against the generators' intended labels;
- majority-vote ensembles of any detector configurations, in detection and cross.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, NamedTuple

from rich.console import Console

from robusteval.data.hallucigen import HALLUCINATION_TYPES, HalluItem, load_items
from robusteval.data.language import language_problem
from robusteval.engine import gather_all
from robusteval.errors import UserError
from robusteval.files import slug
from robusteval.judges.hallucination_nli import entailed, nli_detect
from robusteval.metrics.classification import TIE_BREAKS, majority_vote
from robusteval.metrics.hallucigen import generation_record, step_metrics
from robusteval.models import parse_model_spec
from robusteval.probes import hallucigen_prompts as prompts
from robusteval.ranges import Range
from robusteval.readers.hallucigen import Generated, read_detection, read_joint, read_separate, read_yes_no
from robusteval.report.hallucigen_files import detection_csv, generation_csv
from robusteval.report.terminal_hallucination import matrix_csv, print_tables, summary_markdown
from robusteval.results.hallucination import (
    NLI_CONFIG,
    VOTE_PREFIX,
    GeneratorMetrics,
    HallucinationExtra,
    HallucinationMetrics,
    RunInfo,
    StepMetrics,
)
from robusteval.suites.base import SampleBase, SuiteContext, SuiteResult, csv_arg
from robusteval.types import GenParams

NAME = "hallucination"
STEPS = {"generation": ("generation",), "detection": ("detection",), "cross": ("generation", "cross"),
         "all": ("generation", "detection", "cross")}
ORDERS = ("seeded", "both")
ENSEMBLE_SEP = "+"


@dataclass(frozen=True)
class Options:
    step: str = "all"
    detectors: tuple[str, ...] = ()  # model specs; () = the models under test
    prompts: tuple[str, ...] = prompts.DETECTION_PROMPTS
    orders: str = "seeded"
    gen_mode: str = "separate"
    gen_types: tuple[str, ...] = ("item",)
    judge: str = "llamacpp"  # model spec of the LLM judge, or "none"
    nli_model: str | None = None
    ensembles: tuple[str, ...] = ()  # each "config+config+..." or "all"
    tie_break: str = "invalid"  # a vote's tie: invalid (no majority), hyp1, hyp2, or first (the first member's)
    label_max_tokens: Annotated[int, Range(1, 10**7)] = 16
    bootstrap: Annotated[int, Range(100, 10**6)] = 1000  # resamples for every confidence interval
    lang: str | None = None  # the data's language (en, sv, de-en...); None: the rows', the file name's or the text's


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--step", choices=tuple(STEPS),
                   help="generation, detection, cross (generation + cross) or all (default)")
    p.add_argument("--detector", dest="detectors", action="append",
                   help="detector model spec (repeatable; default: the models under test)")
    p.add_argument("--prompts", type=csv_arg,
                   help=f"detection prompt variants (default: {','.join(prompts.DETECTION_PROMPTS)})")
    p.add_argument("--orders", choices=ORDERS,
                   help="seeded: each pair shown in one seeded random order (default); "
                        "both: both orders (position bias)")
    p.add_argument("--gen-mode", dest="gen_mode", choices=prompts.GEN_MODES,
                   help="separate: one prompt each, as the task's baseline (default); joint: one prompt for both")
    p.add_argument("--hallucination-types", dest="gen_types", type=csv_arg,
                   help="types named in the generation prompt: item (the item's type, default), none, all, "
                        f"or a list of {','.join(HALLUCINATION_TYPES)}")
    p.add_argument("--judge",
                   help="model spec of the yes/no judge of generated hypotheses, or none (default: llamacpp)")
    p.add_argument("--nli-model", dest="nli_model",
                   help="NLI model (HF name or local folder): judge of generated hypotheses and detection baseline")
    p.add_argument("--ensemble", dest="ensembles", action="append",
                   help="majority vote of detector configurations joined by '+', e.g. "
                        "llamacpp/incorrect+llamacpp/meaning, or all "
                        "(repeatable; default: all when there are two or more)")
    p.add_argument("--tie-break", dest="tie_break", choices=TIE_BREAKS,
                   help="a majority vote's tie: invalid (no majority, counted wrong; default), hyp1 or hyp2 (that "
                        "hypothesis, as HalluciGen's participants mostly broke ties: to hyp1), or first (the "
                        "first member's vote)")
    p.add_argument("--label-max-tokens", dest="label_max_tokens", type=int,
                   help="reply length limit for detection and judge replies (default: 16)")
    p.add_argument("--bootstrap", type=int, help="bootstrap resamples per confidence interval (default: 1000)")
    p.add_argument("--lang", help="language of every row of --data: en, sv, de, fr, or a pair such as de-en "
                   "(translation); default: the row's lang/langpair column, else the file name's (trial_sv.csv), "
                   "else the text's (identified), else en; the data audit says which")


def detector_configs(detector_labels: list[str], variants: tuple[str, ...], nli: bool) -> list[str]:
    """The detector configurations: each detector under each prompt variant, then the NLI baseline."""
    return [f"{d}/{v}" for d in detector_labels for v in variants] + ([NLI_CONFIG] if nli else [])


def ensemble_members(spec: str, configs: list[str]) -> tuple[str, ...]:
    members = (tuple(configs) if spec.strip() == "all"
               else tuple(m.strip() for m in spec.split(ENSEMBLE_SEP) if m.strip()))
    if unknown := [m for m in members if m not in configs]:
        raise UserError(f"--ensemble {spec}: unknown detector configuration {', '.join(unknown)}; "
                        f"available: {', '.join(configs)}")
    if len(members) < 2:
        raise UserError(f"--ensemble {spec}: a vote needs two or more configurations")
    return members


def validate(config: Any, options: Options) -> None:
    checks = [
        (options.step in STEPS, f"--step must be one of {', '.join(STEPS)}"),
        (options.orders in ORDERS, f"--orders must be one of {', '.join(ORDERS)}"),
        (options.gen_mode in prompts.GEN_MODES, f"--gen-mode must be one of {', '.join(prompts.GEN_MODES)}"),
        (bool(options.prompts), "give at least one detection prompt with --prompts"),
        (options.tie_break in TIE_BREAKS, f"--tie-break must be one of {', '.join(TIE_BREAKS)}"),
        (config.samples == 1, "--samples is not used by the hallucination suite; leave it at 1"),
        (options.lang is None or language_problem(options.lang, pair=True) is None,
         f"--lang {options.lang!r}: {language_problem(options.lang or '', pair=True)}"),
    ]
    for ok, message in checks:
        if not ok:
            raise UserError(message)
    if unknown := [v for v in options.prompts if v not in prompts.DETECTION_PROMPTS]:
        raise UserError(f"unknown --prompts {','.join(unknown)}; available: {', '.join(prompts.DETECTION_PROMPTS)}")
    types = options.gen_types
    if not types or (any(t in prompts.TYPE_CHOICES for t in types) and len(types) > 1) or \
            any(t not in prompts.TYPE_CHOICES and t not in HALLUCINATION_TYPES for t in types):
        raise UserError(f"--hallucination-types takes item, none, all, or a list of {', '.join(HALLUCINATION_TYPES)}")
    labels = [parse_model_spec(s).label for s in (options.detectors or config.models)]
    configs = detector_configs(labels, options.prompts, options.nli_model is not None)
    for spec in options.ensembles:
        ensemble_members(spec, configs)


# ---------------------------------------------------------------- samples


def _without(sample: SampleBase, unused: tuple[str, ...]) -> dict[str, Any]:
    """The sample's JSON line without the envelope fields its step does not use (samples.jsonl keeps
    the shape it always had)."""
    return {k: v for k, v in SampleBase.as_dict(sample).items() if k not in unused}


@dataclass(frozen=True, kw_only=True)
class GenerationSample(SampleBase):
    """One generator's hyp+ and hyp− for one source (one reply, or two in separate mode)."""

    scenario: str
    lang: str
    type: str | None  # the hallucination type asked for (None: any)
    mode: str
    source: str
    prompts: tuple[str, ...]
    responses: tuple[str | None, ...]
    hyp_plus: str | None
    hyp_minus: str | None
    reason: str | None
    keys: tuple[str, ...]
    step: str = "generation"

    LABEL = ("model", "step", "mode")

    def as_dict(self) -> dict[str, Any]:
        return _without(self, ("variant", "prompt", "response", "key"))


@dataclass(frozen=True, kw_only=True)
class JudgeSample(SampleBase):
    """A judge's verdict on one generated hypothesis (``model`` is the judge); ``success`` is 1 when
    hyp+ is judged faithful or hyp− hallucinated, 0 when not, None when the judge gave no verdict."""

    generator: str
    hypothesis: str  # hyp+ | hyp-
    text: str
    faithful: bool | None
    success: float | None
    score: float | None  # P(entailment) for the NLI judge
    step: str = "judge"

    @property
    def judge(self) -> str:
        return self.model

    LABEL = ("model", "step", "generator", "hypothesis")

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.model, **_without(self, ("variant",))}


@dataclass(frozen=True, kw_only=True)
class DetectionSample(SampleBase):
    """One detector configuration's verdict on one shown pair (step detection or cross).

    ``model`` is the detector's label ("nli" or "ensemble" for the baseline and votes), ``variant``
    its prompt variant ("" for those two), ``config`` the configuration's name. ``predicted`` and
    ``gold`` name hypotheses in the item's own order (hyp1/hyp2); ``predicted_position`` is the
    position as shown (1 or 2)."""

    LABEL = ("config", "step", "generator", "order")

    step: str  # detection | cross
    config: str  # e.g. llamacpp/incorrect, nli, vote(a+b)
    generator: str | None  # cross: who wrote the pair
    scenario: str
    lang: str
    type: str | None
    order: str  # "12" or "21"
    predicted: str | None
    predicted_position: int | None
    gold: str | None  # None: an unlabelled file (the task's test files), predictions only
    correct: bool | None  # None when the request failed or there is no gold
    reason: str | None


class GenerationRow(NamedTuple):
    """What the later steps and the figures read of a `GenerationSample`: the parsed pair (the
    judge's and the cross step's input) without the prompts and raw replies."""

    model: str
    item_id: str
    status: str
    reason: str | None
    type: str | None
    hyp_plus: str | None
    hyp_minus: str | None

    @classmethod
    def of(cls, s: GenerationSample) -> GenerationRow:
        return cls(s.model, s.item_id, s.status, s.reason, s.type, s.hyp_plus, s.hyp_minus)


class JudgeRow(NamedTuple):
    """What the figures read of a `JudgeSample`."""

    judge: str
    generator: str
    hypothesis: str
    item_id: str
    success: float | None

    @classmethod
    def of(cls, s: JudgeSample) -> JudgeRow:
        return cls(s.model, s.generator, s.hypothesis, s.item_id, s.success)


class DetectionRow(NamedTuple):
    """What the figures and the votes read of a `DetectionSample` (no prompt or reply)."""

    step: str
    model: str
    variant: str | int
    config: str
    generator: str | None
    item_id: str
    scenario: str
    lang: str
    type: str | None
    order: str
    predicted: str | None
    predicted_position: int | None
    gold: str | None
    correct: bool | None
    reason: str | None
    status: str
    cached: bool

    @classmethod
    def of(cls, s: DetectionSample) -> DetectionRow:
        return cls(*(getattr(s, name) for name in cls._fields))


Emit = Callable[[Any], None]  # a sample's way to samples.jsonl (`SuiteContext.samples.write`)


# ---------------------------------------------------------------- steps


async def run_generation(ctx: SuiteContext[Options], models: list[str], items: list[HalluItem],
                         options: Options) -> list[GenerationRow]:
    """Every model's hyp+ and hyp− for every source: one request (joint) or two (separate) each.
    Each sample goes to samples.jsonl as it is read (model by model, source by source; a bounded window
    under way); what is returned is its `GenerationRow`, the parsed pair."""
    def messages_of(item: HalluItem, types: tuple[str, ...]) -> list[Any]:
        return [prompts.generation_joint(item, types)] if options.gen_mode == "joint" else \
            [prompts.generation_faithful(item), prompts.generation_hallucinated(item, types)]

    async def one(job: tuple[str, HalluItem]) -> GenerationSample:
        model, item = job
        types = prompts.requested_types(item, options.gen_types)
        asked = messages_of(item, types)
        responses = await gather_all(ctx.engine.chat(model, messages, ctx.params) for messages in asked)
        texts = tuple(r.text for r in responses)
        parsed: Generated = read_joint(texts[0], item.source) if options.gen_mode == "joint" \
            else read_separate(texts[0], texts[1], item.source)
        error = next((r.error for r in responses if not r.ok), None)
        return GenerationSample(
            model=model, item_id=item.id, scenario=item.scenario, lang=item.lang,
            type=types[0] if len(types) == 1 else None, mode=options.gen_mode, source=item.source,
            prompts=tuple(m[-1].content for m in asked), responses=texts, hyp_plus=parsed.hyp_plus,
            hyp_minus=parsed.hyp_minus, status="failed" if error else parsed.status, reason=parsed.reason,
            error=error, cached=all(r.cached for r in responses), keys=tuple(r.key for r in responses))

    jobs = ((m, item) for m in models for item in items)
    return [GenerationRow.of(sample) async for sample in ctx.stream(
        jobs, one, requests_per_job=1 if options.gen_mode == "joint" else 2, window=ctx.engine.window())]


def _judged_jobs(generated: list[GenerationRow]) -> list[tuple[GenerationRow, str, str]]:
    """(generation, hyp+ or hyp-, its text) for every hypothesis of every pair that parsed."""
    return [(g, hyp, text) for g in generated if g.status == "ok"  # an ok pair has both texts
            for hyp, text in (("hyp+", g.hyp_plus), ("hyp-", g.hyp_minus)) if text is not None]


async def run_llm_judge(ctx: SuiteContext[Options], judge: str, items: dict[str, HalluItem],
                        generated: list[GenerationRow],
                        params: GenParams) -> list[JudgeRow]:
    """The yes/no judge on every hypothesis that parsed (yes = faithful); each sample to samples.jsonl."""

    async def one(job: tuple[GenerationRow, str, str]) -> JudgeSample:
        g, hypothesis, text = job
        messages = prompts.judge(items[g.item_id], text)
        response = await ctx.engine.chat(judge, messages, params)
        faithful, status = read_yes_no(response.text)
        return JudgeSample(model=judge, generator=g.model, item_id=g.item_id, hypothesis=hypothesis, text=text,
                           faithful=faithful, success=_success(hypothesis, faithful), score=None,
                           prompt=messages[-1].content, response=response.text, status=status,
                           error=response.error, cached=response.cached, key=response.key)

    return [JudgeRow.of(sample) async for sample in ctx.stream(_judged_jobs(generated), one, requests_per_job=1)]


def _emitted(sample: Any, emit: Emit, row: Callable[[Any], Any]) -> Any:
    """A sample that is not asked through `SuiteContext.stream` (the NLI baseline's, a vote's):
    written by ``emit``; its compact row returned."""
    emit(sample)
    return row(sample)


def run_nli_judge(nli: Any, items: dict[str, HalluItem], generated: list[GenerationRow]) -> list[JudgeSample]:
    """The NLI judge: hyp+ succeeds when the source entails it, hyp− when it does not."""
    jobs = _judged_jobs(generated)
    results = nli.predict([(items[g.item_id].source, text) for g, _, text in jobs]) if jobs else []
    return [JudgeSample(model=f"nli:{nli.name}", generator=g.model, item_id=g.item_id, hypothesis=hyp, text=text,
                        faithful=entailed(r.entailment), success=_success(hyp, entailed(r.entailment)),
                        score=r.entailment, status="ok")
            for (g, hyp, text), r in zip(jobs, results)]


def _success(hypothesis: str, faithful: bool | None) -> float | None:
    if faithful is None:
        return None
    return float(faithful if hypothesis == "hyp+" else not faithful)


def shown_orders(item: HalluItem, orders: str, seed: int, generator: str | None) -> list[bool]:
    """The orders to show an item in: ``swapped`` flags (one seeded, or both)."""
    if orders == "both":
        return [False, True]
    return [prompts.seeded_swap(seed, generator or "", item.id)]


def _detection_sample(step: str, model: str, config: str, generator: str | None, item: HalluItem, swapped: bool,
                      **fields: Any) -> DetectionSample:
    predicted = fields.pop("predicted")
    unscored = fields["status"] == "failed" or item.label is None  # no gold: an unlabelled test file
    return DetectionSample(step=step, model=model, config=config, generator=generator, item_id=item.id,
                           scenario=item.scenario, lang=item.lang, type=item.type, order="21" if swapped else "12",
                           predicted=predicted, gold=item.label,
                           correct=None if unscored else predicted == item.label, **fields)


async def run_detection(ctx: SuiteContext[Options], detectors: list[str], variants: tuple[str, ...],
                        items: list[HalluItem],
                        orders: str, seed: int, params: GenParams, nli: Any = None, *, step: str = "detection",
                        generator: str | None = None) -> list[DetectionRow]:
    """Every detector configuration on every item in the asked orders; invalid replies are kept.
    Each sample goes to samples.jsonl as it is read (the NLI baseline's after the models'); what is
    returned is its `DetectionRow`."""
    jobs = [(d, v, item, swapped) for item in items for swapped in shown_orders(item, orders, seed, generator)
            for d in detectors for v in variants]

    async def one(job: tuple[str, str, HalluItem, bool]) -> DetectionSample:
        detector, variant, item, swapped = job
        pair = prompts.shown(item, swapped)
        messages = prompts.detection(item, pair, variant)
        response = await ctx.engine.chat(detector, messages, params)
        read = read_detection(response.text)
        return _detection_sample(
            step, detector, f"{detector}/{variant}", generator, item, swapped, variant=variant,
            prompt=messages[-1].content, response=response.text,
            predicted=pair.original(read.position) if read.position else None,
            predicted_position=read.position, status=read.status, reason=read.reason, error=response.error,
            cached=response.cached, key=response.key)

    rows = [DetectionRow.of(sample) async for sample in ctx.stream(jobs, one, requests_per_job=1)]
    if nli is not None:
        rows += [_emitted(sample, ctx.samples.write, DetectionRow.of)
                 for sample in nli_detection(nli, items, orders, seed, step=step, generator=generator)]
    return rows


def nli_detection(nli: Any, items: list[HalluItem], orders: str, seed: int, *, step: str,
                  generator: str | None) -> list[DetectionSample]:
    """The NLI baseline: entailment of source→hyp1 and source→hyp2, then the task's decision rules.
    NLI does not see an order, so it gives the same verdict in both (recorded per order, for pairing)."""
    results = nli.predict([(item.source, hyp) for item in items for hyp in (item.hyp1, item.hyp2)])
    out = []
    for n, item in enumerate(items):
        p1, p2 = results[2 * n].entailment, results[2 * n + 1].entailment
        predicted = nli_detect(p1, p2)
        for swapped in shown_orders(item, orders, seed, generator):
            position = prompts.shown(item, swapped).original(1) == predicted
            out.append(_detection_sample(
                step, NLI_CONFIG, NLI_CONFIG, generator, item, swapped, prompt=None,
                response=f"P(entailment) hyp1={p1:.4f} hyp2={p2:.4f}", predicted=predicted,
                predicted_position=1 if position else 2, status="ok", reason=None, error=None, cached=False,
                key=None))
    return out


def vote(samples: Sequence[DetectionSample | DetectionRow], members: tuple[str, ...],
         tie_break: str = "invalid") -> list[DetectionSample]:
    """Majority vote of ``members`` on each shown pair; invalid votes abstain, a tie goes by
    ``tie_break`` (`metrics.classification.majority_vote`; ``invalid``: "no majority"), a pair no
    member answered (all failed) is failed."""
    name = f"{VOTE_PREFIX}{ENSEMBLE_SEP.join(members)})"
    by_pair: dict[tuple[Any, ...], dict[str, DetectionSample | DetectionRow]] = {}
    for s in samples:
        if s.config in members:
            by_pair.setdefault((s.generator, s.item_id, s.order), {})[s.config] = s
    out = []
    for votes in by_pair.values():
        first = next(iter(votes.values()))
        answered = [votes[m] for m in members if m in votes and votes[m].status != "failed"]
        winner = majority_vote([v.predicted for v in answered], tie_break)
        status = "failed" if not answered else ("ok" if winner else "invalid")
        swapped = first.order == "21"
        position = None if winner is None else (1 if (winner == "hyp1") != swapped else 2)
        out.append(DetectionSample(
            step=first.step, item_id=first.item_id, generator=first.generator, scenario=first.scenario,
            lang=first.lang, type=first.type, order=first.order, gold=first.gold,
            model="ensemble", variant="", config=name, prompt=None, predicted=winner,
            predicted_position=position,
            response=" ".join(f"{m}={votes[m].predicted or votes[m].status}" for m in members if m in votes),
            correct=None if status == "failed" or first.gold is None else winner == first.gold, status=status,
            reason=None if status != "invalid" else "no majority", error=None,
            cached=all(v.cached for v in votes.values()), key=None))
    return out


def cross_items(generated: Sequence[GenerationSample | GenerationRow], items: dict[str, HalluItem],
                seed: int) -> dict[str, list[HalluItem]]:
    """Each generator's valid (hyp+, hyp−) pairs as labelled items; the hallucinated one is put at
    hyp1 or hyp2 by a seeded coin, so the intended labels are balanced."""
    out: dict[str, list[HalluItem]] = {}
    for g in generated:
        if g.status != "ok":
            continue
        minus_first = prompts.seeded_swap(seed, "cross", g.model, g.item_id)
        hyp1, hyp2 = (g.hyp_minus, g.hyp_plus) if minus_first else (g.hyp_plus, g.hyp_minus)
        out.setdefault(g.model, []).append(replace(items[g.item_id], hyp1=hyp1, hyp2=hyp2, type=g.type,
                                                   label="hyp1" if minus_first else "hyp2"))
    return out


# ---------------------------------------------------------------- execute


async def execute(ctx: SuiteContext[Options]) -> SuiteResult:
    config, options = ctx.config, ctx.options
    steps = STEPS[options.step]
    items = ctx.shard_items(load_items(config.data, limit=config.limit, seed=config.seed,
                                       need_pairs="detection" in steps, lang=options.lang,
                                       audit=ctx.audit.source(f"--data {config.data or 'trial'}", config.data)),
                            key=_item_id)
    by_id = {item.id: item for item in items}
    label_params = replace(ctx.params, max_tokens=min(ctx.params.max_tokens, options.label_max_tokens))
    nli = _load_nli(options.nli_model)
    detectors = [await ctx.model(spec) for spec in options.detectors] if options.detectors else list(ctx.models)
    configs = detector_configs(detectors, options.prompts, nli is not None)
    ensemble_specs = options.ensembles or (("all",) if len(configs) > 1 else ())
    ensembles = [ensemble_members(spec, configs) for spec in ensemble_specs]
    # Each sample goes to samples.jsonl as it is read; the steps and the figures read compact rows
    # (the parsed pairs, the verdicts), never the prompts and replies.
    emit = ctx.samples.write
    generation: dict[str, GeneratorMetrics] | None = None
    step_records: dict[str, StepMetrics] = {}
    generated: list[GenerationRow] = []
    files: dict[str, Any] = {}
    if "generation" in steps:
        ctx.stage("generating hypotheses")
        generated = await run_generation(ctx, ctx.models, items, options)
        for model in ctx.models:  # the outputs, as participants submitted them
            files[f"generation-{slug(model)}.csv"] = generation_csv(generated, model)
        judged: list[JudgeRow] = []
        if options.judge != "none":
            ctx.stage("judging")
            judge = await ctx.model(options.judge)
            judged += await run_llm_judge(ctx, judge, by_id, generated, label_params)
        if nli is not None:
            judged += [_emitted(s, emit, JudgeRow.of) for s in run_nli_judge(nli, by_id, generated)]
        generation = generation_record(generated, judged, seed=config.seed, n_resamples=options.bootstrap)
    for step in ("detection", "cross"):
        if step not in steps:
            continue
        groups = {None: items} if step == "detection" else cross_items(generated, by_id, config.seed)
        ctx.stage("detecting" if step == "detection" else "detecting across models")
        found: list[DetectionRow] = []
        for generator, group in groups.items():
            found += await run_detection(ctx, detectors, options.prompts, group, options.orders, config.seed,
                                         label_params, nli, step=step, generator=generator)
        for members in ensembles:  # a vote reads every member's verdict on a pair: after the step
            found += [_emitted(s, emit, DetectionRow.of) for s in vote(found, members, options.tie_break)]
        step_records[step] = step_metrics(found, configs, seed=config.seed, n_resamples=options.bootstrap,
                                          cross=step == "cross")
        if step == "detection":  # the predictions, as participants submitted them: one file per configuration
            for name in dict.fromkeys(r.config for r in found):
                files[f"detection-{slug(name)}.csv"] = detection_csv(found, name)
    record = HallucinationMetrics(generation=generation, **step_records)
    extra = HallucinationExtra(RunInfo(
        steps=list(steps), items=len(items), detector_configs=configs,
        ensembles=[f"{VOTE_PREFIX}{ENSEMBLE_SEP.join(m)})" for m in ensembles], tie_break=options.tie_break,
        judge=options.judge, nli_model=options.nli_model,
        # the scores are n/a: the files hold the predictions
        unlabelled=True if "detection" in steps and not any(i.labelled for i in items) else None))
    result = SuiteResult(metrics=record, samples=[], extra=extra, files=files)
    result.files["summary.md"] = summary_markdown(record)
    if record.cross is not None:
        result.files["matrix.csv"] = matrix_csv(record.cross.matrix or {})
    return result


def _item_id(item: HalluItem) -> str:
    return item.id


def _load_nli(name: str | None) -> Any:
    if name is None:
        return None
    from robusteval.judges.nli import load_nli

    return load_nli(name)


def print_summary(console: Console, result: SuiteResult) -> None:
    print_tables(console, result.metrics)


__all__ = [
    "NAME",
    "DetectionSample",
    "GenerationSample",
    "JudgeSample",
    "Options",
    "add_arguments",
    "cross_items",
    "detector_configs",
    "ensemble_members",
    "execute",
    "print_summary",
    "run_detection",
    "run_generation",
    "validate",
    "vote",
]
