"""Ranking stability (`metrics.rank_stability`) from runs' stored per-variant accuracies: the report
(one run, several models) and the leaderboard (one dataset, one set of items); ``compare`` gathers
its own from the samples of several runs (`pilot.ranking_across_runs`). Only families whose variants
are a sample of a population (`metrics.two_way.is_sampled`): the share of a fixed design's variants
(every label style, every option order) won is no estimate of a population."""

from __future__ import annotations

from typing import Any

import numpy as np

from robusteval.metrics.rank_stability import PairShare, RankStability, pair_share, rank_stability
from robusteval.metrics.two_way import is_sampled
from robusteval.results.mcq import McqMetrics


def from_metrics(metrics: McqMetrics, models: list[str] | None = None) -> dict[str, RankStability]:
    """Per sampled family two or more of the run's models (or ``models``) hold: their ranking
    stability from the stored accuracy of each variant (the run's items; a variant a model has no
    accuracy under is left out)."""
    chosen = [m for m in (models or list(metrics)) if m in metrics]
    out = {}
    families = dict.fromkeys(f for m in chosen for f in metrics[m])
    for family in families:
        holders = [m for m in chosen if family in metrics[m]]
        if not is_sampled(family) or len(holders) < 2:
            continue
        variants = [v for v in metrics[holders[0]][family].variants
                    if all(v in metrics[m][family].variants for m in holders)]
        scores = np.array([[_value(metrics[m][family].variants[v].accuracy.value) for v in variants]
                           for m in holders])
        if scores.size and np.isfinite(scores).all(axis=0).sum() >= 2:
            out[family] = rank_stability(scores, holders, variants)
    return out


def variant_scores(results: dict[str, Any], model: str, family: str) -> dict[str, float]:
    """variant -> the stored accuracy of ``model`` under it in ``family`` of a run's results.json
    (empty where the run has none: a family that is no sample of a population, a suite whose record
    is no mcq `FamilyMetrics` by family)."""
    from robusteval.results.codec import RecordError
    from robusteval.results.mcq import FamilyMetrics
    from robusteval.results.records import decode_metrics

    if not is_sampled(family):
        return {}
    try:  # by the suite's declared record type, never by its name
        metrics = decode_metrics(str(results.get("suite", "")), results.get("metrics"))
    except RecordError:
        return {}
    families = metrics.get(model) if isinstance(metrics, dict) else None
    fm = families.get(family) if isinstance(families, dict) else None
    if not isinstance(fm, FamilyMetrics):
        return {}
    return {v: float(vm.accuracy.value) for v, vm in fm.variants.items() if vm.accuracy.value is not None}


def versus(a: dict[str, float], b: dict[str, float], name_a: str = "a", name_b: str = "b") -> PairShare | None:
    """The share of the variants both were scored under that ``a`` wins against ``b`` (None: fewer than 2)."""
    shared = [v for v in a if v in b]
    if len(shared) < 2:
        return None
    return pair_share(np.array([a[v] for v in shared]), np.array([b[v] for v in shared]), name_a, name_b)


def _value(x: float | None) -> float:
    return np.nan if x is None else float(x)
