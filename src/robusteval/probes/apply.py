"""Apply any registered perturbation to a text: one call for pure perturbations and model rewrites.

A suite asks ``await perturb_text(name, text, seed=..., rewriter=...)`` and gets a `Perturbed`:
the new text, or None with the reasons when no acceptable version came out. The seed names the
copy (e.g. ``"0:item-17:typo#2"``), so every copy is reproducible and, for rewrites, its own
cached request. Rewrites are checked against `Checks` and asked again (a new seed) up to
``retries`` times; one that never passes is rejected, never used.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from robusteval.engine import Engine, gather_all
from robusteval.errors import UserError
from robusteval.probes.paraphrase import Cost, is_question, leaked_answers, norm_text
from robusteval.probes.registry import UNAVAILABLE_DATA, ItemTransform, Rewrite, TextPerturbation, get
from robusteval.probes.rewrite_checks import fluency_problem, form_problem, language_problem
from robusteval.types import GenParams, Message

Encode = Callable[[list[str]], np.ndarray]  # texts -> unit-norm rows (sentence embeddings)


@dataclass(frozen=True)
class Checks:
    """What a rewrite must keep. ``question``: a question stays a question. ``answers``: gold
    aliases it must not contain (unless the original does). ``bounds``: cosine similarity to the
    original, checked when an encoder is given and the rewrite stays in the same language."""

    question: bool = True
    answers: tuple[str, ...] = ()
    bounds: tuple[float, float] = (0.5, 0.995)
    # an option's rewrite (option_paraphrase): the other options it must not become, and its numbers kept
    others: tuple[str, ...] = ()
    same_numbers: bool = False


@dataclass(frozen=True)
class Perturbed:
    """One perturbed copy of a text."""

    name: str
    original: str
    text: str | None  # None: the rewrite failed or never passed the checks
    attempts: int = 1
    rejections: tuple[str, ...] = ()  # why earlier (or all) candidates were refused
    error: str | None = None  # the rewrite request failed
    similarity: float | None = None
    cost: Cost = Cost()
    estimated: bool = False  # --estimate: the rewrite was counted, not asked; ``text`` is the original

    @property
    def ok(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class Rewriter:
    """The model that writes rewrites, and how it samples (each attempt its own seed)."""

    engine: Engine
    model: str
    temperature: float = 0.7
    max_tokens: int = 256


def seeded_rng(p: TextPerturbation, seed: str | int, instance: tuple[str, int] | None = None) -> random.Random:
    """The generator a pure perturbation draws from. Given ``instance`` (the item's id and the
    copy's index, 0 for the first), a HELM perturbation is seeded as HELM seeds an instance
    (``Random(id)``, then ``Random(str(index) + id)``) and an NL-Augmenter one as NL-Augmenter
    does (``Random(index)``: its default seed 0 for the first copy), so their copies are those
    tools' strings; otherwise, and for robusteval's own, the copy's seed names the generator."""
    if instance is not None and p.origin == "helm":
        item_id, index = instance
        return random.Random(item_id if index == 0 else str(index) + item_id)
    if instance is not None and p.origin == "nlaugmenter":
        return random.Random(instance[1])
    return random.Random(f"{seed}:{p.name}")


def helm_item(p: TextPerturbation, question: str, options: Sequence[str], rng: random.Random
              ) -> tuple[str, tuple[str, ...]]:
    """HELM's `TextPerturbation.apply` on an item: where HELM perturbs references (``p.references``),
    the options first, then the question, from one generator (person names: one substitution for
    all of them); otherwise the question alone and the options as they were."""
    if not p.references:
        return p.apply(question, rng), tuple(options)
    if p.name.partition("@")[0] == "helm:person_name":
        from robusteval.probes import helm

        *named, text = helm.substitute_names([*options, question], rng, p.rate or 0.0, helm.person_names())
        return text, tuple(named)
    perturbed = tuple(p.apply(o, rng) for o in options)
    return p.apply(question, rng), perturbed


async def perturb_text(name: str, text: str, *, seed: str | int, rewriter: Rewriter | None = None,
                       checks: Checks = Checks(), encode: Encode | None = None, retries: int = 3,
                       instance: tuple[str, int] | None = None) -> Perturbed:
    """``text`` under the perturbation ``name`` (see `probes.registry`); ``instance`` (item id,
    copy index) seeds HELM's and NL-Augmenter's perturbations as those tools do (`seeded_rng`)."""
    p = get(name)
    if isinstance(p, TextPerturbation) and p.missing:
        return Perturbed(name, text, None, rejections=(UNAVAILABLE_DATA,))  # `registry.get` warned
    if isinstance(p, TextPerturbation):
        return Perturbed(name, text, p.apply(text, seeded_rng(p, seed, instance)))
    if isinstance(p, ItemTransform):
        raise UserError(f"{name} transforms a multiple-choice question (its options, or the text before it): "
                        "the mcq suite's --families only")
    if rewriter is None:
        raise ValueError(f"{name} is written by a model: give a rewriter")
    return await _rewrite(p, text, str(seed), rewriter, checks, encode, retries)


async def perturb_item(name: str, question: str, options: Sequence[str], *, seed: str, instance: tuple[str, int],
                       rewriter: Rewriter | None = None, answers: tuple[str, ...] = (), with_options: bool = False
                       ) -> tuple[Perturbed, tuple[Perturbed, ...]]:
    """One copy of a multiple-choice item under ``name``: its question (checked as a question that
    leaks none of ``answers``) and, ``with_options``, its options (each its own seed). A HELM
    perturbation that perturbs references takes the options first from the question's generator,
    as HELM does (`helm_item`), so the question is HELM's string whether or not the options are kept."""
    p = get(name)
    if isinstance(p, TextPerturbation) and p.missing:
        return await perturb_text(name, question, seed=seed, instance=instance), ()  # no copy, the reason once
    if isinstance(p, Rewrite) and p.options_only:
        if rewriter is None:
            raise ValueError(f"{name} is written by a model: give a rewriter")
        return Perturbed(name, question, question), tuple(
            await paraphrase_options(p, question, options, seed=seed, rewriter=rewriter))
    if isinstance(p, TextPerturbation) and p.references:
        text, opts = helm_item(p, question, options, seeded_rng(p, seed, instance))
        return Perturbed(name, question, text), tuple(
            Perturbed(name, o, t) for o, t in zip(options, opts)) if with_options else ()
    copy = await perturb_text(name, question, seed=seed, rewriter=rewriter,
                              checks=Checks(question=True, answers=answers), instance=instance)
    if not with_options:
        return copy, ()
    return copy, tuple(await gather_all(
        perturb_text(name, text, seed=f"{seed}:option{i}", rewriter=rewriter, checks=Checks(question=False))
        for i, text in enumerate(options)))


async def _rewrite(p: Rewrite, text: str, seed: str, rw: Rewriter, checks: Checks, encode: Encode | None,
                   retries: int) -> Perturbed:
    messages = (Message("user", p.instruction.format(text=text)),)
    rejections: list[str] = []
    cost = Cost()
    for attempt in range(retries + 1):
        params = GenParams(temperature=rw.temperature, max_tokens=rw.max_tokens,
                           seed=random.Random(f"{seed}:{p.name}:{attempt}").randrange(2**31))
        r = await rw.engine.chat(rw.model, messages, params)
        cost += Cost.of(r)
        if rw.engine.dry_run:
            return Perturbed(p.name, text, text, cost=cost, estimated=True)
        if r.error is not None:
            return Perturbed(p.name, text, None, attempt + 1, tuple(rejections), r.error, cost=cost)
        candidate = clean_rewrite(r.text)
        reason, similarity = await _check(p, text, candidate, checks, encode)
        if reason is None:
            return Perturbed(p.name, text, candidate, attempt + 1, tuple(rejections), similarity=similarity,
                             cost=cost)
        rejections.append(reason)
    return Perturbed(p.name, text, None, retries + 1, tuple(rejections), cost=cost)


_PREAMBLE = re.compile(r"^\s*(?:(?:sure|certainly|of course|okay|ok)[!.,]?\s*)?(?:here(?:'s| is| are)\b[^:\n]*:|"
                       r"(?:the )?(?:rewritten|translated|paraphrased|formal|polite|informal)\b[^:\n]{0,40}:|"
                       r"(?:rewrite|translation|paraphrase|text)\s*:)\s*", re.I)
_QUOTES = "\"'“”‘’«»"


def clean_rewrite(reply: str | None) -> str | None:
    """The rewritten text in a rewriter's reply: without a preamble ("Sure! Here is the formal
    version:"), a code fence or quotes around it; None when nothing is left."""
    text = (reply or "").strip().strip("`").strip()
    for _ in range(2):  # "Sure! Here is the rewrite:" then "Rewrite:" on the next line
        text = _PREAMBLE.sub("", text, count=1).strip()
    if len(text) > 1 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text or None


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# an option a rewrite cannot say otherwise without changing it: one word, or no letters at all ("42", "x = 3")
_FIXED = re.compile(r"\s*\S+\s*|[^A-Za-z]*")


def paraphrase_options(p: Rewrite, question: str, options: Sequence[str], *, seed: str, rewriter: Rewriter
                       ) -> Awaitable[list[Perturbed]]:
    """Each option of several words rewritten by ``p`` (`option_paraphrase`), checked to keep its
    meaning: not another option's text, the same numbers; a one-word or letterless option is kept
    as it is. The question is not rewritten."""
    async def one(i: int, text: str) -> Perturbed:
        if _FIXED.fullmatch(text):
            return Perturbed(p.name, text, text)
        others = tuple(o for j, o in enumerate(options) if j != i)
        checks = Checks(question=False, others=others, same_numbers=True)
        return await _rewrite(p, text, f"{seed}:option{i}", rewriter, checks, None, 3)

    return gather_all(one(i, text) for i, text in enumerate(options))


# Question marks across scripts (Latin and most others, full-width CJK, Arabic, Greek's ";").
_QUESTION_MARKS = ("?", "？", "؟", ";")


def _asks(text: str) -> bool:
    """Whether ``text`` ends with a question mark of any script: the language-independent part of
    `is_question`, for translations (a German question still ends with "?")."""
    return text.rstrip().rstrip(_QUOTES).endswith(_QUESTION_MARKS)


async def _check(p: Rewrite, original: str, candidate: str | None, checks: Checks,
                 encode: Encode | None) -> tuple[str | None, float | None]:
    """Why ``candidate`` fails, or None; and its similarity to the original (when measured)."""
    if not candidate:
        return "empty", None
    if norm_text(candidate) == norm_text(original):
        return "unchanged", None
    if p.same_language and checks.question and is_question(original) and not is_question(candidate):
        return "not_a_question", None
    if not p.same_language and checks.question and _asks(original) and not _asks(candidate):
        return "not_a_question", None  # a translated question keeps its question mark in any script
    if leaked_answers(candidate, checks.answers, original):
        return "contains_answer", None
    if norm_text(candidate) in {norm_text(o) for o in checks.others}:
        return "another_option", None  # two options alike: two right answers, or the gold lost
    if checks.same_numbers and _NUMBER.findall(candidate) != _NUMBER.findall(original):
        return "numbers_changed", None
    target = p.name.split(":", 1)[1] if p.name.startswith("language:") else None
    if reason := (language_problem(original, candidate, target) or form_problem(original, candidate)
                  or fluency_problem(original, candidate)):
        return reason, None
    if encode is None or not p.same_language:
        return None, None
    vecs = await asyncio.to_thread(encode, [original, candidate])  # a local model: off the event loop
    similarity = float(vecs[0] @ vecs[1])
    low, high = checks.bounds
    if similarity < low:
        return "too_far", similarity
    if similarity > high:
        return "too_close", similarity
    return None, similarity
