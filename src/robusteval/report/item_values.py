"""Per-item values of a run, one extractor per suite (named by its `SuiteSpec`): what a paired
comparison of two runs (``compare``) and a leaderboard's tie ranks (`report.leaderboard`) pair on.

A paired difference exists only for a measure that is a mean of per-item values: both runs scored
the same items, so the per-item differences carry the signal and the interval resamples items. A
measure that is a statistic of the whole set (an F1, a rank correlation across personas) has no such
unit: its extractor says so with the reason (`ItemValues.reason`), and the comparison shows "n/a"
with it rather than a number that tests something else.

Metric names are the headline names (`report.sections.headlines`) where the measure is a headline,
so the leaderboard finds the values of the metric it ranks by.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robusteval.files import iter_jsonl
from robusteval.metrics.consistency import item_consistency
from robusteval.results.codec import RecordError, decode
from robusteval.results.consistency import ConsistencyMetrics
from robusteval.results.mcq import SampleRow, read_rows
from robusteval.suite_specs import SUITES


@dataclass(frozen=True)
class ItemValues:
    """One measure of one run: model -> item id -> the model's value on that item (its mean over
    the item's variants, orders or nodes). Empty ``values`` with a ``reason``: no paired unit."""

    metric: str
    unit: str  # what an item is here: "question", "item", "source sentence"
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    reason: str = ""  # why there is no paired unit (values empty)


def _means(cells: Iterable[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """model -> item -> mean of the (model, item, value) cells."""
    sums: dict[str, dict[str, list[float]]] = {}
    for model, item, value in cells:
        total = sums.setdefault(model, {}).setdefault(item, [0.0, 0.0])
        total[0] += value
        total[1] += 1
    return {model: {item: s / n for item, (s, n) in items.items()} for model, items in sums.items()}


def _scored(row: dict[str, Any], key: str) -> bool:
    """A row that was answered (not failed) and carries a number or boolean under ``key``."""
    value = row.get(key)
    return row.get("status") != "failed" and isinstance(value, bool | int | float) and value == value


def mcq_item_measures(rows: list[SampleRow], item_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per question (in ``item_ids`` order): mean correctness over its answered variants, and the
    agreement of the chosen options across them (NaN where a question has no answered variant)."""
    index = {i: n for n, i in enumerate(item_ids)}
    cells = sorted({(r.variant, r.sample) for r in rows})
    col = {c: n for n, c in enumerate(cells)}
    correct = np.full((len(item_ids), len(cells)), np.nan)
    answers = np.full((len(item_ids), len(cells)), np.nan)
    for r in rows:
        if r.correct is None or r.item_id not in index:
            continue
        i, j = index[r.item_id], col[(r.variant, r.sample)]
        correct[i, j] = float(r.correct)
        answers[i, j] = -1 if r.answer_option is None else r.answer_option
    with np.errstate(invalid="ignore"):
        acc = np.array([np.nanmean(row) if np.any(~np.isnan(row)) else np.nan for row in correct])
    return acc, item_consistency(answers)


def mcq_values(results: dict[str, Any], rows: list[dict[str, Any]]) -> list[ItemValues]:
    """Per family: accuracy and consistency rate per question (the headlines)."""
    try:
        typed = read_rows([r for r in rows if isinstance(r.get("family"), str)])
    except RecordError:
        return []
    out = []
    for family in dict.fromkeys(r.family for r in typed):
        acc: dict[str, dict[str, float]] = {}
        cr: dict[str, dict[str, float]] = {}
        for model in dict.fromkeys(r.model for r in typed):
            mine = [r for r in typed if r.family == family and r.model == model]
            ids = list(dict.fromkeys(r.item_id for r in mine))
            a, c = mcq_item_measures(mine, ids)
            acc[model] = {i: float(v) for i, v in zip(ids, a) if v == v}
            cr[model] = {i: float(v) for i, v in zip(ids, c) if v == v}
        out += [ItemValues(f"{family} accuracy", "question", {m: v for m, v in acc.items() if v}),
                ItemValues(f"{family} consistency rate", "question", {m: v for m, v in cr.items() if v})]
    return out


def tree_values(results: dict[str, Any], rows: list[dict[str, Any]]) -> list[ItemValues]:
    """Per answering mode: accuracy and token F1 per question, each the mean over its tree's nodes."""
    out = []
    for mode in dict.fromkeys(str(r["mode"]) for r in rows if isinstance(r.get("mode"), str)):
        mine = [r for r in rows if r.get("mode") == mode]
        for key, name in (("correct", "accuracy"), ("f1", "F1")):
            out.append(ItemValues(f"{mode} {name}", "question", _means(
                (str(r.get("model")), str(r.get("item_id")), float(r[key])) for r in mine if _scored(r, key))))
    return out


def hallucination_values(results: dict[str, Any], rows: list[dict[str, Any]]) -> list[ItemValues]:
    """Detection accuracy per source sentence and prompt (its mean over the hypothesis orders asked;
    an unreadable verdict counts as wrong, as in the detection metrics), the vote's under "vote".
    Detection F1, the headline, is a statistic of the whole confusion matrix: no paired unit."""
    detection = [r for r in rows if r.get("step") == "detection" and _scored(r, "correct")]
    out = []
    for variant in dict.fromkeys(str(r.get("variant") or "") for r in detection):
        mine = [r for r in detection if str(r.get("variant") or "") == variant]
        out.append(ItemValues(f"detection accuracy ({variant or 'vote'})", "source sentence", _means(
            (str(r.get("model")), str(r.get("item_id")), float(r["correct"])) for r in mine)))
    return [*out, ItemValues("detection F1", "source sentence", reason=(
        "F1 is computed from the whole confusion matrix, not a mean of per-item values; "
        "the paired unit is detection accuracy"))]


def consistency_values(results: dict[str, Any], rows: list[dict[str, Any]]) -> list[ItemValues]:
    """Per judge: each item's similarity rating (0-5) of a model's answers to its variants, as the
    run's items x models table holds it (the headline mean similarity is the mean of that column)."""
    raw = results.get("metrics")
    try:
        metrics = decode(ConsistencyMetrics, raw) if raw else None
    except RecordError:
        return []
    if metrics is None:
        return []
    out = []
    for judge, jm in metrics.judges.items():
        values: dict[str, dict[str, float]] = {}
        for item, by_model in jm.table.items():
            for model, score in by_model.items():
                if score is not None:
                    values.setdefault(model, {})[item] = float(score)
        out.append(ItemValues(f"{judge} mean similarity (0-5)", "item", values))
    return out


def persona_values(results: dict[str, Any], rows: list[dict[str, Any]]) -> list[ItemValues]:
    """Rank-order stability correlates the personas' value scores between contexts: it is a
    statistic of the whole population, with no per-persona or per-item value to pair on."""
    return [ItemValues("rank-order stability", "persona", reason=(
        "rank-order stability is a rank correlation across personas (per pair of contexts), "
        "not a mean of per-persona values; the persona leaderboard compares runs on the same games"))]


def item_values(suite: str, results: dict[str, Any], rows: list[dict[str, Any]]) -> list[ItemValues]:
    """The per-item values of every measure of a run that has them (and a reason for each headline
    that has none); empty for a suite with no extractor."""
    spec = SUITES.get(suite)
    extractor = None if spec is None else spec.item_values_of()
    return extractor(results, [r for r in rows if isinstance(r, dict)]) if extractor else []


# The texts of a samples.jsonl line (the sample envelope's prompt and reply, `suites.base.Sample`): a
# streamed line drops them, so a run's prompts and replies are never held; every other key is kept,
# since a suite's extractor (the toy one in docs/extending.md included) may read any of its own.
TEXT_FIELDS = frozenset({"prompt", "response"})
CACHED_RUNS = 256  # runs whose per-item values are kept (a few KB each: per-item numbers, no text)
_cache: OrderedDict[tuple[Any, ...], list[ItemValues]] = OrderedDict()
_cache_lock = threading.Lock()  # the leaderboard server answers on threads


def run_item_values(suite: str, results: dict[str, Any], samples: Path) -> list[ItemValues]:
    """`item_values` of a run whose samples are the file ``samples``, read line by line (only
    `TEXT_FIELDS` dropped) and cached per version of the file (path, modification time, size): a
    leaderboard page load re-reads only the runs written since the last one, not every sample of
    every run. Raises what `files.iter_jsonl` raises for a file that cannot be read (never cached)."""
    spec = SUITES.get(suite)
    if (spec is not None and not spec.values_from_samples) or not samples.is_file():
        return item_values(suite, results, [])  # a hand-made results.json may come without samples
    stat = samples.stat()
    key = (str(samples.resolve()), stat.st_mtime_ns, stat.st_size, suite)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    rows = [{k: v for k, v in row.items() if k not in TEXT_FIELDS} for row in iter_jsonl(samples)
            if isinstance(row, dict)]
    measures = item_values(suite, results, rows)
    with _cache_lock:
        _cache[key] = measures
        while len(_cache) > CACHED_RUNS:
            _cache.popitem(last=False)
    return measures
