"""Prompt sets generated from plain requests (ELOQUENT style): the original plus one variant per
variation, each made by a registered perturbation (`probes.registry`).

Pure perturbations (typo, ocr, ...) are applied directly; rewrites (formality, dialect,
``language:sv``, ...) are written by the rewriter model through the engine and checked
(`probes.apply.Checks`: a question stays a question, the rewrite changes the text, and, with an
encoder, stays within the similarity bounds; translations skip the similarity check). A variant
that fails is left out of its set, with its reason, never used; a request whose every variant
failed gives no set. Under ``--estimate`` a rewrite is counted, not written: the variant is the
original with a marker, so that answering it still counts as its own request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from robusteval.data.consistency import PromptSet, PromptVariant
from robusteval.data.prompts import PlainPrompt
from robusteval.engine import gather_all
from robusteval.probes.apply import Checks, Encode, Perturbed, Rewriter, perturb_text
from robusteval.probes.paraphrase import is_question, norm_text
from robusteval.probes.registry import Rewrite, get

ORIGINAL = "original"


@dataclass(frozen=True)
class Rejected:
    """A variant left out of its prompt set, and why."""

    item_id: str
    variation: str
    reason: str


@dataclass(frozen=True)
class Generated:
    sets: list[PromptSet]
    rejected: list[Rejected]
    kept: Counter[str]  # variation -> variants kept
    dropped: list[str]  # request ids with no variant left (no set)
    estimated: bool = False


def variant_language(name: str, original: str) -> str:
    """The language a variant is in: a translation's target, otherwise the original's."""
    head, _, code = name.partition(":")
    return code if head == "language" and code else original


async def generate_sets(prompts: Sequence[PlainPrompt], variations: Sequence[str], *, seed: int,
                        rewriter: Rewriter | None, encode: Encode | None = None,
                        bounds: tuple[float, float] | None = (0.5, 0.995), retries: int = 3) -> Generated:
    """One prompt set per request, in the requests' order, its variants in ``variations``' order."""
    label = "+".join(variations)

    async def one(prompt: PlainPrompt, name: str) -> Perturbed:
        checks = Checks(question=is_question(prompt.prompt), bounds=bounds or (-1.0, 2.0))
        use_encode = encode if bounds is not None else None
        return await perturb_text(name, prompt.prompt, seed=f"{seed}:{prompt.id}:{name}", rewriter=rewriter,
                                  instance=(prompt.id, seed),
                                  checks=checks, encode=use_encode, retries=retries)

    jobs = [(p, name) for p in prompts for name in variations]
    results = await gather_all(one(p, name) for p, name in jobs)
    sets, rejected, dropped = [], [], []
    kept: Counter[str] = Counter()
    estimated = False
    for i, prompt in enumerate(prompts):
        variants = [PromptVariant(prompt.language, prompt.prompt, ORIGINAL)]
        for name, out in zip(variations, results[i * len(variations):(i + 1) * len(variations)]):
            reason = _why_not(out, prompt.prompt)
            if reason is not None:
                rejected.append(Rejected(prompt.id, name, reason))
                continue
            text = out.text or ""
            if out.estimated:  # counted, not written: a distinct request per variant
                estimated, text = True, f"{text} [{name}]"
            kept[name] += 1
            variants.append(PromptVariant(variant_language(name, prompt.language), text, name))
        if len(variants) < 2:
            dropped.append(prompt.id)
            continue
        sets.append(PromptSet(prompt.id, label, tuple(variants), prompt.hint, f"generated from {prompt.id}"))
    return Generated(sets, rejected, kept, dropped, estimated)


def _why_not(out: Perturbed, original: str) -> str | None:
    if out.error is not None:
        return "request failed"
    if out.text is None:
        return out.rejections[-1] if out.rejections else "no rewrite"
    if not out.estimated and norm_text(out.text) == norm_text(original):
        return "unchanged"  # a pure perturbation with nothing to change in this text
    return None


def needs_rewriter(variations: Sequence[str]) -> bool:
    return any(isinstance(get(name), Rewrite) for name in variations)
