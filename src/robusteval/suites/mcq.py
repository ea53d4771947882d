"""The `mcq` suite (SCORE robustness): one question asked under option formats and option orders.

A group is one question's variants. Each reply is read to a shown label, mapped back to the
original option through the variant's permutation, and scored; metrics then ask how accurate each
variant is and how often the variants of one question agree.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, replace

import numpy as np

from robusteval.data.mcq import load_dev_items, load_file, load_items
from robusteval.engine import Engine, gather_all
from robusteval.errors import UserError
from robusteval.metrics.consistency import (
    agreeing_pairs,
    category_sums,
    item_consistency,
    macro_of_sums,
    std_of,
)
from robusteval.metrics.stats import bootstrap_sums, proportion, share_bootstrap, spread_interval
from robusteval.probes.choices import LETTERS
from robusteval.probes.design import FAMILIES, Design, expand
from robusteval.probes.fewshot import ShotPool
from robusteval.probes.templates import BASE, load_templates
from robusteval.readers.labels import read_label
from robusteval.suites.base import SuiteContext, SuiteResult, csv_arg, print_noise_floor
from robusteval.types import GenParams, Item, Response, Variant

NAME = "mcq"
DEFAULT_FAMILIES = ("order", "format")
DEFAULT_DATA = "mmlu"


@dataclass(frozen=True)
class Options:
    """The mcq settings live in RunConfig (families, cross, scoring, templates, shots, ...) since
    mcq was the first suite; nothing more here."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--families", type=csv_arg, help="comma-separated perturbation families (default: order,format)")
    p.add_argument("--scoring", choices=("generate", "loglik"),
                   help="generate: the model writes its answer (default); loglik: options scored by log-likelihood")
    p.add_argument("--cross", type=csv_arg,
                   help="also run the full design of these families crossed, e.g. format,order")
    p.add_argument("--templates", help="YAML file of prompt templates for the prompt/fewshot families")
    p.add_argument("--shots",
                   help="JSONL/CSV file the few-shot examples are drawn from (default: the dataset's dev split)")
    p.add_argument("--shots-per-question", dest="n_shots", type=int, help="worked examples per question (default: 5)")
    p.add_argument("--fewshot-as-multiturn", dest="fewshot_multiturn", action=argparse.BooleanOptionalAction,
                   default=None, help="shots as user/assistant turns (default) or in one prompt")


def validate(config, options: Options) -> None:
    for flag, names in (("--families", config.families), ("--cross", config.cross)):
        if unknown := [f for f in names if f not in FAMILIES]:
            raise UserError(f"unknown {flag} {','.join(unknown)}; available: {', '.join(FAMILIES)}")
    if not config.families and not config.cross:
        raise UserError("give at least one family with --families (or a design with --cross)")
    if len(config.cross) == 1:
        raise UserError("--cross needs two or more families, e.g. --cross format,order")
    for ok, message in (
        (config.scoring in ("generate", "loglik"), "--scoring must be generate or loglik"),
        (config.scoring == "generate" or config.samples == 1, "--samples applies to --scoring generate only"),
        (config.n_shots >= 1, "--shots-per-question must be >= 1"),
    ):
        if not ok:
            raise UserError(message)


async def execute(ctx: SuiteContext) -> SuiteResult:
    config = ctx.config
    data = config.data or DEFAULT_DATA
    items = ctx.shard_items(load_items(data, limit=config.limit, seed=config.seed, audit=ctx.audit), key=_item_id)
    design, design_info = build_design(config, data, ctx.audit)
    samples, metrics_by_model = [], {}
    for model in ctx.models:
        if config.scoring == "loglik":
            model_samples = await run_loglik(ctx.engine, model, items, config.families, design, config.cross)
        else:
            model_samples = await run(ctx.engine, model, items, config.families, ctx.params, config.samples,
                                      design, config.cross)
        samples.extend(model_samples)
        if not ctx.engine.dry_run:  # --estimate: nothing was answered, nothing to measure
            metrics_by_model[model] = metrics(model_samples, items, config.families, seed=config.seed)
    return SuiteResult(metrics=metrics_by_model, samples=samples, extra={"design": design_info})


def _item_id(item: Item) -> str:
    return item.id


def print_summary(console, result: SuiteResult) -> None:
    from robusteval.report.table import print_mcq

    for model, model_metrics in result.metrics.items():
        print_mcq(console, model, model_metrics)
    print_noise_floor(console, result.extra)


def build_design(config, data: str, audit=None) -> tuple[Design, dict]:
    """Templates and shot pool for the families asked; the info dict goes into results.json
    (where shots come from a file or a dev split, its audit goes into ``audit``)."""
    families = set(config.families) | set(config.cross)
    templates = load_templates(config.templates) if families & {"prompt", "fewshot"} else (BASE,)
    info: dict = {"templates": [t.name for t in templates], "cross": list(config.cross)}
    shots = None
    if "fewshot" in families:
        if config.shots:
            shots = ShotPool(tuple(load_file(config.shots, audit)), config.shots)
        elif (dev := load_dev_items(data, audit)) is not None:
            shots = ShotPool(tuple(dev[0]), dev[1])
        else:
            shots = ShotPool(tuple(load_items(data)),
                             "the evaluated set itself (it has no dev split), never the question being asked")
        info |= {"shots_source": shots.source, "shots_per_question": config.n_shots,
                 "fewshot_as_multiturn": config.fewshot_multiturn}
    return Design(templates, shots, config.n_shots, config.fewshot_multiturn, config.seed), info


@dataclass(frozen=True)
class Sample:
    """One variant's request, reply and verdict; a line of samples.jsonl."""

    model: str
    item_id: str
    category: str | None
    family: str
    variant: str
    sample: int
    labels: tuple[str, ...]
    order: tuple[int, ...]
    prompt: str  # the last user message (with fewshot, earlier turns hold the shots)
    turns: int
    response: str | None
    error: str | None
    status: str  # ok | invalid | failed
    answer_label: str | None
    # Indices in the original options; of the first option with the chosen text where a release
    # repeats an option's text (aqua-rat: "8.75" at A and C), so either copy is the same answer.
    answer_option: int | None
    gold_option: int
    gold_label: str
    correct: bool | None  # None when the request failed
    cached: bool
    key: str

    def as_dict(self) -> dict:
        return asdict(self)


async def run(engine: Engine, model: str, items: list[Item], families: tuple[str, ...],
              params: GenParams, samples: int = 1, design: Design = Design(),
              cross: tuple[str, ...] = ()) -> list[Sample]:
    """Ask every variant of every item (``samples`` times each) and read the replies."""
    jobs = [(item, v, k) for item in items for v in expand(item, families, design, cross)
            for k in range(samples)]
    engine.expect(len(jobs))

    async def one(item: Item, variant: Variant, k: int) -> Sample:
        response = await engine.chat(model, variant.messages, params, sample=k)
        return _sample(model, item, variant, k, response)

    return await gather_all(one(*job) for job in jobs)


ANSWER_PREFIX = "The best answer is"


async def run_loglik(engine: Engine, model: str, items: list[Item], families: tuple[str, ...],
                     design: Design = Design(), cross: tuple[str, ...] = ()) -> list[Sample]:
    """Score each shown option by log-likelihood instead of asking the model to write (base models).

    After the prompt and the reply prefix "The best answer is", three rules pick an option:
    ``label`` (log P of " B"), ``text`` (log P of the option's text) and ``text-norm`` (that, per
    character, as lm-evaluation-harness's acc_norm). Each rule's answers form their own family,
    e.g. ``order/loglik-label``, with all the usual metrics. Backends that return no prompt
    log-probabilities (llama.cpp) score labels only.
    """
    with_text = engine.supports_text_loglik(model)
    jobs = [(item, v) for item in items for v in expand(item, families, design, cross)]
    engine.expect(sum(len(v.labels) * (2 if with_text else 1) for _, v in jobs))

    async def one(item: Item, v: Variant) -> list[Sample]:
        labels = await gather_all(engine.loglik(model, v.messages, f" {label}", ANSWER_PREFIX) for label in v.labels)
        scored = {"label": labels}
        if with_text:
            texts = await gather_all(engine.loglik(model, v.messages, f" {item.options[i]}", ANSWER_PREFIX)
                                     for i in v.order)
            scored["text"] = texts
            scored["text-norm"] = [replace(r, loglik=r.loglik / max(1, len(item.options[i]) + 1))
                                   if r.loglik is not None else r for r, i in zip(texts, v.order)]
        return [_loglik_sample(model, item, v, rule, responses) for rule, responses in scored.items()]

    return [s for group in await gather_all(one(*job) for job in jobs) for s in group]


def _loglik_sample(model: str, item: Item, v: Variant, rule: str, responses: list) -> Sample:
    failed = next((r for r in responses if not r.ok), None)
    scores = [r.loglik for r in responses]
    text = None if failed else " ".join(f"{label}={score:.4f}" for label, score in zip(v.labels, scores))
    position = None if failed else max(range(len(scores)), key=scores.__getitem__)
    reply = None if position is None else f"{ANSWER_PREFIX} {v.labels[position]}"
    response = Response(key=responses[0].key, text=reply, error=failed.error if failed else None,
                        cached=all(r.cached for r in responses))
    sample = _sample(model, item, replace(v, family=f"{v.family}/loglik-{rule}"), 0, response)
    return replace(sample, response=text)


def _sample(model: str, item: Item, variant: Variant, k: int, response) -> Sample:
    answer = read_label(response.text, variant.labels)
    option = variant.original_index(answer.position) if answer.position is not None else None
    if option is not None:
        option = item.options.index(item.options[option])  # a repeated text is one answer
    gold = item.options.index(item.options[item.answer])
    gold_position = variant.order.index(item.answer)
    return Sample(
        model=model, item_id=item.id, category=item.category, family=variant.family, variant=variant.name,
        sample=k, labels=variant.labels, order=variant.order, prompt=variant.messages[-1].content,
        turns=len(variant.messages),
        response=response.text, error=response.error, status=answer.status, answer_label=answer.label,
        answer_option=option, gold_option=gold, gold_label=variant.labels[gold_position],
        correct=None if answer.status == "failed" else option == gold, cached=response.cached,
        key=response.key,
    )


@dataclass(frozen=True)
class FamilyMatrices:
    """One family's replies as items x columns arrays (NaN = absent or failed)."""

    variants: list[str]
    correct: np.ndarray  # items x variants, mean over samples
    answers: np.ndarray  # items x (variants*samples), original option index, -1 invalid
    categories: np.ndarray
    chosen: np.ndarray  # items x label positions: valid answers that chose each shown position
    gold: np.ndarray  # items x label positions: answered variants whose gold sat at each position


def matrices(samples: list[Sample], family: str, item_ids: list[str]) -> FamilyMatrices:
    rows = [s for s in samples if s.family == family]
    variants = list(dict.fromkeys(s.variant for s in rows))
    n_samples = max((s.sample for s in rows), default=0) + 1
    index = {item_id: i for i, item_id in enumerate(item_ids)}
    col = {v: j for j, v in enumerate(variants)}
    correct_sum = np.zeros((len(item_ids), len(variants)))
    correct_n = np.zeros((len(item_ids), len(variants)))
    answers = np.full((len(item_ids), len(variants) * n_samples), np.nan)
    categories = np.array(["" for _ in item_ids], dtype=object)
    positions = max((len(s.labels) for s in rows), default=0)
    chosen = np.zeros((len(item_ids), positions))
    gold = np.zeros((len(item_ids), positions))
    for s in rows:
        i, j = index[s.item_id], col[s.variant]
        categories[i] = s.category or ""
        if s.correct is None:
            continue  # failed: leave the cell out
        correct_sum[i, j] += s.correct
        correct_n[i, j] += 1
        answers[i, j * n_samples + s.sample] = -1 if s.answer_option is None else s.answer_option
        gold[i, s.labels.index(s.gold_label)] += 1
        if s.status == "ok":
            chosen[i, s.labels.index(s.answer_label)] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        correct = np.where(correct_n > 0, correct_sum / np.maximum(correct_n, 1), np.nan)
    return FamilyMatrices(variants, correct, answers, categories, chosen, gold)


def family_metrics(samples: list[Sample], family: str, item_ids: list[str], *, seed: int = 0,
                   n_resamples: int = 1000) -> dict:
    """Per-variant accuracy, overall accuracy, consistency rate and spread, each with a 95% CI.
    Accuracies are micro (every answered question weighs the same) and, where the items have two or
    more categories, also macro (every category weighs the same, as SCORE reports MMLU-Pro).

    Items are the unit of every interval (metrics/stats.py says which interval and why): shares of
    cells (accuracies, consistency rates, invalid rates, chosen positions) get Wilson intervals at
    their effective number of cells (`proportion`), the spread a range from pairwise differences
    (`spread_interval`), other statistics of per-item sums a BCa bootstrap (`bootstrap_sums`)."""
    m = matrices(samples, family, item_ids)
    rows = [s for s in samples if s.family == family]
    n_vars = len(m.variants)
    answered = ~np.isnan(m.correct)
    correct = np.where(answered, m.correct, 0.0)
    has_categories = len({c for c in m.categories if c}) > 1

    def boot(per_item: np.ndarray, statistic=_ratio) -> dict:
        return bootstrap_sums(per_item, statistic, n_resamples=n_resamples, seed=seed).as_dict()

    def ratio(numerator: np.ndarray, denominator: np.ndarray) -> dict:
        return proportion(numerator, denominator).as_dict()

    def macro(per_item: np.ndarray) -> dict:
        return share_bootstrap(per_item, macro_of_sums, n_resamples=n_resamples, seed=seed).as_dict()

    per_variant = m.answers.shape[1] // max(1, n_vars)  # answer columns per variant (one per sample)
    variants = {}
    for j, name in enumerate(m.variants):
        vs = [s for s in rows if s.variant == name]
        block = m.answers[:, j * per_variant:(j + 1) * per_variant]
        variants[name] = {
            "accuracy": ratio(correct[:, j], answered[:, j]),
            "answered": sum(s.status != "failed" for s in vs),
            "invalid": sum(s.status == "invalid" for s in vs),
            "invalid_rate": ratio((block == -1).sum(axis=1), (~np.isnan(block)).sum(axis=1)),
            "failed": sum(s.status == "failed" for s in vs),
        }
        if has_categories:  # SCORE's MMLU-Pro per-prompt accuracy: the mean of the categories' accuracies
            variants[name]["macro_accuracy"] = macro(category_sums(m.correct[:, j], m.categories))
    by_item = item_consistency(m.answers)
    agree, pairs = agreeing_pairs(m.answers)
    per_variant_sums = np.column_stack([correct, answered])
    result = {
        "variants": variants,
        "accuracy": ratio(correct.sum(axis=1), answered.sum(axis=1)),
        "consistency_rate": ratio(np.nan_to_num(by_item), np.isfinite(by_item)),
        "consistency_rate_pooled": ratio(agree, pairs),
        "spread": spread_interval(correct, answered, n_resamples=n_resamples, seed=seed).as_dict(),
        "std_across_variants": boot(per_variant_sums, lambda s: std_of(_accuracies(s, n_vars))),
        "samples": len(rows),
        "invalid": sum(s.status == "invalid" for s in rows),
        "failed": sum(s.status == "failed" for s in rows),
    }
    result["position_bias"] = position_bias(m, ratio)
    if has_categories:
        result["macro_accuracy"] = macro(category_sums(m.correct, m.categories))
    return result


def position_bias(m: FamilyMatrices, ratio) -> dict:
    """Per shown label position: how often the model chose it (among valid answers, with a CI)
    against how often it held the correct answer. An unbiased model's two shares match."""
    labels = LETTERS[: m.chosen.shape[1]]  # positions, named as in the A-style formats
    total_gold = m.gold.sum()
    valid = m.chosen.sum(axis=1)
    return {label: {"chosen": ratio(m.chosen[:, p], valid),
                    "correct": float(m.gold[:, p].sum() / total_gold) if total_gold else None}
            for p, label in enumerate(labels)}


def _ratio(sums: np.ndarray) -> np.ndarray:
    return sums[:, 0] / sums[:, 1]


def _accuracies(sums: np.ndarray, n_vars: int) -> np.ndarray:
    """Per-variant accuracies from the column sums of (correct | answered) per variant."""
    return sums[:, :n_vars] / sums[:, n_vars:]


def metrics(samples: list[Sample], items: list[Item], families: tuple[str, ...] | None = None, *,
            seed: int = 0) -> dict:
    """Metrics per family (crossed designs are one family named like ``format×order``)."""
    item_ids = [item.id for item in items]
    present = list(dict.fromkeys(s.family for s in samples))
    wanted = present if families is None else [f for f in present if f.split("/")[0] in families or "×" in f]
    return {family: family_metrics(samples, family, item_ids, seed=seed) for family in wanted}


__all__ = ["DEFAULT_FAMILIES", "FAMILIES", "NAME", "Options", "Sample", "add_arguments", "build_design", "execute",
           "family_metrics", "matrices", "metrics", "print_summary", "run", "validate"]
