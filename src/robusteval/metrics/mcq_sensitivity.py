"""Every sensitivity measure of one mcq family (or crossed design), from the matrices the suite's
metrics already build (`metrics.mcq.matrices`), against the unperturbed variant of each question.

The unperturbed variant is the one at the base of every axis the family varies: style ``A.``,
the base template, the original question, the published option order. The option order's base is
a different column in each question (``gold@B`` where the gold is the published B), so the
reference is given per item (`metrics.sensitivity` takes a column per item). Families with no
unperturbed member (``fewshot``: every variant has shots; ``seeds``: every sample is alike) get
no reference, so no flip or drop rate. Under log-likelihood scoring the option log-probabilities
give POSIX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from robusteval.labels import BASE_STYLE
from robusteval.metrics.sensitivity import sensitivity
from robusteval.probes.design import ORIGINAL
from robusteval.probes.templates import BASE
from robusteval.results.sensitivity import Sensitivity

BASE_NAMES = frozenset({BASE_STYLE.name, BASE.name, ORIGINAL})
ORDER_PREFIX = "gold@"  # the option order's variants (probes.choices.gold_swaps)


class VariantSample(Protocol):
    """What the reference and POSIX read of a sample (`suites.mcq.Sample`, `results.mcq.SampleRow`)."""

    @property
    def item_id(self) -> str: ...
    @property
    def variant(self) -> str | int: ...
    @property
    def order(self) -> tuple[int, ...]: ...


def is_unperturbed(variant: str, order: Sequence[int]) -> bool:
    """Whether a variant sits at the base of every axis its name lists (``A.|gold@C`` in a crossed
    design): each part a base name, or an option order that is the published one."""
    published = tuple(order) == tuple(range(len(order)))
    return all(part in BASE_NAMES or (part.startswith(ORDER_PREFIX) and published) for part in variant.split("|"))


def reference_columns(rows: Sequence[VariantSample], variants: list[str],
                      item_ids: list[str]) -> tuple[np.ndarray, str | None]:
    """Per item, the column of its unperturbed variant (-1 where it has none), and the name to
    show for it (the variant's name where it is one column for every item)."""
    index = {item_id: i for i, item_id in enumerate(item_ids)}
    col = {v: j for j, v in enumerate(variants)}
    ref = np.full(len(item_ids), -1)
    for s in rows:
        if is_unperturbed(str(s.variant), s.order):
            ref[index[s.item_id]] = col[str(s.variant)]
    return ref, reference_name(ref, variants)


def reference_name(ref: np.ndarray, variants: list[str]) -> str | None:
    """The name to show for the reference columns ``ref`` (None where no item has one)."""
    named = {variants[j] for j in ref if j >= 0}
    if not named:
        return None
    return named.pop() if len(named) == 1 else "unperturbed (published order)"


def loglik_tensor(rows: Sequence[Any], variants: list[str], item_ids: list[str]) -> np.ndarray | None:
    """Items x variants x options: the log-probability of each original option under each variant's
    prompt (from the samples' ``logliks``, in shown order); None when no sample has them."""
    scored = [s for s in rows if getattr(s, "logliks", ())]
    if not scored:
        return None
    n_options = max(len(s.order) for s in scored)
    index = {item_id: i for i, item_id in enumerate(item_ids)}
    col = {v: j for j, v in enumerate(variants)}
    out = np.full((len(item_ids), len(variants), n_options), np.nan)
    for s in scored:
        for position, option in enumerate(s.order):
            out[index[s.item_id], col[str(s.variant)], option] = s.logliks[position]
    return out


def family_sensitivity(rows: Sequence[VariantSample], variants: list[str], item_ids: list[str],
                       correct: np.ndarray, answers: np.ndarray, *, seed: int = 0,
                       n_resamples: int = 1000) -> Sensitivity:
    """Every measure of `metrics.sensitivity` for one family's ``rows`` (its samples), whose
    matrices (``correct`` items x variants, ``answers`` items x variants*samples) are built."""
    ref, _ = reference_columns(rows, variants, item_ids)
    return measures(ref, loglik_tensor(rows, variants, item_ids), variants, correct, answers, seed=seed,
                    n_resamples=n_resamples)


def measures(ref: np.ndarray, loglik: np.ndarray | None, variants: list[str], correct: np.ndarray,
             answers: np.ndarray, *, seed: int = 0, n_resamples: int = 1000) -> Sensitivity:
    """`family_sensitivity` from the per-item reference columns and the log-likelihood tensor
    (`metrics.mcq.McqTally` keeps both while the samples stream by, not the samples)."""
    name = reference_name(ref, variants)
    report = sensitivity(correct, answers=answers, reference=ref if name is not None else None,
                         reference_name=name, names=variants, loglik=loglik, seed=seed, n_resamples=n_resamples)
    return Sensitivity.of(report)
