"""Open-answer math (``--data gsm8k``, ``math``, ``math500``, or a file of their schema): mcq's
``prompt`` and ``seeds`` families on problems under math templates, the final answer read by
`readers.math` instead of an option letter."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robusteval.data.math import MathItem, load_math
from robusteval.probes.design import Design
from robusteval.probes.math_prompts import expand_math, load_math_templates
from robusteval.readers.math import is_equivalent, read_math
from robusteval.results.mcq import McqExtra
from robusteval.suites.base import SuiteContext, SuiteResult
from robusteval.suites.mcq.ask import Sample, _stream
from robusteval.suites.mcq.budget import ask_models, plan_budget
from robusteval.suites.mcq.options import Options, math_families
from robusteval.types import GenParams, Response, Variant


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
        grids, info = plan_budget(options, [p.id for p in problems], ((p.id, v.family, v.name) for p in problems
                                  for v in expand_math(p, families, design)), config.seed, design)
        design_info |= info
    async def ask(model: str, cells: set[tuple[str, str, str]] | None, keep: Callable[[Sample], None]) -> None:
        await ask_math(ctx, model, problems, families, ctx.params, config.samples, design, keep, cells)

    asked = await ask_models(ctx, [p.id for p in problems], grids, ask,
                             lambda tally: tally.metrics_in_order(families, seed=config.seed))
    return asked.result(McqExtra(design=design_info))


def _problem_id(problem: MathItem) -> str:
    return problem.id



@dataclass(frozen=True, kw_only=True)
class MathSample(Sample):
    """An open-answer math reply: the answer as written, the gold, and the rule that found the answer
    (`readers.math`). ``answer_option`` is 0 for an answer equal to the gold, else a number that
    names its normalised text (so the consistency rate compares answers), None when none was found."""

    answer_text: str | None = None
    gold_answer: str = ""
    extraction: str | None = None


async def ask_math(ctx: SuiteContext[Any], model: str, problems: list[MathItem], families: tuple[str, ...],
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
