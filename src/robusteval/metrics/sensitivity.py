"""Every published way of saying how much the variant moves the score, from one items x variants matrix.

The robustness literature reports prompt sensitivity in a dozen incompatible forms, each from its own
repository: consistency and flip rates, the spread of variant accuracies (FormatSpread), worst-case
accuracy (HELM, OpenCompass CircularEval), promptbench's performance drop rate, ProSA's
PromptSensiScore, Mizrahi et al.'s MaxP/AvgP/CPS and the POSIX index. This module computes all of
them side by side from the answers a suite already stored, each with a 95% interval that treats the
item as the unit (docs/metrics.md gives each measure's paper, formula and interval).

Inputs are the matrices the suites build (`metrics/mcq.py`'s tally): ``correct`` is items x
variants, a score in [0, 1] (or on ``scale``) per cell, a mean when a cell holds several samples,
NaN where the variant is absent for the item or its request failed: such cells are left out, never
counted wrong. ``answers`` holds categorical answer ids (the original option, so that agreement
survives a reordering), -1 for an invalid reply (two invalid replies never agree), NaN for missing;
it may hold several samples per variant as consecutive columns (variant-major, as ``matrices``
lays them out). ``loglik`` (for POSIX) is items x variants x options: log P(option | variant's
prompt), indexed by original option.

Which interval (metrics/stats.py says why each is chosen): shares of cells (consistency and flip
rates, worst- and best-case accuracy, PromptSensiScore) get `proportion`'s Wilson interval at their
effective number of cells; the spread gets `spread_interval`, MaxP and CPS ranges over simultaneous
bounds on every variant's accuracy (`simultaneous_bounds`; a bootstrap of a maximum misses a truth
below it); every other statistic (standard deviation, performance drop rate, AvgP, POSIX) a BCa
bootstrap over items.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robusteval.estimate import Estimate
from robusteval.metrics.consistency import agreeing_pairs, item_consistency, std_of
from robusteval.metrics.stats import bootstrap_sums, proportion, simultaneous_bounds, spread_interval


@dataclass(frozen=True)
class VariantSensitivity:
    """One variant against the reference: its accuracy, its performance drop rate (promptbench) and
    the share of its answers that differ from the reference's (flip rate). The drop and flip rates
    are None for the reference itself, or without a reference."""

    name: str
    accuracy: Estimate
    drop_rate: Estimate
    flip_rate: Estimate

    def as_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy.as_dict(), "drop_rate": self.drop_rate.as_dict(),
                "flip_rate": self.flip_rate.as_dict()}


@dataclass(frozen=True)
class SensitivityReport:
    """Every sensitivity measure of one family (or crossed design), each an `Estimate` with its 95%
    interval clustered by item. A measure that the inputs do not allow (no ``answers``: no consistency
    rate; no reference: no drop or flip rate; no ``loglik``: no POSIX) is ``Estimate(None)``."""

    variants: tuple[str, ...]
    reference: str | None
    items: int  # items with at least one answered cell
    consistency_rate: Estimate  # mean over items of the share of agreeing variant pairs
    consistency_rate_pooled: Estimate  # all agreeing pairs over all pairs (lm-evaluation-harness SCORE)
    flip_rate: Estimate  # answers that differ from the reference's, over all non-reference variants
    spread: Estimate  # best minus worst variant accuracy (FormatSpread)
    std: Estimate  # sample standard deviation of the variant accuracies
    worst_case: Estimate  # an item counts only as far as its worst variant (HELM robustness, CircularEval)
    best_case: Estimate  # ... as its best variant
    drop_rate: Estimate  # mean over non-reference variants of 1 - acc_v / acc_ref (promptbench PDR)
    prompt_sensi_score: Estimate  # mean over items of the mean pairwise |score difference| (ProSA PSS)
    max_p: Estimate  # best variant accuracy (Mizrahi et al. MaxP)
    avg_p: Estimate  # mean variant accuracy (AvgP)
    cps: Estimate  # MaxP * (1 - (MaxP - AvgP)) (combined performance score)
    posix: Estimate  # mean over items of POSIX's psi (Chatterjee et al.)
    per_variant: tuple[VariantSensitivity, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form the results use: every measure as ``Estimate.as_dict()``."""
        measures = ("consistency_rate", "consistency_rate_pooled", "flip_rate", "spread", "std", "worst_case",
                    "best_case", "drop_rate", "prompt_sensi_score", "max_p", "avg_p", "cps", "posix")
        return {"variants": list(self.variants), "reference": self.reference, "items": self.items,
                **{m: getattr(self, m).as_dict() for m in measures},
                "per_variant": {v.name: v.as_dict() for v in self.per_variant}}


Reference = int | str | Sequence[int] | np.ndarray | None


def sensitivity(correct: np.ndarray, *, answers: np.ndarray | None = None, reference: Reference = 0,
                names: list[str] | tuple[str, ...] | None = None, loglik: np.ndarray | None = None,
                scale: tuple[float, float] = (0.0, 1.0), seed: int = 0, n_resamples: int = 1000,
                reference_name: str | None = None) -> SensitivityReport:
    """All sensitivity measures of an items x variants matrix, each with a 95% interval by item.

    ``correct``: items x variants scores (NaN = missing), in [0, 1] unless ``scale`` = (low, high)
    says otherwise (a judge's 0-5 similarity: ``scale=(0, 5)``); they are mapped to [0, 1] first.
    ``answers``: items x (variants x samples) answer ids, -1 invalid, NaN missing; without them the
    consistency rates are n/a and flips are flips of correctness. ``reference``: the column (index
    or name) of the unperturbed variant, or None; or one column per item (-1: the item has none),
    where the unperturbed variant differs by item (the option order: the published order puts the
    gold at a different letter in each question), named ``reference_name`` in the report.
    ``names``: the variants' names. ``loglik``: items x
    variants x options log-probabilities for POSIX (needs ``answers``). ``seed`` and
    ``n_resamples`` drive the bootstraps (deterministic for a seed).
    """
    c = _scores(correct, scale)
    n_items, n_vars = c.shape
    names = tuple(names) if names is not None else tuple(f"v{j}" for j in range(n_vars))
    if len(names) != n_vars:
        raise ValueError(f"{len(names)} names for {n_vars} variants")
    ref = _reference(reference, names, n_items)
    a = None if answers is None else _answers(answers, n_items, n_vars)

    def boot(per_item: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray]) -> Estimate:
        return bootstrap_sums(per_item, statistic, n_resamples=n_resamples, seed=seed)

    answered = ~np.isnan(c)
    filled = np.where(answered, c, 0.0)
    per_variant_sums = np.column_stack([filled, answered])

    if a is not None:
        by_item = item_consistency(a)
        agree, pairs = agreeing_pairs(a)
        consistency = proportion(np.nan_to_num(by_item), np.isfinite(by_item))
        pooled = proportion(agree, pairs)
    else:
        consistency = pooled = Estimate(None, n=n_items)

    flips, compared = flip_counts(c, a, ref) if ref is not None else (np.zeros_like(c), np.zeros_like(c))
    worst, best, has = item_extremes(c)
    pss, has_pairs = item_prompt_sensitivity(c)
    max_p, cps = template_extremes(filled, answered, n_resamples=n_resamples, seed=seed)

    # per item and variant: both it and the item's reference answered (never the reference itself)
    if ref is not None:
        rows = np.arange(n_items)
        ref_col = np.where(ref >= 0, ref, 0)
        ref_score = np.where(ref >= 0, filled[rows, ref_col], 0.0)
        both = (answered & (answered[rows, ref_col] & (ref >= 0))[:, None]
                & (np.arange(n_vars)[None, :] != ref[:, None]))
    per_variant = []
    for j, name in enumerate(names):
        drop = flip = Estimate(None, n=n_items)
        if ref is not None and both[:, j].any():
            drop = boot(np.column_stack([filled[:, j] * both[:, j], ref_score * both[:, j]]), _drop)
            flip = proportion(flips[:, j], compared[:, j])
        per_variant.append(VariantSensitivity(name, proportion(filled[:, j], answered[:, j]), drop, flip))

    others = [] if ref is None else [j for j in range(n_vars) if both[:, j].any()]
    if others:
        drop_sums = np.column_stack([filled[:, others] * both[:, others], ref_score[:, None] * both[:, others]])
        drop_rate = boot(drop_sums, _mean_drop)
        flip_rate = proportion(flips.sum(axis=1), compared.sum(axis=1))
    else:
        drop_rate = flip_rate = Estimate(None, n=n_items)
    if ref is None:
        ref_label = None
    elif reference_name is not None:
        ref_label = reference_name
    elif len(set(ref.tolist())) == 1 and ref[0] >= 0:
        ref_label = names[int(ref[0])]
    else:
        ref_label = "per item"

    return SensitivityReport(
        variants=names, reference=ref_label, items=int(has.sum()),
        consistency_rate=consistency, consistency_rate_pooled=pooled, flip_rate=flip_rate,
        spread=spread_interval(filled, answered, n_resamples=n_resamples, seed=seed),
        std=boot(per_variant_sums, lambda s: std_of(_accuracies(s, n_vars))),
        worst_case=proportion(np.where(has, worst, 0.0), has), best_case=proportion(np.where(has, best, 0.0), has),
        drop_rate=drop_rate,
        prompt_sensi_score=proportion(np.where(has_pairs, pss, 0.0), has_pairs),
        max_p=max_p,
        avg_p=boot(per_variant_sums, _avg_p(n_vars)),
        cps=cps,
        posix=Estimate(None, n=n_items) if loglik is None else posix(loglik, a, n_vars, n_resamples=n_resamples,
                                                                    seed=seed),
        per_variant=tuple(per_variant),
    )


# -- per-item building blocks (pure, vectorised over items) ----------------------------------------


def flip_counts(correct: np.ndarray, answers: np.ndarray | None,
                reference: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item and variant: (flips, comparisons) against the reference variant.

    ``reference`` is a column, or one column per item (-1: the item has no reference, so nothing
    is compared). With ``answers`` a flip is an answer that differs from the reference's answer to
    the same item (every sample of the variant against every sample of the reference; an invalid
    reply never matches, as in the consistency rate). Without them it is a change of correctness,
    |correct_v - correct_ref| (fractional for means over samples). The reference's own cell is 0/0.
    """
    c = np.asarray(correct, dtype=float)
    n_items, n_vars = c.shape
    ref = np.broadcast_to(np.asarray(reference, dtype=int), (n_items,))
    has_ref = ref >= 0
    rows, col = np.arange(n_items), np.where(has_ref, ref, 0)
    if answers is None:
        ref_score = c[rows, col][:, None]
        both = ~np.isnan(c) & ~np.isnan(ref_score) & has_ref[:, None]
        flips = np.where(both, np.abs(c - ref_score), 0.0)
        compared = both.astype(float)
    else:
        blocks = np.asarray(answers, dtype=float).reshape(n_items, n_vars, -1)  # items x variants x samples
        ref_answers = blocks[rows, col, :]  # items x samples
        present = (~np.isnan(blocks)[:, :, :, None] & ~np.isnan(ref_answers)[:, None, None, :]
                   & has_ref[:, None, None, None])
        same = (blocks[:, :, :, None] == ref_answers[:, None, None, :]) & (ref_answers[:, None, None, :] >= 0)
        compared = present.sum(axis=(2, 3)).astype(float)
        flips = (present & ~same).sum(axis=(2, 3)).astype(float)
    own = np.arange(n_vars)[None, :] == ref[:, None]
    flips[own] = compared[own] = 0.0
    return flips, compared


def item_extremes(correct: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item: its worst and best answered variant's score, and whether it has any answered cell.

    An item with missing cells is judged on the variants it has (a missing cell is not a wrong
    one); NaN where it has none."""
    c = np.asarray(correct, dtype=float)
    has = ~np.isnan(c).all(axis=1)
    worst = np.where(has, np.where(np.isnan(c), np.inf, c).min(axis=1), np.nan)
    best = np.where(has, np.where(np.isnan(c), -np.inf, c).max(axis=1), np.nan)
    return worst, best, has


def item_prompt_sensitivity(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ProSA's per-item sensitivity: the mean over pairs of answered variants of |s_j - s_k|, and
    whether the item has a pair (NaN without one).

    Sorted, the sum over pairs is sum_j (2j - m + 1) x_(j) (0-based ranks, m answered values), so
    the memory is items x variants rather than a variants x variants block per item."""
    s = np.sort(np.asarray(scores, dtype=float), axis=1)  # NaN sort last
    m = (~np.isnan(s)).sum(axis=1)
    rank = np.arange(s.shape[1])[None, :]
    weights = np.where(rank < m[:, None], 2 * rank - m[:, None] + 1, 0)
    total = (weights * np.nan_to_num(s)).sum(axis=1)
    pairs = m * (m - 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, total / np.maximum(pairs, 1), np.nan), pairs > 0


def template_extremes(correct: np.ndarray, answered: np.ndarray, *, n_resamples: int = 1000,
                      seed: int = 0) -> tuple[Estimate, Estimate]:
    """MaxP and CPS (Mizrahi et al. 2024) with intervals from simultaneous bounds on every variant's
    accuracy (`stats.simultaneous_bounds`): a bootstrap of a sample maximum sits above the truth when
    the variants are alike, and BCa's intervals for MaxP covered 0.55-0.68 then (docs/metrics.md).
    MaxP's interval is [max of the lower bounds, max of the upper bounds]; CPS's is its range over
    the box of bounds, which holds the true CPS whenever the box holds the true accuracies."""
    ratios, low, high = simultaneous_bounds(correct, answered, n_resamples=n_resamples, seed=seed)
    n = len(correct)
    keep = np.isfinite(ratios)
    if not keep.any():
        return Estimate(None, n=n), Estimate(None, n=n)
    ratios, low, high = ratios[keep], low[keep], high[keep]
    best, mean = float(ratios.max()), float(ratios.mean())
    value = combined_performance(best, mean)
    if n < 2:
        return Estimate(best, n=n), Estimate(value, n=n)
    cps_low, cps_high = _cps_range(low, high, best)
    return (Estimate(best, float(low.max()), float(high.max()), n),
            Estimate(value, min(cps_low, value), max(cps_high, value), n))


def combined_performance(max_p: float, avg_p: float) -> float:
    """Mizrahi et al. 2024's CPS: MaxP x saturation, saturation = 1 - (MaxP - AvgP). Checked against
    the authors' own published metric tables (docs/metrics.md), not only the paper's prose."""
    return max_p * (1 - (max_p - avg_p))


def _cps_range(low: np.ndarray, high: np.ndarray, best: float) -> tuple[float, float]:
    """Smallest and largest M (1 - M + A) over accuracies a_v in [low_v, high_v] (M their max, A their
    mean). For a given max m (between max(low) and max(high)) the largest A sets every a_v to
    min(high_v, m); the smallest sets every a_v to low_v but one, raised to m: the one with the
    highest low_v among those that can reach m. Both are then scanned over m."""
    k = len(low)
    grid = np.unique(np.concatenate([np.linspace(low.max(), high.max(), 401), high[high >= low.max()], [best]]))
    top = grid * (1 - grid + np.minimum(high[None, :], grid[:, None]).mean(axis=1))
    reach = high[None, :] >= grid[:, None] - 1e-12
    raised = np.where(reach, low[None, :], -np.inf).max(axis=1)
    bottom = grid * (1 - grid + (low.sum() - raised + grid) / k)
    return float(bottom.min()), float(top.max())


def posix_matrix(loglik: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Items x N x N matrix of log P(y_j | x_i): the log-probability, under prompt i, of the answer
    the model gave to prompt j (``loglik`` items x N x options, ``answers`` items x N option ids;
    NaN where the answer is invalid or missing)."""
    ll = np.asarray(loglik, dtype=float)
    a = np.asarray(answers, dtype=float)
    n_items, n_prompts, n_options = ll.shape
    valid = ~np.isnan(a) & (a >= 0) & (a < n_options)
    idx = np.where(valid, a, 0).astype(int)  # items x N (the answer to prompt j)
    taken = np.take_along_axis(ll, np.broadcast_to(idx[:, None, :], (n_items, n_prompts, n_prompts)), axis=2)
    return np.where(valid[:, None, :], taken, np.nan)


def item_posix(matrix: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """POSIX's psi per item (Chatterjee et al. 2024, eq. 1): the mean over ordered pairs i != j of
    |log P(y_j | x_i) - log P(y_j | x_j)| / L(y_j), with ``matrix[:, i, j]`` = log P(y_j | x_i) and
    ``lengths`` (items x N) the token counts of the answers (1: one option, one token). Pairs with a
    missing log-probability are left out; NaN for an item without a pair."""
    m = np.asarray(matrix, dtype=float)
    n = m.shape[1]
    own = np.diagonal(m, axis1=1, axis2=2)  # items x N: log P(y_j | x_j)
    length = np.ones_like(own) if lengths is None else np.asarray(lengths, dtype=float)
    change = np.abs(m - own[:, None, :]) / length[:, None, :]
    off = ~np.eye(n, dtype=bool)[None, :, :] & ~np.isnan(change)
    pairs = off.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, np.where(off, change, 0.0).sum(axis=(1, 2)) / np.maximum(pairs, 1), np.nan)


def posix(loglik: np.ndarray, answers: np.ndarray | None, n_variants: int, *, n_resamples: int = 1000,
          seed: int = 0) -> Estimate:
    """POSIX = the mean over items of psi (log-likelihood scoring: the answer is one option), with a
    BCa interval over items. With several samples per variant the first is used (log-likelihood
    scoring is deterministic: there is one)."""
    ll = np.asarray(loglik, dtype=float)
    if ll.ndim != 3 or ll.shape[1] != n_variants:
        raise ValueError(f"loglik must be items x {n_variants} variants x options, got shape {ll.shape}; "
                         "POSIX compares each answer's log-probability under every other prompt, so the "
                         "log-probability of the model's own answer alone is not enough")
    if answers is None:
        raise ValueError("POSIX needs the answers (which option each variant chose)")
    first = np.asarray(answers, dtype=float).reshape(len(ll), n_variants, -1)[:, :, 0]
    psi = item_posix(posix_matrix(ll, first))
    has = np.isfinite(psi)
    return bootstrap_sums(np.column_stack([np.where(has, psi, 0.0), has]), _ratio, n_resamples=n_resamples,
                          seed=seed)


# -- statistics of column sums, vectorised over bootstrap resamples ---------------------------------


def _ratio(sums: np.ndarray) -> np.ndarray:
    return np.asarray(sums[:, 0] / sums[:, 1])


def drop_rates(variant: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """promptbench's PDR, 1 - variant / reference, from correct-answer sums over the items both
    answered. The one rule for an undefined PDR: where the reference has no correct answer on those
    items the PDR is NaN (n/a), whatever the variant scored (0/0 and 3/0 alike: before, 3/0 gave
    -inf, which made the mean n/a, while the mean left 0/0 out and averaged the rest)."""
    variant, reference = np.asarray(variant, dtype=float), np.asarray(reference, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reference > 0, 1.0 - variant / np.where(reference > 0, reference, 1.0), np.nan)


def _drop(sums: np.ndarray) -> np.ndarray:
    """One variant's PDR from (variant correct, reference correct) sums."""
    return drop_rates(sums[:, 0], sums[:, 1])


def _mean_drop(sums: np.ndarray) -> np.ndarray:
    """The mean PDR over the variants compared with the reference (columns: k variant sums, then k
    reference sums); NaN (n/a) when any of their PDRs is undefined (`drop_rates`): a mean over the
    variants that happen to be defined would be a mean of other variants in each bootstrap resample,
    and the undefined share of resamples (`stats.MAX_UNDEFINED`) decides whether it gets an interval."""
    k = sums.shape[1] // 2
    return np.asarray(drop_rates(sums[:, :k], sums[:, k:]).mean(axis=1))


def _accuracies(sums: np.ndarray, n_vars: int) -> np.ndarray:
    return np.asarray(sums[:, :n_vars] / sums[:, n_vars:])


def _avg_p(n_vars: int) -> Callable[[np.ndarray], np.ndarray]:
    """AvgP (Mizrahi et al. 2024), the mean variant accuracy, from per-variant (correct | answered) sums."""

    def avg_p(sums: np.ndarray) -> np.ndarray:
        return _nanmean(_accuracies(sums, n_vars), axis=1)

    return avg_p


def _nanmean(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN, which we want
        return np.asarray(np.nanmean(x, axis=axis))


# -- input checks -----------------------------------------------------------------------------------


def _scores(correct: np.ndarray, scale: tuple[float, float]) -> np.ndarray:
    c = np.asarray(correct, dtype=float)
    if c.ndim != 2:
        raise ValueError(f"correct must be items x variants, got shape {c.shape}")
    low, high = scale
    if not high > low:
        raise ValueError(f"scale must be (low, high) with high > low, got {scale}")
    finite = c[~np.isnan(c)]
    if finite.size and (finite.min() < low or finite.max() > high):
        raise ValueError(f"scores must lie in [{low}, {high}] (pass scale=(low, high) for another range)")
    return (c - low) / (high - low)


def _reference(reference: Reference, names: tuple[str, ...], n_items: int) -> np.ndarray | None:
    """The reference column of every item (-1: none), or None without a reference."""
    if reference is None:
        return None
    if isinstance(reference, str):
        if reference not in names:
            raise ValueError(f"reference {reference!r} is not one of the variants {list(names)}")
        return np.full(n_items, names.index(reference))
    if isinstance(reference, (int, np.integer)):
        if not 0 <= reference < len(names):
            raise ValueError(f"reference column {reference} is out of range for {len(names)} variants")
        return np.full(n_items, int(reference))
    per_item = np.asarray(reference, dtype=int)
    if per_item.shape != (n_items,) or per_item.max(initial=-1) >= len(names) or per_item.min(initial=-1) < -1:
        raise ValueError(f"a reference per item must be {n_items} columns in -1..{len(names) - 1}")
    return per_item


def _answers(answers: np.ndarray, n_items: int, n_vars: int) -> np.ndarray:
    a = np.asarray(answers, dtype=float)
    if a.ndim != 2 or a.shape[0] != n_items or a.shape[1] % max(n_vars, 1):
        raise ValueError(f"answers must be {n_items} items x (variants x samples) with {n_vars} variants, "
                         f"got shape {a.shape}")
    return a


__all__ = ["SensitivityReport", "VariantSensitivity", "combined_performance", "flip_counts", "item_extremes",
           "item_posix", "item_prompt_sensitivity", "posix", "posix_matrix", "sensitivity", "template_extremes"]
