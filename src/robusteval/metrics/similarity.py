"""Aggregation of answer-similarity ratings (the `consistency` suite): items × models tables per
judge, per-item means, per-model sums and means with bootstrap CIs over items, the same-variant
sampling baseline and the style effect, and the agreement of judges.

Ratings are 0-5 or missing (None); a missing rating is left out of means and sums, never read as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from robusteval.estimate import Estimate
from robusteval.metrics.agreement import agreement_report
from robusteval.metrics.sensitivity import sensitivity
from robusteval.metrics.stats import bootstrap, proportion
from robusteval.results.codec import decode
from robusteval.results.consistency import (
    Agreement,
    ConsistencyMetrics,
    JudgeSimilarity,
    ModelSimilarity,
    ScoreSensitivity,
    VariationMean,
)

SCALE = (0.0, 5.0)
CONSISTENT = 4.0  # ELOQUENT's oracle: 4 = the answers say the same with small differences

VARIANTS_SCOPE = "variants"  # a rating of one answer per variant; "sampling:N" rates variant N's samples


class RatingLike(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def item_id(self) -> str: ...
    @property
    def judge(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def score(self) -> float | None: ...


class ItemLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def variation(self) -> str: ...


def summarise(ratings: Sequence[RatingLike], items: Sequence[ItemLike], models: list[str], judges: list[str], *,
              seed: int = 0) -> ConsistencyMetrics:
    """Items × models tables per judge, per-item and per-model aggregates with CIs, and judge agreement."""
    item_ids = [i.id for i in items]
    by_judge: dict[str, JudgeSimilarity] = {}
    variant_scores: dict[str, np.ndarray] = {}
    for judge in judges:
        table = _table(ratings, judge, VARIANTS_SCOPE, item_ids, models)
        variant_scores[judge] = table.ravel()
        per_model = {}
        for j, model in enumerate(models):
            column = table[:, j]
            sampling = _sampling_scores(ratings, judge, model, items)
            sampling_mean = style_effect = None
            if sampling is not None:
                paired = np.column_stack([column, sampling])
                sampling_mean = bootstrap(sampling, nanmean, seed=seed)
                style_effect = bootstrap(paired, lambda rows: nanmean(rows[:, 0] - rows[:, 1]), seed=seed)
            per_model[model] = ModelSimilarity(
                sum=bootstrap(column, nansum, seed=seed), mean=bootstrap(column, nanmean, seed=seed),
                rated=int(np.sum(~np.isnan(column))), missing=int(np.sum(np.isnan(column))),
                by_variation=_by_variation(column, items), sampling_mean=sampling_mean, style_effect=style_effect,
                sensitivity=score_sensitivity(column, [i.variation for i in items], seed=seed))
        by_judge[judge] = JudgeSimilarity(
            table={item_id: {m: rounded(table[i, j]) for j, m in enumerate(models)}
                   for i, item_id in enumerate(item_ids)},
            item_mean={item_id: rounded(nanmean(table[i])) for i, item_id in enumerate(item_ids)},
            models=per_model)
    agreement = None
    if len(judges) >= 2:
        units = [f"{item_id}|{m}" for item_id in item_ids for m in models]
        agreement = decode(Agreement, agreement_report(variant_scores, units))
    return ConsistencyMetrics(judges=by_judge, agreement=agreement)


def score_sensitivity(scores: np.ndarray, variations: list[str], *, threshold: float = CONSISTENT,
                      seed: int = 0) -> ScoreSensitivity:
    """The measures that apply to 0-5 ratings of whole items (one rating per item, over all its
    variants' answers): the share rated >= ``threshold``, and the spread, standard deviation and
    means across variation types, from `metrics.sensitivity` on the items x variations matrix (one
    cell per item). In rating points; spread and std are n/a with fewer than two variation types."""
    scores = np.asarray(scores, dtype=float)
    names = list(dict.fromkeys(variations))
    matrix = np.full((len(scores), len(names)), np.nan)
    matrix[np.arange(len(scores)), [names.index(v) for v in variations]] = scores
    report = sensitivity(matrix, reference=None, names=names, scale=SCALE, seed=seed)
    width = SCALE[1] - SCALE[0]

    def points(e: Estimate, offset: float = 0.0) -> Estimate:
        def at(x: float | None) -> float | None:
            return None if x is None else offset + x * width
        return Estimate(at(e.value), at(e.low), at(e.high), e.n)

    rated = ~np.isnan(scores)
    several = len(names) > 1
    return ScoreSensitivity(
        threshold=threshold,
        consistent_share=proportion(np.where(rated, scores >= threshold, 0.0), rated),
        spread=points(report.spread) if several else Estimate(None, n=len(scores)),
        std=points(report.std) if several else Estimate(None, n=len(scores)),
        by_variation={v.name: points(v.accuracy, SCALE[0]) for v in report.per_variant})


def _table(ratings: Sequence[RatingLike], judge: str, scope: str, item_ids: list[str],
           models: list[str]) -> np.ndarray:
    cell = {(r.item_id, r.model): r.score for r in ratings if r.judge == judge and r.scope == scope}
    return np.array([[np.nan if cell.get((i, m)) is None else cell[i, m] for m in models] for i in item_ids],
                    dtype=float).reshape(len(item_ids), len(models))


def _sampling_scores(ratings: Sequence[RatingLike], judge: str, model: str,
                     items: Sequence[ItemLike]) -> np.ndarray | None:
    """Per item: the mean over variants of the rating of that variant's K samples (None without samples)."""
    by_item: dict[str, list[float]] = {}
    for r in ratings:
        if r.judge == judge and r.model == model and r.scope.startswith("sampling:"):
            by_item.setdefault(r.item_id, []).append(np.nan if r.score is None else r.score)
    if not by_item:
        return None
    return np.array([nanmean(np.array(by_item.get(i.id, [np.nan]))) for i in items], dtype=float)


def _by_variation(column: np.ndarray, items: Sequence[ItemLike]) -> dict[str, VariationMean]:
    groups: dict[str, list[float]] = {}
    for value, item in zip(column, items):
        groups.setdefault(item.variation, []).append(value)
    return {v: VariationMean(rounded(nanmean(np.array(s))), len(s)) for v, s in groups.items()}


def nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(x.mean()) if len(x) else float("nan")


def nansum(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nansum(x)) if (~np.isnan(x)).any() else float("nan")


def rounded(x: float | None) -> float | None:
    """A finite value to 4 places, for the tables in results.json; None for missing."""
    return None if x is None or not np.isfinite(x) else round(float(x), 4)
