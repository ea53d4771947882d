"""The mcq suite's aggregation: per family, accuracy per variant and overall, consistency across a
question's variants, spread, position bias, each with a CI over items (metrics/stats.py).

A family's group is one question's variants: its formats, orders, templates, or its original
text and perturbed copies (``typo``, ``paraphrase``, ...). Samples come from `suites.mcq` and are
read through `McqSample` (the fields used), so this module imports no suite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from robusteval.metrics.consistency import (
    agreeing_pairs,
    category_sums,
    item_consistency,
    macro_of_sums,
    std_of,
)
from robusteval.metrics.mcq_sensitivity import family_sensitivity
from robusteval.metrics.stats import Estimate, bootstrap_sums, proportion, share_bootstrap, spread_interval
from robusteval.probes.choices import LETTERS
from robusteval.probes.design import crossed_name
from robusteval.results.mcq import FamilyMetrics, PositionShare, VariantMetrics
from robusteval.types import Item


class McqSample(Protocol):
    """What the metrics read of a sample (`suites.mcq.Sample`)."""

    @property
    def item_id(self) -> str: ...
    @property
    def category(self) -> str | None: ...
    @property
    def family(self) -> str: ...
    @property
    def base_family(self) -> str: ...
    @property
    def variant(self) -> str | int: ...
    @property
    def sample(self) -> int: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    @property
    def status(self) -> str: ...
    @property
    def answer_label(self) -> str | None: ...
    @property
    def answer_option(self) -> int | None: ...
    @property
    def gold_label(self) -> str: ...
    @property
    def correct(self) -> bool | None: ...
    @property
    def order(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class FamilyMatrices:
    """One family's replies as items x columns arrays (NaN = absent or failed)."""

    variants: list[str]
    correct: np.ndarray  # items x variants, mean over samples
    answers: np.ndarray  # items x (variants*samples), original option index, -1 invalid
    categories: np.ndarray
    chosen: np.ndarray  # items x label positions: valid answers that chose each shown position
    gold: np.ndarray  # items x label positions: answered variants whose gold sat at each position


def matrices(samples: Sequence[McqSample], family: str, item_ids: list[str]) -> FamilyMatrices:
    rows = [s for s in samples if s.family == family]
    variants = list(dict.fromkeys(str(s.variant) for s in rows))
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
        i, j = index[s.item_id], col[str(s.variant)]
        categories[i] = s.category or ""
        if s.correct is None:
            continue  # failed: leave the cell out
        correct_sum[i, j] += s.correct
        correct_n[i, j] += 1
        answers[i, j * n_samples + s.sample] = -1 if s.answer_option is None else s.answer_option
        if s.labels:  # open-answer math shows no labels: no position to count
            gold[i, s.labels.index(s.gold_label)] += 1
        if s.status == "ok" and s.answer_label is not None:
            chosen[i, s.labels.index(s.answer_label)] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        correct = np.where(correct_n > 0, correct_sum / np.maximum(correct_n, 1), np.nan)
    return FamilyMatrices(variants, correct, answers, categories, chosen, gold)


def family_metrics(samples: Sequence[McqSample], family: str, item_ids: list[str], *, seed: int = 0,
                   n_resamples: int = 1000) -> FamilyMetrics:
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

    def boot(per_item: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray] = _ratio) -> Estimate:
        return bootstrap_sums(per_item, statistic, n_resamples=n_resamples, seed=seed)

    def macro(per_item: np.ndarray) -> Estimate:
        return share_bootstrap(per_item, macro_of_sums, n_resamples=n_resamples, seed=seed)

    per_variant = m.answers.shape[1] // max(1, n_vars)  # answer columns per variant (one per sample)
    variants = {}
    for j, name in enumerate(m.variants):
        vs = [s for s in rows if str(s.variant) == name]
        block = m.answers[:, j * per_variant:(j + 1) * per_variant]
        variants[name] = VariantMetrics(
            accuracy=proportion(correct[:, j], answered[:, j]),
            answered=sum(s.status != "failed" for s in vs),
            invalid=sum(s.status == "invalid" for s in vs),
            invalid_rate=proportion((block == -1).sum(axis=1), (~np.isnan(block)).sum(axis=1)),
            failed=sum(s.status == "failed" for s in vs),
            # SCORE's MMLU-Pro per-prompt accuracy: the mean of the categories' accuracies
            macro_accuracy=macro(category_sums(m.correct[:, j], m.categories)) if has_categories else None,
        )
    by_item = item_consistency(m.answers)
    agree, pairs = agreeing_pairs(m.answers)
    per_variant_sums = np.column_stack([correct, answered])
    return FamilyMetrics(
        variants=variants,
        accuracy=proportion(correct.sum(axis=1), answered.sum(axis=1)),
        consistency_rate=proportion(np.nan_to_num(by_item), np.isfinite(by_item)),
        consistency_rate_pooled=proportion(agree, pairs),
        spread=spread_interval(correct, answered, n_resamples=n_resamples, seed=seed),
        std_across_variants=boot(per_variant_sums, lambda s: std_of(_accuracies(s, n_vars))),
        samples=len(rows),
        invalid=sum(s.status == "invalid" for s in rows),
        failed=sum(s.status == "failed" for s in rows),
        position_bias=position_bias(m),
        macro_accuracy=macro(category_sums(m.correct, m.categories)) if has_categories else None,
        sensitivity=family_sensitivity(rows, m.variants, item_ids, m.correct, m.answers, seed=seed,
                                       n_resamples=n_resamples),
    )


def position_bias(m: FamilyMatrices) -> dict[str, PositionShare]:
    """Per shown label position: how often the model chose it (among valid answers, with a CI)
    against how often it held the correct answer. An unbiased model's two shares match."""
    labels = LETTERS[: m.chosen.shape[1]]  # positions, named as in the A-style formats
    total_gold = m.gold.sum()
    valid = m.chosen.sum(axis=1)
    return {label: PositionShare(chosen=proportion(m.chosen[:, p], valid),
                                 correct=float(m.gold[:, p].sum() / total_gold) if total_gold else None)
            for p, label in enumerate(labels)}


def _ratio(sums: np.ndarray) -> np.ndarray:
    return sums[:, 0] / sums[:, 1]


def _accuracies(sums: np.ndarray, n_vars: int) -> np.ndarray:
    """Per-variant accuracies from the column sums of (correct | answered) per variant."""
    return sums[:, :n_vars] / sums[:, n_vars:]


def metrics(samples: Sequence[McqSample], items: list[Item], families: Sequence[str] | None = None, *,
            cross: Sequence[str] = (), seed: int = 0) -> dict[str, FamilyMetrics]:
    """Metrics per family as the samples name it (a crossed design is one family named like
    ``format×order``; each log-likelihood rule its own, ``order/loglik-label``). ``families``
    (with ``cross``) keeps those whose design family (`base_family`) was asked; None keeps all."""
    item_ids = [item.id for item in items]
    base = {s.family: s.base_family for s in samples}
    wanted = set(families or ()) | ({crossed_name(cross)} if cross else set())
    keep = [f for f in base if families is None or base[f] in wanted]
    return {family: family_metrics(samples, family, item_ids, seed=seed) for family in keep}

