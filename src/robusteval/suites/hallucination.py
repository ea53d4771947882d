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
import csv
import io
from dataclasses import asdict, dataclass, replace

from robusteval.data.hallucigen import HALLUCINATION_TYPES, LANG_FORMAT, HalluItem, load_items
from robusteval.engine import Engine, gather_all
from robusteval.errors import UserError
from robusteval.judges.hallucination_nli import entailed, nli_detect
from robusteval.metrics.classification import majority_vote
from robusteval.metrics.hallucigen import agreement, detector_metrics, generation_metrics, matrix
from robusteval.models import parse_model_spec
from robusteval.probes import hallucigen_prompts as prompts
from robusteval.readers.hallucigen import Generated, read_detection, read_joint, read_separate, read_yes_no
from robusteval.report.table import fmt_estimate as _fmt  # the same "value [low, high]" cells as mcq
from robusteval.suites.base import SuiteContext, SuiteResult, csv_arg
from robusteval.types import GenParams

NAME = "hallucination"
STEPS = {"generation": ("generation",), "detection": ("detection",), "cross": ("generation", "cross"),
         "all": ("generation", "detection", "cross")}
ORDERS = ("seeded", "both")
NLI_CONFIG = "nli"
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
    label_max_tokens: int = 16
    bootstrap: int = 1000  # resamples for every confidence interval
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


def validate(config, options: Options) -> None:
    checks = [
        (options.step in STEPS, f"--step must be one of {', '.join(STEPS)}"),
        (options.orders in ORDERS, f"--orders must be one of {', '.join(ORDERS)}"),
        (options.gen_mode in prompts.GEN_MODES, f"--gen-mode must be one of {', '.join(prompts.GEN_MODES)}"),
        (bool(options.prompts), "give at least one detection prompt with --prompts"),
        (options.label_max_tokens > 0, "--label-max-tokens must be positive"),
        (options.bootstrap >= 100, "--bootstrap must be at least 100 resamples"),
        (config.samples == 1, "--samples is not used by the hallucination suite; leave it at 1"),
        (options.lang is None or bool(LANG_FORMAT.fullmatch(options.lang)),
         f"--lang {options.lang!r}: give a language code such as sv, or a pair such as de-en"),
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


@dataclass(frozen=True)
class GenerationSample:
    """One generator's hyp+ and hyp− for one source (one reply, or two in separate mode)."""

    model: str
    item_id: str
    scenario: str
    lang: str
    type: str | None  # the hallucination type asked for (None: any)
    mode: str
    source: str
    prompts: tuple[str, ...]
    responses: tuple[str | None, ...]
    hyp_plus: str | None
    hyp_minus: str | None
    status: str  # ok | invalid | failed
    reason: str | None
    error: str | None
    cached: bool
    keys: tuple[str, ...]
    step: str = "generation"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class JudgeSample:
    """A judge's verdict on one generated hypothesis; ``success`` is 1 when hyp+ is judged faithful
    or hyp− hallucinated, 0 when not, None when the judge gave no verdict."""

    judge: str
    generator: str
    item_id: str
    hypothesis: str  # hyp+ | hyp-
    text: str
    faithful: bool | None
    success: float | None
    score: float | None  # P(entailment) for the NLI judge
    prompt: str | None
    response: str | None
    status: str
    error: str | None
    cached: bool
    key: str | None
    step: str = "judge"

    @property
    def model(self) -> str:
        return self.judge

    def as_dict(self) -> dict:
        return {**asdict(self), "model": self.judge}


@dataclass(frozen=True)
class DetectionSample:
    """One detector configuration's verdict on one shown pair (step detection or cross).

    ``predicted`` and ``gold`` name hypotheses in the item's own order (hyp1/hyp2);
    ``predicted_position`` is the position as shown (1 or 2)."""

    step: str  # detection | cross
    model: str  # detector label, "nli" or "ensemble"
    config: str  # e.g. llamacpp/incorrect, nli, vote(a+b)
    generator: str | None  # cross: who wrote the pair
    item_id: str
    scenario: str
    lang: str
    type: str | None
    order: str  # "12" or "21"
    prompt: str | None
    response: str | None
    predicted: str | None
    predicted_position: int | None
    gold: str
    correct: bool | None  # None when the request failed
    status: str
    reason: str | None
    error: str | None
    cached: bool
    key: str | None

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------- steps


async def generate(engine: Engine, model: str, item: HalluItem, options: Options,
                   params: GenParams) -> GenerationSample:
    types = prompts.requested_types(item, options.gen_types)
    if options.gen_mode == "joint":
        asks = [prompts.generation_joint(item, types)]
    else:
        asks = [prompts.generation_faithful(item), prompts.generation_hallucinated(item, types)]
    responses = await gather_all(engine.chat(model, messages, params) for messages in asks)
    texts = tuple(r.text for r in responses)
    parsed: Generated = read_joint(texts[0], item.source) if options.gen_mode == "joint" \
        else read_separate(texts[0], texts[1], item.source)
    error = next((r.error for r in responses if not r.ok), None)
    return GenerationSample(
        model=model, item_id=item.id, scenario=item.scenario, lang=item.lang,
        type=types[0] if len(types) == 1 else None, mode=options.gen_mode, source=item.source,
        prompts=tuple(m[-1].content for m in asks), responses=texts, hyp_plus=parsed.hyp_plus,
        hyp_minus=parsed.hyp_minus, status="failed" if error else parsed.status, reason=parsed.reason,
        error=error, cached=all(r.cached for r in responses), keys=tuple(r.key for r in responses))


async def run_generation(engine: Engine, models: list[str], items: list[HalluItem], options: Options,
                         params: GenParams) -> list[GenerationSample]:
    engine.expect(len(models) * len(items) * (1 if options.gen_mode == "joint" else 2))
    return await gather_all(generate(engine, m, item, options, params) for m in models for item in items)


async def run_llm_judge(engine: Engine, judge: str, items: dict[str, HalluItem], generated: list[GenerationSample],
                        params: GenParams) -> list[JudgeSample]:
    """The yes/no judge on every hypothesis that parsed (yes = faithful)."""
    jobs = [(g, hyp, text) for g in generated if g.status == "ok"  # an ok pair has both texts
            for hyp, text in (("hyp+", g.hyp_plus), ("hyp-", g.hyp_minus)) if text is not None]
    engine.expect(len(jobs))

    async def one(g: GenerationSample, hypothesis: str, text: str) -> JudgeSample:
        messages = prompts.judge(items[g.item_id], text)
        response = await engine.chat(judge, messages, params)
        faithful, status = read_yes_no(response.text)
        return JudgeSample(judge=judge, generator=g.model, item_id=g.item_id, hypothesis=hypothesis, text=text,
                           faithful=faithful, success=_success(hypothesis, faithful), score=None,
                           prompt=messages[-1].content, response=response.text, status=status,
                           error=response.error, cached=response.cached, key=response.key)

    return await gather_all(one(*job) for job in jobs)


def run_nli_judge(nli, items: dict[str, HalluItem], generated: list[GenerationSample]) -> list[JudgeSample]:
    """The NLI judge: hyp+ succeeds when the source entails it, hyp− when it does not."""
    jobs = [(g, hyp, text) for g in generated if g.status == "ok"  # an ok pair has both texts
            for hyp, text in (("hyp+", g.hyp_plus), ("hyp-", g.hyp_minus)) if text is not None]
    results = nli.predict([(items[g.item_id].source, text) for g, _, text in jobs]) if jobs else []
    return [JudgeSample(judge=f"nli:{nli.name}", generator=g.model, item_id=g.item_id, hypothesis=hyp, text=text,
                        faithful=entailed(r.entailment), success=_success(hyp, entailed(r.entailment)),
                        score=r.entailment, prompt=None, response=None, status="ok", error=None, cached=False,
                        key=None)
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
                      **fields) -> DetectionSample:
    predicted = fields.pop("predicted")
    assert item.label is not None  # detection items are labelled: load_items(need_labels=True), cross_items
    return DetectionSample(step=step, model=model, config=config, generator=generator, item_id=item.id,
                           scenario=item.scenario, lang=item.lang, type=item.type, order="21" if swapped else "12",
                           predicted=predicted, gold=item.label,
                           correct=None if fields["status"] == "failed" else predicted == item.label, **fields)


async def run_detection(engine: Engine, detectors: list[str], variants: tuple[str, ...], items: list[HalluItem],
                        orders: str, seed: int, params: GenParams, nli=None, *, step: str = "detection",
                        generator: str | None = None) -> list[DetectionSample]:
    """Every detector configuration on every item in the asked orders; invalid replies are kept."""
    jobs = [(d, v, item, swapped) for item in items for swapped in shown_orders(item, orders, seed, generator)
            for d in detectors for v in variants]
    engine.expect(len(jobs))

    async def one(detector: str, variant: str, item: HalluItem, swapped: bool) -> DetectionSample:
        pair = prompts.shown(item, swapped)
        messages = prompts.detection(item, pair, variant)
        response = await engine.chat(detector, messages, params)
        read = read_detection(response.text)
        return _detection_sample(
            step, detector, f"{detector}/{variant}", generator, item, swapped, prompt=messages[-1].content,
            response=response.text, predicted=pair.original(read.position) if read.position else None,
            predicted_position=read.position, status=read.status, reason=read.reason, error=response.error,
            cached=response.cached, key=response.key)

    samples = await gather_all(one(*job) for job in jobs)
    if nli is not None:
        samples += nli_detection(nli, items, orders, seed, step=step, generator=generator)
    return samples


def nli_detection(nli, items: list[HalluItem], orders: str, seed: int, *, step: str,
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


def vote(samples: list[DetectionSample], members: tuple[str, ...]) -> list[DetectionSample]:
    """Majority vote of ``members`` on each shown pair; invalid votes abstain, a tie is invalid
    ("no majority"), a pair no member answered (all failed) is failed."""
    name = f"vote({ENSEMBLE_SEP.join(members)})"
    by_pair: dict[tuple, dict[str, DetectionSample]] = {}
    for s in samples:
        if s.config in members:
            by_pair.setdefault((s.generator, s.item_id, s.order), {})[s.config] = s
    out = []
    for votes in by_pair.values():
        first = next(iter(votes.values()))
        answered = [votes[m] for m in members if m in votes and votes[m].status != "failed"]
        winner = majority_vote([v.predicted for v in answered])
        status = "failed" if not answered else ("ok" if winner else "invalid")
        swapped = first.order == "21"
        position = None if winner is None else (1 if (winner == "hyp1") != swapped else 2)
        out.append(replace(
            first, model="ensemble", config=name, prompt=None, predicted=winner, predicted_position=position,
            response=" ".join(f"{m}={votes[m].predicted or votes[m].status}" for m in members if m in votes),
            correct=None if status == "failed" else winner == first.gold, status=status,
            reason=None if status != "invalid" else "no majority", error=None,
            cached=all(v.cached for v in votes.values()), key=None))
    return out


def cross_items(generated: list[GenerationSample], items: dict[str, HalluItem],
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


async def execute(ctx: SuiteContext) -> SuiteResult:
    config, options = ctx.config, ctx.options
    steps = STEPS[options.step]
    items = load_items(config.data, limit=config.limit, seed=config.seed, need_labels="detection" in steps,
                       lang=options.lang, audit=ctx.audit.source(f"--data {config.data or 'trial'}"))
    by_id = {item.id: item for item in items}
    label_params = replace(ctx.params, max_tokens=min(ctx.params.max_tokens, options.label_max_tokens))
    nli = _load_nli(options.nli_model)
    detectors = [await ctx.model(spec) for spec in options.detectors] if options.detectors else list(ctx.models)
    configs = detector_configs(detectors, options.prompts, nli is not None)
    ensemble_specs = options.ensembles or (("all",) if len(configs) > 1 else ())
    ensembles = [ensemble_members(spec, configs) for spec in ensemble_specs]
    samples: list = []
    metrics: dict = {}
    generated: list[GenerationSample] = []
    if "generation" in steps:
        generated = await run_generation(ctx.engine, ctx.models, items, options, ctx.params)
        judged: list[JudgeSample] = []
        if options.judge != "none":
            judge = await ctx.model(options.judge)
            judged += await run_llm_judge(ctx.engine, judge, by_id, generated, label_params)
        if nli is not None:
            judged += run_nli_judge(nli, by_id, generated)
        samples += generated + judged
        metrics["generation"] = generation_metrics(generated, judged, seed=config.seed, n_resamples=options.bootstrap)
    for step in ("detection", "cross"):
        if step not in steps:
            continue
        groups = {None: items} if step == "detection" else cross_items(generated, by_id, config.seed)
        found: list[DetectionSample] = []
        for generator, group in groups.items():
            found += await run_detection(ctx.engine, detectors, options.prompts, group, options.orders, config.seed,
                                         label_params, nli, step=step, generator=generator)
        for members in ensembles:
            found += vote(found, members)
        samples += found
        metrics[step] = _step_metrics(found, configs, config.seed, options.bootstrap, cross=step == "cross")
    extra = {"hallucination": {"steps": list(steps), "items": len(items), "detector_configs": configs,
                               "ensembles": [f"vote({ENSEMBLE_SEP.join(m)})" for m in ensembles],
                               "judge": options.judge, "nli_model": options.nli_model}}
    result = SuiteResult(metrics=metrics, samples=samples, extra=extra)
    result.files["summary.md"] = summary_markdown(metrics)
    if "cross" in metrics:
        result.files["matrix.csv"] = matrix_csv(metrics["cross"]["matrix"])
    return result


def _load_nli(name: str | None):
    if name is None:
        return None
    from robusteval.judges.nli import load_nli

    return load_nli(name)


def _step_metrics(samples: list[DetectionSample], configs: list[str], seed: int, n_resamples: int, *,
                  cross: bool) -> dict:
    names = list(dict.fromkeys(s.config for s in samples))
    out = {"detectors": {c: detector_metrics([s for s in samples if s.config == c], seed=seed, n_resamples=n_resamples)
                         for c in names},
           "agreement": agreement(samples, [c for c in configs if c in names])}
    if cross:  # empty when no generator wrote a valid pair
        out["matrix"] = matrix(samples, names, seed=seed, n_resamples=n_resamples)
    return out


# ---------------------------------------------------------------- summaries


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def summary_tables(metrics: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every summary table; the terminal and summary.md show the same."""
    tables = []
    if gen := metrics.get("generation"):
        rows = []
        for generator, g in gen.items():
            judges = g["judges"] or {"(no judge)": {}}
            for judge, j in judges.items():
                rows.append([generator, _fmt(g["valid"]), str(g["invalid"]), str(g["failed"]), judge,
                             _fmt(j.get("hyp+_faithful")), _fmt(j.get("hyp-_hallucinated")),
                             str(j.get("unjudged", ""))])
        tables.append(("generation", ["generator", "valid output", "invalid", "failed", "judge", "hyp+ faithful",
                                      "hyp- hallucinated", "unjudged"], rows))
    for step in ("detection", "cross"):
        if step not in metrics:
            continue
        m = metrics[step]
        rows = [[config, _fmt(d["f1"]), _fmt(d["accuracy"]), _fmt(d["precision"]), _fmt(d["recall"]),
                 str(d["samples"]), str(d["invalid"]), str(d["failed"]), _fmt(d["position_bias"]["chose_first"]),
                 _num(d["position_bias"]["gold_first"]), _fmt(d.get("order_consistency"))]
                for config, d in m["detectors"].items()]
        tables.append((step, ["detector", "F1", "accuracy", "precision", "recall", "samples", "invalid", "failed",
                              "chose 1st", "gold 1st", "order consistency"], rows))
        breakdown = []
        for config, d in m["detectors"].items():
            for attribute in ("scenario", "lang", "type"):
                for group, g in d[f"by_{attribute}"].items():
                    breakdown.append([config, attribute, group, _fmt(g["f1"]), _fmt(g["accuracy"]), str(g["samples"])])
        tables.append((f"{step} by scenario, language and type",
                       ["detector", "by", "group", "F1", "accuracy", "samples"], breakdown))
        a = m["agreement"]
        rows = [[pair, _num(v["cohen_kappa"]), _num(v["mcc"]), _num(v["agreement"]), str(v["n"])]
                for pair, v in a["pairwise"].items()]
        rows.append([f"all ({len(a['configs'])}): Fleiss' kappa", _num(a["fleiss_kappa"]), "", "", str(a["fleiss_n"])])
        tables.append((f"{step} agreement", ["detectors", "Cohen's kappa", "MCC", "raw agreement", "pairs"], rows))
        if "matrix" in m:
            configs = list(dict.fromkeys(c for row in m["matrix"].values() for c in row))
            rows = [[generator] + [_fmt(row[c]["f1"]) if c in row else "" for c in configs]
                    for generator, row in m["matrix"].items()]
            tables.append(("generator x detector (F1)", ["generator \\ detector", *configs], rows))
    return tables


def summary_markdown(metrics: dict) -> str:
    out = ["# hallucination: summary", ""]
    for title, header, rows in summary_tables(metrics):
        out += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        out.append("")
    return "\n".join(out)


def matrix_csv(cells: dict) -> str:
    """generator,detector,f1,f1_low,f1_high,accuracy,samples,invalid: one line per cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["generator", "detector", "f1", "f1_low", "f1_high", "accuracy", "samples", "invalid"])
    for generator, row in cells.items():
        for config, cell in row.items():
            writer.writerow([generator, config, cell["f1"]["value"], cell["f1"]["ci_low"], cell["f1"]["ci_high"],
                             cell["accuracy"]["value"], cell["samples"], cell["invalid"]])
    return buffer.getvalue()


def print_summary(console, result: SuiteResult) -> None:
    from rich.table import Table

    for title, header, rows in summary_tables(result.metrics):
        if "by scenario" in title:
            continue  # long; in summary.md and results.json
        table = Table(title=title, title_justify="left")
        for column in header:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        console.print(table)


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
    "summary_markdown",
    "validate",
    "vote",
]
