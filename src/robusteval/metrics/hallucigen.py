"""HalluciGen metrics over a run's samples: detection scores with item-clustered bootstrap CIs and
breakdowns, generation success as judged, agreement between detectors, the generator × detector
matrix.

Samples are read by attribute (the suite's dataclasses): a detection sample has ``config``,
``generator``, ``item_id``, ``scenario``, ``lang``, ``type``, ``order`` ("12" or "21"),
``predicted`` (hyp1/hyp2 in the item's own order, None when invalid), ``predicted_position``
(1/2 as shown), ``gold`` and ``status``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from robusteval.estimate import Estimate
from robusteval.metrics.classification import INVALID, cohen_kappa, fleiss_kappa, matthews, scores
from robusteval.metrics.stats import bootstrap, finite as _finite, proportion
from robusteval.results.codec import decode
from robusteval.results.hallucination import GeneratorMetrics, StepMetrics

CODE = {"hyp1": 0, "hyp2": 1}
SCORES = ("accuracy", "precision", "recall", "f1")
# columns of the per-item detection array
GOLD, PRED12, PRED21, POS12, POS21 = range(5)


def detection_rows(samples: Sequence[Any]) -> tuple[list[str], np.ndarray]:
    """Items x [gold, prediction shown 12, prediction shown 21, chosen position 12, chosen position 21].

    Predictions are label codes (0 = hyp1, 1 = hyp2, -1 invalid); NaN where an order was not asked
    or the request failed. Chosen positions (1 or 2) are NaN for invalid replies."""
    ids = list(dict.fromkeys(s.item_id for s in samples))
    index = {item_id: i for i, item_id in enumerate(ids)}
    rows = np.full((len(ids), 5), np.nan)
    for s in samples:
        i = index[s.item_id]
        rows[i, GOLD] = CODE.get(s.gold, np.nan)  # no gold: an unlabelled file
        if s.status == "failed":
            continue
        pred, pos = (PRED12, POS12) if s.order == "12" else (PRED21, POS21)
        rows[i, pred] = CODE.get(s.predicted, INVALID)
        if s.predicted_position is not None:
            rows[i, pos] = s.predicted_position
    return ids, rows


def _score(name: str) -> Callable[[np.ndarray], float]:
    return lambda r: scores(np.repeat(r[:, GOLD], 2), r[:, PRED12:PRED21 + 1].ravel())[name]


def chose_first(rows: np.ndarray) -> float:
    """Share of valid replies that picked the hypothesis shown first."""
    pos = rows[:, POS12:POS21 + 1].ravel()
    pos = pos[~np.isnan(pos)]
    return float(np.mean(pos == 1)) if len(pos) else float("nan")


def order_consistency(rows: np.ndarray) -> float:
    """Among items asked in both orders (and answered in both), the share whose two replies name
    the same hypothesis (an invalid reply never agrees)."""
    both = rows[~np.isnan(rows[:, PRED12]) & ~np.isnan(rows[:, PRED21])]
    if not len(both):
        return float("nan")
    return float(np.mean((both[:, PRED12] == both[:, PRED21]) & (both[:, PRED12] != INVALID)))


def _boot(rows: np.ndarray, stat: Callable[[np.ndarray], float], seed: int, n_resamples: int) -> dict[str, Any]:
    if not len(rows):
        return Estimate(None).as_dict()
    return bootstrap(rows, stat, n_resamples=n_resamples, seed=seed).as_dict()


def classification_block(rows: np.ndarray, *, seed: int = 0, n_resamples: int = 1000,
                         which: Sequence[str] = SCORES) -> dict[str, Any]:
    """The scores of ``which`` with bootstrap CIs clustered by item; n/a without gold (the task's
    unlabelled test files: the predictions are all there is)."""
    if len(rows) and np.isnan(rows[:, GOLD]).all():
        return {name: Estimate(None).as_dict() for name in which}
    return {name: _boot(rows, _score(name), seed, n_resamples) for name in which}


def _group_blocks(samples: Sequence[Any], attribute: str, *, seed: int, n_resamples: int) -> dict[str, Any]:
    groups: dict[str, list[Any]] = {}
    for s in samples:
        groups.setdefault(getattr(s, attribute) or "unknown", []).append(s)
    return {name: {**classification_block(detection_rows(group)[1], seed=seed, n_resamples=n_resamples,
                                          which=("f1", "accuracy")),
                   "samples": len(group)}
            for name, group in sorted(groups.items())}


def detector_metrics(samples: Sequence[Any], *, seed: int = 0, n_resamples: int = 1000,
                     breakdowns: Sequence[str] = ("scenario", "lang", "type")) -> dict[str, Any]:
    """One detector configuration: overall scores, breakdowns, invalid and failed counts, position bias."""
    _, rows = detection_rows(samples)
    answered = [s for s in samples if s.status != "failed"]
    gold_first = [s for s in answered if s.gold is not None and (s.gold == "hyp1") == (s.order == "12")]
    with_gold = [s for s in answered if s.gold is not None]
    out = {
        **classification_block(rows, seed=seed, n_resamples=n_resamples),
        "samples": len(samples),
        "items": len(rows),
        "invalid": sum(s.status == "invalid" for s in samples),
        "invalid_reasons": dict(Counter(s.reason for s in samples if s.status == "invalid")),
        "failed": sum(s.status == "failed" for s in samples),
        "position_bias": {
            "chose_first": _boot(rows, chose_first, seed, n_resamples),
            "gold_first": len(gold_first) / len(with_gold) if with_gold else None,
        },
    }
    if any(n > 1 for n in Counter(s.item_id for s in samples).values()):  # both orders were asked
        out["order_consistency"] = _boot(rows, order_consistency, seed, n_resamples)
    for attribute in breakdowns:
        out[f"by_{attribute}"] = _group_blocks(samples, attribute, seed=seed, n_resamples=n_resamples)
    return out


def _key(s: Any) -> tuple[Any, ...]:
    return (s.generator, s.item_id, s.order)


def agreement(samples: Sequence[Any], configs: Sequence[str]) -> dict[str, Any]:
    """Agreement between detector configurations on the same shown pairs: Cohen's kappa and
    Matthews correlation for each pair (over the pairs both answered), Fleiss' kappa over the pairs
    all answered. A reply is hyp1, hyp2 or "invalid"; failed requests are left out."""
    verdicts: dict[str, dict[tuple[Any, ...], str]] = {c: {} for c in configs}
    for s in samples:
        if s.config in verdicts and s.status != "failed":
            verdicts[s.config][_key(s)] = s.predicted or "invalid"
    keys = sorted({k for v in verdicts.values() for k in v}, key=str)
    pairwise = {}
    for a, b in itertools.combinations(configs, 2):
        va = [verdicts[a].get(k) for k in keys]
        vb = [verdicts[b].get(k) for k in keys]
        both = sum(x is not None and y is not None for x, y in zip(va, vb))
        pairwise[f"{a} ~ {b}"] = {"cohen_kappa": _finite(cohen_kappa(va, vb)), "mcc": _finite(matthews(va, vb)),
                                  "agreement": (sum(x == y for x, y in zip(va, vb) if x is not None and y is not None)
                                                / both if both else None),
                                  "n": both}
    complete = [[verdicts[c][k] for c in configs] for k in keys if all(k in verdicts[c] for c in configs)]
    fleiss = fleiss_kappa(complete) if len(configs) >= 2 and complete else float("nan")
    return {"pairwise": pairwise, "fleiss_kappa": _finite(fleiss), "fleiss_n": len(complete),
            "configs": list(configs)}


def matrix(samples: Sequence[Any], configs: Sequence[str], *, seed: int = 0, n_resamples: int = 1000) -> dict[str, Any]:
    """generator -> detector configuration -> scores of that detector on that generator's pairs."""
    out: dict[str, dict[str, Any]] = {}
    for generator in dict.fromkeys(s.generator for s in samples):
        out[generator] = {}
        for config in configs:
            cell = [s for s in samples if s.generator == generator and s.config == config]
            if cell:
                out[generator][config] = {
                    **classification_block(detection_rows(cell)[1], seed=seed, n_resamples=n_resamples,
                                           which=("f1", "accuracy")),
                    "samples": len(cell), "invalid": sum(s.status == "invalid" for s in cell)}
    return out


def share_block(values: Sequence[float | None], *, seed: int = 0, n_resamples: int = 1000) -> dict[str, Any]:
    """Mean of 0/1 judgements, one per item (None = not judged, left out), with Wilson's interval
    (a plain proportion: unlike a bootstrap it does not collapse when every judgement agrees).
    ``seed`` and ``n_resamples`` are kept for the callers; Wilson needs neither."""
    given = np.array([v for v in values if v is not None], dtype=float)
    if not len(given):
        return Estimate(None).as_dict()
    return proportion(given, np.ones(len(given))).as_dict()


def generation_metrics(generated: Sequence[Any], judged: Sequence[Any], *, seed: int = 0,
                       n_resamples: int = 1000) -> dict[str, Any]:
    """Per generator: how many outputs parsed, and per judge the share of hyp+ judged faithful and
    of hyp− judged hallucinated (overall and per requested hallucination type).

    ``generated`` samples have ``model``, ``item_id``, ``type``, ``status``, ``reason``;
    ``judged`` samples have ``judge``, ``generator``, ``item_id``, ``hypothesis`` ("hyp+"/"hyp-")
    and ``success`` (1/0, None when the judge gave no verdict)."""
    out = {}
    for generator in dict.fromkeys(g.model for g in generated):
        mine = [g for g in generated if g.model == generator]
        types = {g.item_id: g.type or "any" for g in mine}
        entry = {
            "items": len(mine),
            "valid": share_block([float(g.status == "ok") if g.status != "failed" else None for g in mine],
                                 seed=seed, n_resamples=n_resamples),
            "invalid": sum(g.status == "invalid" for g in mine),
            "invalid_reasons": dict(Counter(g.reason for g in mine if g.status == "invalid")),
            "failed": sum(g.status == "failed" for g in mine),
            "judges": {},
        }
        for judge in dict.fromkeys(j.judge for j in judged if j.generator == generator):
            rows = [j for j in judged if j.generator == generator and j.judge == judge]
            block: dict[str, Any] = {}
            for hypothesis, name in (("hyp+", "hyp+_faithful"), ("hyp-", "hyp-_hallucinated")):
                values = [j.success for j in rows if j.hypothesis == hypothesis]
                block[name] = share_block(values, seed=seed, n_resamples=n_resamples)
                block[f"{name}_by_type"] = {
                    t: share_block([j.success for j in rows if j.hypothesis == hypothesis and types[j.item_id] == t],
                                   seed=seed, n_resamples=n_resamples)
                    for t in sorted(set(types.values()))}
            block["unjudged"] = sum(j.success is None for j in rows)
            entry["judges"][judge] = block
        out[generator] = entry
    return out


def step_metrics(samples: Sequence[Any], configs: Sequence[str], *, seed: int = 0, n_resamples: int = 1000,
                 cross: bool = False) -> StepMetrics:
    """The typed record of a detection or cross step: every configuration found in ``samples``
    (``configs`` order the agreement), with the detector's model label and prompt variant stored
    beside its scores (a detection sample's ``model`` and ``variant``; votes and the NLI baseline
    have no variant). A cross step adds the generator x detector matrix (empty when no generator
    wrote a valid pair)."""
    names = list(dict.fromkeys(s.config for s in samples))
    detectors = {}
    for name in names:
        mine = [s for s in samples if s.config == name]
        prompt = mine[0].variant or None
        detectors[name] = {**detector_metrics(mine, seed=seed, n_resamples=n_resamples),
                           "detector": mine[0].model if prompt else None, "prompt": prompt}
    return decode(StepMetrics, {
        "detectors": detectors,
        "agreement": agreement(samples, [c for c in configs if c in names]),
        "matrix": matrix(samples, names, seed=seed, n_resamples=n_resamples) if cross else None})


def generation_record(generated: Sequence[Any], judged: Sequence[Any], *, seed: int = 0,
                      n_resamples: int = 1000) -> dict[str, GeneratorMetrics]:
    """`generation_metrics` as typed records, by generator."""
    return decode(dict[str, GeneratorMetrics], generation_metrics(generated, judged, seed=seed,
                                                                  n_resamples=n_resamples))


__all__ = ["agreement", "chose_first", "classification_block", "detection_rows", "detector_metrics",
           "generation_metrics", "generation_record", "matrix", "order_consistency", "share_block", "step_metrics"]
