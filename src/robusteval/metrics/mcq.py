"""The mcq suite's aggregation: per family, accuracy per variant and overall, consistency across a
question's variants, spread, position bias, each with a CI over items (metrics/stats.py).

A family's group is one question's variants: its formats, orders, templates, or its original
text and perturbed copies (``typo``, ``paraphrase``, ...). Samples come from `suites.mcq` and are
read through `McqSample` (the fields used), so this module imports no suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from robusteval.estimate import Estimate
from robusteval.labels import LETTERS
from robusteval.metrics.circular import CIRCULAR, circular_metrics
from robusteval.metrics.consistency import (
    agreeing_pairs,
    category_sums,
    item_consistency,
    macro_of_sums,
    std_of,
)
from robusteval.metrics.mcq_sensitivity import is_unperturbed, measures
from robusteval.metrics.stats import bootstrap_sums, proportion, share_bootstrap, spread_interval
from robusteval.metrics.two_way import is_sampled, population
from robusteval.probes.design import crossed_name
from robusteval.results.mcq import CategoryMetrics, FamilyMetrics, InvalidReplies, PositionShare, VariantMetrics
from robusteval.types import READ_AS, Item


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
    correct_valid: np.ndarray  # the same over valid replies only (NaN where a cell has none)
    answers: np.ndarray  # items x (variants*samples), original option index, -1 invalid
    categories: np.ndarray
    chosen: np.ndarray  # items x label positions: valid answers that chose each shown position
    gold: np.ndarray  # items x label positions: answered variants whose gold sat at each position


class _FamilyTally:
    """One family's replies as compact per-item arrays, filled one sample at a time."""

    def __init__(self, n_items: int, base_family: str):
        self.n_items = n_items
        self.base_family = base_family
        self.columns: dict[str, int] = {}  # variant name -> column, in order of first appearance
        self.correct_sum: list[np.ndarray] = []  # per variant: items (int32)
        self.correct_n: list[np.ndarray] = []
        self.valid_n: list[np.ndarray] = []  # per variant: items' valid replies (the correct ones are all valid)
        # (variant, sample) -> per item: the original option chosen, -1 invalid, NaN absent or failed
        self.answers: dict[tuple[int, int], np.ndarray] = {}
        self.n_samples = 1
        self.categories = np.array(["" for _ in range(n_items)], dtype=object)
        self.chosen = np.zeros((n_items, 0), dtype=np.int32)  # items x label positions
        self.gold = np.zeros((n_items, 0), dtype=np.int32)
        self.answered: list[int] = []  # per variant: samples not failed
        self.invalid: list[int] = []
        self.failed: list[int] = []
        self.invalid_by_item = np.zeros(n_items, dtype=np.int32)  # unreadable replies per item (categories)
        self.samples = 0
        self.reference = np.full(n_items, -1)  # per item: the column of its unperturbed variant
        self.width = np.zeros(n_items, dtype=np.int32)  # per item: the most options shown (circular's rotations)
        self.logliks: dict[int, np.ndarray] = {}  # --scoring loglik: variant -> items x options
        self.read_as: dict[str, int] = {}  # the default reader's ways of reading (`READ_AS`) -> replies

    def add(self, i: int, s: McqSample) -> None:
        variant = str(s.variant)
        j = self.columns.get(variant)
        if j is None:
            j = self.columns[variant] = len(self.columns)
            for counts in (self.correct_sum, self.correct_n, self.valid_n):
                counts.append(np.zeros(self.n_items, dtype=np.int32))
            for tally in (self.answered, self.invalid, self.failed):
                tally.append(0)
        self.samples += 1
        self.n_samples = max(self.n_samples, s.sample + 1)
        self.categories[i] = s.category or ""
        self.answered[j] += s.status != "failed"
        self.invalid[j] += s.status == "invalid"
        self.invalid_by_item[i] += s.status == "invalid"
        self.failed[j] += s.status == "failed"
        count_read_as(self.read_as, s)
        if is_unperturbed(variant, s.order):
            self.reference[i] = j
        if logliks := getattr(s, "logliks", ()):
            self._add_logliks(i, j, s.order, logliks)
        self.width[i] = max(self.width[i], len(s.labels))
        if len(s.labels) > self.chosen.shape[1]:
            grow = ((0, 0), (0, len(s.labels) - self.chosen.shape[1]))
            self.chosen, self.gold = np.pad(self.chosen, grow), np.pad(self.gold, grow)
        if s.correct is None:
            return  # failed: leave the cell out
        self.correct_sum[j][i] += s.correct
        self.correct_n[j][i] += 1
        self.valid_n[j][i] += s.status != "invalid"
        if not getattr(s, "answer_known", True):
            return  # a correctness grid without the options chosen: no measure compares its answers
        column = self.answers.get((j, s.sample))
        if column is None:
            column = self.answers[j, s.sample] = np.full(self.n_items, np.nan)
        column[i] = -1 if s.answer_option is None else s.answer_option
        if s.labels:  # open-answer math shows no labels: no position to count
            self.gold[i, s.labels.index(s.gold_label)] += 1
        if s.status == "ok" and s.answer_label in s.labels:  # not a label past the options (readers.mmlu_pro)
            self.chosen[i, s.labels.index(s.answer_label)] += 1

    def _add_logliks(self, i: int, j: int, order: tuple[int, ...], logliks: tuple[float, ...]) -> None:
        width = max([len(order), *(m.shape[1] for m in self.logliks.values())])
        for key, m in self.logliks.items():
            if m.shape[1] < width:
                self.logliks[key] = np.pad(m, ((0, 0), (0, width - m.shape[1])), constant_values=np.nan)
        if j not in self.logliks:
            self.logliks[j] = np.full((self.n_items, width), np.nan)
        for position, option in enumerate(order):
            self.logliks[j][i, option] = logliks[position]

    def item_counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per item, over all variants and samples: replies right, replies answered (not failed),
        replies unreadable."""
        zeros = np.zeros(self.n_items)
        right = np.sum(self.correct_sum, axis=0) if self.correct_sum else zeros
        answered = np.sum(self.correct_n, axis=0) if self.correct_n else zeros
        return np.asarray(right, dtype=float), np.asarray(answered, dtype=float), self.invalid_by_item

    def loglik_tensor(self) -> np.ndarray | None:
        """Items x variants x options (`metrics.mcq_sensitivity.loglik_tensor`); None without logliks."""
        if not self.logliks:
            return None
        width = max(m.shape[1] for m in self.logliks.values())
        out = np.full((self.n_items, len(self.columns), width), np.nan)
        for j, m in self.logliks.items():
            out[:, j, :m.shape[1]] = m
        return out

    def matrices(self) -> FamilyMatrices:
        n_vars = len(self.columns)
        correct_sum = np.column_stack(self.correct_sum).astype(float) if n_vars else np.zeros((self.n_items, 0))
        correct_n = np.column_stack(self.correct_n).astype(float) if n_vars else np.zeros((self.n_items, 0))
        answers = np.full((self.n_items, n_vars * self.n_samples), np.nan)
        for (j, k), column in self.answers.items():
            answers[:, j * self.n_samples + k] = column
        valid_n = np.column_stack(self.valid_n).astype(float) if n_vars else np.zeros((self.n_items, 0))
        with np.errstate(invalid="ignore", divide="ignore"):
            correct = np.where(correct_n > 0, correct_sum / np.maximum(correct_n, 1), np.nan)
            correct_valid = np.where(valid_n > 0, correct_sum / np.maximum(valid_n, 1), np.nan)
        return FamilyMatrices(list(self.columns), correct, correct_valid, answers, self.categories,
                              self.chosen.astype(float), self.gold.astype(float))


class McqTally:
    """A model's mcq replies, kept as compact per-item arrays (per family: an int8 answer and the
    correctness counts per item and variant, positions chosen and holding the gold) instead of the
    samples themselves, so a run's memory does not grow with its number of samples. `add` takes
    the samples in the order they are written; the metrics equal those of `metrics` on the same
    samples (`metrics` is this tally over a list)."""

    def __init__(self, item_ids: list[str]):
        self.item_ids = item_ids
        self.index = {item_id: i for i, item_id in enumerate(item_ids)}
        self.families: dict[str, _FamilyTally] = {}  # in order of first appearance
        self.replies = 0  # replies read (failed requests are no reply)
        self.invalid = 0
        self.invalid_examples: list[str] = []  # the first few invalid replies, for the warning

    def add(self, s: McqSample) -> None:
        family = self.families.get(s.family)
        if family is None:
            family = self.families[s.family] = _FamilyTally(len(self.item_ids), s.base_family)
        family.base_family = s.base_family
        family.add(self.index[s.item_id], s)
        if s.status != "failed":
            self.replies += 1
        if s.status == "invalid":
            self.invalid += 1
            text = getattr(s, "response", None)
            if text is not None and len(self.invalid_examples) < EXAMPLES:
                self.invalid_examples.append(text)

    def invalid_replies(self) -> InvalidReplies:
        """How many replies no answer could be read from, with the first few of them."""
        return InvalidReplies(self.replies, self.invalid, tuple(_clip(t) for t in self.invalid_examples))

    def metrics(self, families: Sequence[str] | None = None, *, cross: Sequence[str] = (), seed: int = 0,
                n_resamples: int = 1000) -> dict[str, FamilyMetrics]:
        """Metrics per family (see `metrics`)."""
        wanted = set(families or ()) | ({crossed_name(cross)} if cross else set())
        return {name: family_metrics_of(tally, seed=seed, n_resamples=n_resamples)
                for name, tally in self.families.items() if families is None or tally.base_family in wanted}

    def metrics_in_order(self, families: Sequence[str], *, seed: int = 0,
                         n_resamples: int = 1000) -> dict[str, FamilyMetrics]:
        """Metrics of exactly ``families``, in that order, a family without samples included (as
        `family_metrics` per family of a list gives them: open-answer math's results)."""
        return {name: family_metrics_of(self.families.get(name) or _FamilyTally(len(self.item_ids), name),
                                        seed=seed, n_resamples=n_resamples) for name in families}


EXAMPLES = 3  # invalid replies shown with the warning


def count_read_as(counts: dict[str, int], s: McqSample) -> None:
    """Count a sample's way of reading (the default reader's; other readers and loglik say none)."""
    if way := getattr(s, "read_as", None):
        counts[way] = counts.get(way, 0) + 1


def in_order(counts: dict[str, int]) -> dict[str, int]:
    """``counts`` in `READ_AS`'s order, the ways no reply took left out."""
    return {way: counts[way] for way in READ_AS if counts.get(way)}


def _clip(text: str, limit: int = 300) -> str:
    """A reply as the warning quotes it: its end, where the answer should be, when it is long."""
    return text if len(text) <= limit else "…" + text[-limit:]


def tally(samples: Iterable[McqSample], item_ids: list[str]) -> McqTally:
    t = McqTally(item_ids)
    for s in samples:
        t.add(s)
    return t


def matrices(samples: Sequence[McqSample], family: str, item_ids: list[str]) -> FamilyMatrices:
    return _family(samples, family, item_ids).matrices()


def _family(samples: Iterable[McqSample], family: str, item_ids: list[str]) -> _FamilyTally:
    t = tally((s for s in samples if s.family == family), item_ids)
    return t.families.get(family) or _FamilyTally(len(item_ids), family)


def family_metrics(samples: Sequence[McqSample], family: str, item_ids: list[str], *, seed: int = 0,
                   n_resamples: int = 1000) -> FamilyMetrics:
    """Per-variant accuracy, overall accuracy, consistency rate and spread, each with a 95% CI.
    Accuracies are micro (every answered question weighs the same) and, where the items have two or
    more categories, also macro (every category weighs the same, as SCORE reports MMLU-Pro).

    Items are the unit of every interval (metrics/stats.py says which interval and why): shares of
    cells (accuracies, consistency rates, invalid rates, chosen positions) get Wilson intervals at
    their effective number of cells (`proportion`), the spread a range from pairwise differences
    (`spread_interval`), other statistics of per-item sums a BCa bootstrap (`bootstrap_sums`)."""
    return family_metrics_of(_family(samples, family, item_ids), seed=seed, n_resamples=n_resamples)


def family_metrics_of(t: _FamilyTally, *, seed: int = 0, n_resamples: int = 1000) -> FamilyMetrics:
    """`family_metrics` of one family's tally."""
    m = t.matrices()
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
        block = m.answers[:, j * per_variant:(j + 1) * per_variant]
        variants[name] = VariantMetrics(
            accuracy=proportion(correct[:, j], answered[:, j]),
            answered=t.answered[j],
            invalid=t.invalid[j],
            invalid_rate=proportion((block == -1).sum(axis=1), (~np.isnan(block)).sum(axis=1)),
            failed=t.failed[j],
            # SCORE's MMLU-Pro per-prompt accuracy: the mean of the categories' accuracies
            macro_accuracy=macro(category_sums(m.correct[:, j], m.categories)) if has_categories else None,
        )
    by_item = item_consistency(m.answers)
    agree, pairs = agreeing_pairs(m.answers)
    per_variant_sums = np.column_stack([correct, answered])
    valid = np.isfinite(m.correct_valid)  # cells with at least one valid reply
    return FamilyMetrics(
        variants=variants,
        accuracy=proportion(correct.sum(axis=1), answered.sum(axis=1)),
        consistency_rate=proportion(np.nan_to_num(by_item), np.isfinite(by_item)),
        consistency_rate_pooled=proportion(agree, pairs),
        spread=spread_interval(correct, answered, n_resamples=n_resamples, seed=seed),
        std_across_variants=boot(per_variant_sums, lambda s: std_of(_accuracies(s, n_vars))),
        samples=t.samples,
        invalid=sum(t.invalid),
        failed=sum(t.failed),
        position_bias=position_bias(m),
        macro_accuracy=macro(category_sums(m.correct, m.categories)) if has_categories else None,
        sensitivity=measures(t.reference, t.loglik_tensor(), m.variants, m.correct, m.answers, seed=seed,
                             n_resamples=n_resamples),
        categories=per_category(m.categories, *t.item_counts()) if has_categories else None,
        # the same measures with format failures apart: a question's invalid replies left out, so
        # what remains is the answer changing, not the reply failing to say one (arXiv 2509.01790)
        sensitivity_valid=measures(t.reference, t.loglik_tensor(), m.variants, m.correct_valid,
                                   np.where(m.answers == -1, np.nan, m.answers), seed=seed,
                                   n_resamples=n_resamples) if sum(t.invalid) else None,
        # the accuracy as scored counts an invalid reply wrong; this one leaves it out (same clustering)
        accuracy_valid=proportion(np.where(valid, m.correct_valid, 0.0).sum(axis=1), valid.sum(axis=1))
        if sum(t.invalid) else None,
        # variants drawn from a population (templates, paraphrases, draws): its mean, items and variants
        # resampled together (metrics/two_way.py), beside the item-clustered accuracy above
        population=population(m.correct) if is_sampled(t.base_family) and n_vars > 1 else None,
        circular=circular_metrics(m.correct, t.width) if t.base_family == CIRCULAR else None,
        read_as=in_order(t.read_as) or None,
    )


def per_category(categories: np.ndarray, correct: np.ndarray, answered: np.ndarray,
                 invalid: np.ndarray) -> dict[str, CategoryMetrics]:
    """Accuracy per category over all the family's replies to its items (per item: ``correct``
    replies of ``answered``, ``invalid`` of them unreadable), with a Wilson interval at the
    effective number of replies, clustered by item as the overall accuracy's; categories in the
    items' order."""
    out = {}
    for category in dict.fromkeys(c for c in categories if c):
        rows = categories == category
        out[str(category)] = CategoryMetrics(
            accuracy=proportion(correct[rows], answered[rows]), items=int((answered[rows] > 0).sum()),
            answered=int(answered[rows].sum()), correct=float(correct[rows].sum()), invalid=int(invalid[rows].sum()))
    return out


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
    return np.asarray(sums[:, 0] / sums[:, 1])


def _accuracies(sums: np.ndarray, n_vars: int) -> np.ndarray:
    """Per-variant accuracies from the column sums of (correct | answered) per variant."""
    return np.asarray(sums[:, :n_vars] / sums[:, n_vars:])


def metrics(samples: Sequence[McqSample], items: list[Item], families: Sequence[str] | None = None, *,
            cross: Sequence[str] = (), seed: int = 0) -> dict[str, FamilyMetrics]:
    """Metrics per family as the samples name it (a crossed design is one family named like
    ``format×order``; each log-likelihood rule its own, ``order/loglik-label``). ``families``
    (with ``cross``) keeps those whose design family (`base_family`) was asked; None keeps all."""
    return tally(samples, [item.id for item in items]).metrics(families, cross=cross, seed=seed)

