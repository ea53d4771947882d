"""Asking the variants: each reply read to a shown label, mapped back to the original option
through the variant's permutation, and scored; or each option scored by log-likelihood."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from robusteval.engine import gather_all
from robusteval.probes.design import Design, expand
from robusteval.readers import Reader, get_reader
from robusteval.suites.base import SampleBase, SuiteContext
from robusteval.types import GenParams, Item, Response, Variant


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
    # how the default reader read the reply: label, phrase, text or invalid (`readers.content`);
    # None for the named readers, log-likelihood scoring and failed requests
    read_as: str | None = None


async def ask_each(ctx: SuiteContext[Any], model: str, items: list[Item], families: tuple[str, ...], params: GenParams,
                   samples: int, design: Design, cross: tuple[str, ...], emit: Callable[[Sample], None],
                   cells: set[tuple[str, str, str]] | None = None, reader: Reader | None = None) -> None:
    """`ask`, handing each sample to ``emit`` in the same order instead of returning them all
    (`_stream`): neither the prompts nor the samples of the whole run are ever held at once."""
    read = reader or get_reader()
    await _stream(ctx, model, items, lambda item: expand(item, families, design, cross),
                  partial(_sample, reader=read), params, samples, design, emit, cells)


async def _stream(ctx: SuiteContext[Any], model: str, items: list[Any], expand_item: Callable[[Any], Iterable[Variant]],
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
    or for a draw of the seeds family the family's temperature and the draw as sample index. Either
    way the engine sends sample index k with the seed ``run seed + k`` (`GenParams.for_sample`); both
    enter the cache key: draw 3 is the same request whether K is 5 or 10."""
    if variant.draw is None:
        return params, k
    return replace(params, temperature=design.seed_temperature), variant.draw



ANSWER_PREFIX = "The best answer is"
LOGLIK = "loglik-"  # a loglik rule's family: order/loglik-label


async def ask_loglik(ctx: SuiteContext[Any], model: str, items: list[Item], families: tuple[str, ...],
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


def _shown_options(item: Item, v: Variant) -> tuple[str, ...]:
    """The option texts in the order the variant shows them (a copy's own texts where it has them)."""
    return v.options or tuple(item.options[i] for i in v.order)


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
    return replace(sample, response=text, base_family=v.family, rule=rule, logliks=() if failed else tuple(scores),
                   read_as=None)  # nothing was written to read


def make_sample(model: str, item: Item, variant: Variant, k: int, response: Response,
                reader: Reader | None = None) -> Sample:
    """A reply to ``variant`` read (by ``reader``, default robusteval's) and scored, as a run scores
    it (`robusteval score` scores replies written elsewhere with it)."""
    return _sample(model, item, variant, k, response, reader)


def _sample(model: str, item: Item, variant: Variant, k: int, response: Response,
            reader: Reader | None = None) -> Sample:
    answer = (reader or get_reader()).read_reply(response.text, variant.labels, _shown_options(item, variant))
    option = None
    if answer.position is not None and answer.position >= len(variant.order):
        # a label past the options shown ("J" of 9, `readers.mmlu_pro`): a wrong answer, the same one
        # whatever the order, that no option index can equal
        option = answer.position
    elif answer.position is not None and variant.original_index(answer.position) >= len(item.options):
        option = variant.original_index(answer.position)  # an option a copy added (add_distractor): wrong
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
        key=response.key, read_as=answer.read_as,
    )



def _chosen(cells: set[tuple[str, str, str]] | None, item_id: str, variant: Variant) -> bool:
    """Whether a variant is asked: every one without ``cells``, else those ``--budget`` chose."""
    return cells is None or (item_id, variant.family, variant.name) in cells
