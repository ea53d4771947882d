"""Perturbed copies of the questions, written before any is asked; a copy that fails its checks
is left out of its group and counted."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from robusteval.data.audit import DataAudit
from robusteval.probes.apply import Perturbed, Rewriter, perturb_item
from robusteval.probes.design import Copy
from robusteval.probes.registry import ItemTransform, Rewrite, get
from robusteval.results.mcq import CopyCounts
from robusteval.types import Item

AskAll = Callable[[list[Any], Callable[[Any], Awaitable[Any]]], Awaitable[list[Any]]]
_BARE = re.compile(r"\s*(?:\w|[-+]?[\d.,/%]+)\s*")  # one character, or a bare number


def gold_aliases(item: Item) -> tuple[str, ...]:
    """What a rewrite of the question must not newly contain: the gold option's text, unless it is
    one character or a bare number ("B", "42"), which a faithful rewrite can hold by chance
    (whole-word matches of such a text say nothing about leaking the answer)."""
    gold = item.options[item.answer]
    return () if _BARE.fullmatch(gold) else (gold,)


async def write_copies(ask_all: AskAll, items: list[Item], families: tuple[str, ...], *, k: int, seed: int,
                       rewriter: Rewriter | None, with_options: bool = False, pool: list[Item] | None = None
                       ) -> tuple[dict[str, dict[str, tuple[Copy, ...]]], list[CopyCounts]]:
    """``k`` perturbed copies of every item's question per family (copy ``j`` seeded from the run's
    seed, the item, the family and ``j``; rewrites through ``rewriter``, cached). Returns the copies
    that passed their checks, by item and family, and per family what became of the others.

    Under ``--estimate`` a rewrite is counted, not written: its copy keeps the original text with
    its name appended, so the questions it would be asked are counted as requests of their own.
    ``pool``: the questions an item transform draws from (``add_distractor``: the whole dataset, not
    only the questions asked; default ``items``)."""
    jobs = [(item, family, j) for family in families for item in items for j in range(1, k + 1)]

    async def one(job: tuple[Item, str, int]) -> tuple[Perturbed, tuple[Perturbed, ...]]:
        item, family, j = job
        copy_seed = f"{seed}:{item.id}:{family}#{j}"
        if isinstance(p := get(family), ItemTransform):
            return transform_item(p, item, items if pool is None else pool, copy_seed)
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
        verdict = _verdict(parts, whole_item=_whole_item(family))
        tally[family][verdict] += 1
        if verdict == "rejected" and not question.rejections:
            reasons[family]["unchanged"] += 1  # a pure perturbation found nothing to change
        if verdict == "failed" or verdict == "rejected":
            continue
        text = f"{item.question} ({name})" if verdict == "estimated" else question.text
        # an option no perturbation could change (or whose rewrite was refused) keeps its text
        opts = (tuple(p.text or p.original for p in options if p.text or p.original)
                if options and verdict != "estimated" else None)
        copies[item.id][family].append(Copy(name, text or item.question, opts))
    counts = [CopyCounts(family=f, kind=get(f).kind, asked=len(items) * k,
                         kept=tally[f]["kept"] + tally[f]["estimated"], rejected=tally[f]["rejected"],
                         failed=tally[f]["failed"], estimated=tally[f]["estimated"], reasons=dict(reasons[f]),
                         rewriter=rewriter.model if rewriter and isinstance(get(f), Rewrite) else None)
              for f in families]
    return {i: {f: tuple(c) for f, c in fams.items()} for i, fams in copies.items()}, counts


def transform_item(p: ItemTransform, item: Item, pool: list[Item], seed: str
                   ) -> tuple[Perturbed, tuple[Perturbed, ...]]:
    """An item transform's copy in the form of a perturbed question and options: an option it adds
    comes as a `Perturbed` whose original is empty; a refused copy keeps no text and its reason."""
    out = p.fn(item, pool, random.Random(f"{seed}:{p.name}"))
    if out.question is None:
        return Perturbed(p.name, item.question, None, rejections=(out.reason or "refused",)), ()
    originals = (*item.options, *[""] * (len(out.options) - len(item.options)))
    return (Perturbed(p.name, item.question, out.question),
            tuple(Perturbed(p.name, o, t) for o, t in zip(originals, out.options)))


def _whole_item(family: str) -> bool:
    """Whether a family changes a question's options rather than its text (its copy is kept when an
    option changed)."""
    p = get(family)
    return isinstance(p, ItemTransform) or (isinstance(p, Rewrite) and p.options_only)


def _verdict(parts: tuple[Perturbed, ...], whole_item: bool = False) -> str:
    """kept | estimated | failed (a rewrite request failed) | rejected: the question's copy never
    passed its checks, or a pure perturbation changed nothing (the copy would be the original; for
    an item transform, ``whole_item``, neither the question nor an option changed)."""
    question = parts[0]
    if any(p.estimated for p in parts):
        return "estimated"
    if any(p.error is not None for p in parts):
        return "failed"
    changed = parts if whole_item else (question,)
    if question.text is None or all(p.text == p.original for p in changed):
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
