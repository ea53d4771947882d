"""The tree suite's numbers: accuracy and overlap per answering mode, by tree level, node kind,
perturbation and popularity, with bootstrap CIs that resample questions (a tree's nodes stay
together); the RAG failure table; mode-against-mode differences; the shape of the trees; and the
cost summary (requests, tokens, money, local-model time, extrapolated to the whole dataset).

The results are the typed records of `results.tree`; samples are read through `TreeSample`, the
fields of the suite's sample the numbers need.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from robusteval.estimate import Estimate
from robusteval.metrics.sensitivity import sensitivity
from robusteval.metrics.stats import bootstrap
from robusteval.probes.paraphrase import Cost
from robusteval.results.sensitivity import Sensitivity
from robusteval.results.tree import (
    STAGES,
    GroupMetrics,
    ModeComparison,
    ModeMetrics,
    Pooled,
    StageCount,
    TreeModelMetrics,
    comparison_key,
)

if TYPE_CHECKING:
    from robusteval.probes.tree import Tree

POPULARITY_BINS = ((0, 1e2, "<100"), (1e2, 1e3, "100-1k"), (1e3, 1e4, "1k-10k"), (1e4, 1e5, "10k-100k"),
                   (1e5, math.inf, ">=100k"))
TEXT_METRICS = ("f1", "precision", "recall", "bleu", "rouge1", "rougeL")


class TreeSample(Protocol):
    """What the numbers read of one answered node (suites/tree.py `Sample`; read-only, as a frozen
    dataclass's fields are)."""

    @property
    def item_id(self) -> str: ...

    @property
    def node(self) -> str: ...

    @property
    def level(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def perturbation(self) -> str: ...

    @property
    def mode(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def correct(self) -> bool | None: ...

    @property
    def f1(self) -> float | None: ...

    @property
    def popularity(self) -> float | None: ...

    @property
    def subject_found(self) -> bool | None: ...

    @property
    def search_has_answer(self) -> bool | None: ...

    @property
    def context_has_answer(self) -> bool | None: ...

    @property
    def failure_stage(self) -> str | None: ...


class TreeRow(NamedTuple):
    """The fields the numbers read of one sample, and nothing else (no prompt, reply, retrieved
    passages): what the suite keeps of each sample once it is written to samples.jsonl."""

    item_id: str
    node: str
    level: int
    kind: str
    perturbation: str
    mode: str
    status: str
    correct: bool | None
    f1: float | None
    precision: float | None
    recall: float | None
    bleu: float | None
    rouge1: float | None
    rougeL: float | None
    popularity: float | None
    subject_found: bool | None
    search_has_answer: bool | None
    context_has_answer: bool | None
    failure_stage: str | None

    @classmethod
    def of(cls, s: Any) -> TreeRow:
        return cls(*(getattr(s, name) for name in cls._fields))


Value = Callable[[TreeSample], "float | bool | None"]


def _per_item(rows: Sequence[TreeSample], item_ids: Sequence[str], value: Value) -> np.ndarray:
    """items x [sum, count] of ``value(sample)`` over the answered samples (failed ones left out)."""
    index = {i: n for n, i in enumerate(item_ids)}
    out = np.zeros((len(item_ids), 2))
    for s in rows:
        v = value(s)
        if v is not None:
            out[index[s.item_id]] += (float(v), 1)
    return out


def _ratio(r: np.ndarray) -> float:
    n = r[:, 1].sum()
    return float(r[:, 0].sum() / n) if n else float("nan")


def pooled(rows: Sequence[TreeSample], item_ids: Sequence[str], value: Value, *, seed: int = 0,
           n_resamples: int = 1000) -> Pooled:
    """Mean of ``value`` over samples, with a bootstrap CI resampling questions (a tree's nodes stay
    together), and how many samples it averages."""
    per_item = _per_item(rows, item_ids, value)
    est = bootstrap(per_item, _ratio, seed=seed, n_resamples=n_resamples)
    return Pooled(est.value, est.low, est.high, est.n, samples=int(per_item[:, 1].sum()))


def pooled_difference(a: Sequence[TreeSample], b: Sequence[TreeSample], item_ids: Sequence[str], value: Value, *,
                      seed: int = 0) -> Estimate:
    """mean(value | a) - mean(value | b), each pooled over its samples, with a bootstrap CI over
    questions (both on the same trees). Not `metrics.paired.paired_difference`, which compares one
    number per question of two runs."""
    rows = np.column_stack([_per_item(a, item_ids, value), _per_item(b, item_ids, value)])
    return bootstrap(rows, lambda r: _ratio(r[:, :2]) - _ratio(r[:, 2:]), seed=seed)


def popularity_bucket(popularity: float | None) -> str | None:
    if popularity is None:
        return None
    return next(label for low, high, label in POPULARITY_BINS if low <= popularity < high)


def correct(s: TreeSample) -> float | None:
    return None if s.correct is None else float(s.correct)


def mode_metrics(rows: Sequence[TreeSample], item_ids: Sequence[str], *, seed: int = 0) -> ModeMetrics:
    """Accuracy and overlap scores of one mode, by level, node kind, perturbation and popularity."""
    def acc(subset: Sequence[TreeSample]) -> Pooled:
        return pooled(subset, item_ids, correct, seed=seed)

    def groups(key: Callable[[TreeSample], object]) -> dict[Any, list[TreeSample]]:
        out = defaultdict(list)
        for s in rows:
            if (k := key(s)) is not None:
                out[k].append(s)
        return dict(sorted(out.items(), key=lambda kv: str(kv[0])))

    def group(subset: Sequence[TreeSample]) -> GroupMetrics:
        return GroupMetrics(acc(subset), pooled(subset, item_ids, lambda s: s.f1, seed=seed))

    text = {name: pooled(rows, item_ids, attrgetter(name), seed=seed) for name in TEXT_METRICS}
    root = [s for s in rows if s.level == 0]
    deepest = max((s.level for s in rows), default=0)
    rag = any(s.mode.startswith("rag") for s in rows)
    return ModeMetrics(
        accuracy=acc(rows), **text,
        by_level={str(k): group(v) for k, v in groups(lambda s: s.level).items()},
        by_kind={k: group(v) for k, v in groups(lambda s: s.kind).items()},
        by_perturbation={k: acc(v) for k, v in groups(lambda s: s.perturbation).items()},
        samples=len(rows), invalid=sum(s.status == "invalid" for s in rows),
        failed=sum(s.status == "failed" for s in rows),
        drop_root_to_deepest=pooled_difference(root, [s for s in rows if s.level == deepest], item_ids, correct,
                                               seed=seed) if deepest > 0 else None,
        by_popularity={k: acc(v) for k, v in groups(lambda s: popularity_bucket(s.popularity)).items()}
        if any(s.popularity is not None for s in rows) else None,
        subject_found=pooled(rows, item_ids, lambda s: s.subject_found, seed=seed) if rag else None,
        search_recall=pooled(rows, item_ids, lambda s: s.search_has_answer, seed=seed) if rag else None,
        context_recall=pooled(rows, item_ids, lambda s: s.context_has_answer, seed=seed) if rag else None,
        failure_stages=failure_table(rows) if rag else None,
        sensitivity_by_kind=grouping_sensitivity(rows, item_ids, lambda s: s.kind, "root", seed=seed),
        sensitivity_by_level=grouping_sensitivity(rows, item_ids, lambda s: str(s.level), "0", seed=seed),
    )


def grouping_sensitivity(rows: Sequence[TreeSample], item_ids: Sequence[str], key: Callable[[TreeSample], str],
                         reference: str, *, seed: int = 0) -> Sensitivity | None:
    """The sensitivity measures of a tree's node groups (kinds or levels) as its variants: per tree,
    each group's accuracy (the mean over its nodes), the root's group as the reference. Answers are
    open text, so no consistency rate, and a flip is a change of correctness against the root; no
    POSIX. None with fewer than two groups (nothing varies)."""
    groups = sorted({key(s) for s in rows}, key=lambda g: (g != reference, int(g) if g.isdigit() else 0, g))
    if len(groups) < 2:
        return None
    index = {i: n for n, i in enumerate(item_ids)}
    col = {g: n for n, g in enumerate(groups)}
    total = np.zeros((len(item_ids), len(groups)))
    count = np.zeros((len(item_ids), len(groups)))
    for s in rows:
        if (v := correct(s)) is not None:
            total[index[s.item_id], col[key(s)]] += v
            count[index[s.item_id], col[key(s)]] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    report = sensitivity(scores, reference=reference if reference in col else None, names=groups, seed=seed)
    return Sensitivity.of(report)


def failure_table(rows: Sequence[TreeSample]) -> dict[str, StageCount]:
    """How many RAG answers each stage is blamed for, and their share of all answers."""
    counts = Counter(s.failure_stage for s in rows)
    return {stage: StageCount(counts.get(stage, 0), counts.get(stage, 0) / len(rows) if rows else None)
            for stage in STAGES}


def metrics(samples: Sequence[TreeSample], trees: Sequence[Tree], *, seed: int = 0) -> TreeModelMetrics:
    """One model's samples: per mode, and the comparison of each pair of modes (retrievers against
    each other and against closed-book) on the same questions."""
    item_ids = [t.item.id for t in trees]
    by_mode: dict[str, list[TreeSample]] = defaultdict(list)
    for s in samples:
        by_mode[s.mode].append(s)
    names = list(by_mode)
    comparisons = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = {(s.node, s.item_id) for s in by_mode[a]} & {(s.node, s.item_id) for s in by_mode[b]}
            ra = [s for s in by_mode[a] if (s.node, s.item_id) in common]
            rb = [s for s in by_mode[b] if (s.node, s.item_id) in common]
            both_rag = a.startswith("rag") and b.startswith("rag")
            comparisons[comparison_key(a, b)] = ModeComparison(
                pooled_difference(ra, rb, item_ids, correct, seed=seed),
                pooled_difference(ra, rb, item_ids, lambda s: s.context_has_answer, seed=seed) if both_rag else None)
    return TreeModelMetrics({m: mode_metrics(rows, item_ids, seed=seed) for m, rows in by_mode.items()}, comparisons)


def shape_table(trees: Sequence[Tree]) -> dict[str, Any]:
    """How many trees and nodes there are, how many can be evaluated, by level and kind."""
    nodes = [n for t in trees for n in t.nodes]
    return {"trees": len(trees), "nodes": len(nodes), "evaluated": sum(n.status == "ok" for n in nodes),
            "by_level": dict(sorted(Counter(str(n.level) for n in nodes if n.status == "ok").items())),
            "by_kind": dict(Counter(n.kind for n in nodes if n.status == "ok"))}


def cost_summary(by_tree: Mapping[str, Cost], n_trees: int, dataset_size: int, wall_s: float, price_in: float,
                 price_out: float, local: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """Totals, per tree, mean per tree, and the mean scaled to the whole dataset. ``local``: the
    seconds local models (embeddings, spaCy, retrievers) took, by kind (engine/local.py)."""
    total = sum(by_tree.values(), Cost())

    def money(c: Cost) -> float:
        return round((c.prompt_tokens * price_in + c.completion_tokens * price_out) / 1e6, 6)

    per = total.share(max(1, n_trees))
    scale = dataset_size / max(1, n_trees)
    out = {
        "trees": n_trees, "wall_s": round(wall_s, 2),
        "total": {**total.as_dict(), "tokens": round(total.tokens, 1), "price": money(total)},
        "mean_per_tree": {**per.as_dict(), "tokens": round(per.tokens, 1), "price": money(per),
                          "wall_s": round(wall_s / max(1, n_trees), 3)},
        "extrapolated_to_dataset": {"questions": dataset_size, "requests": round(total.requests * scale),
                                    "tokens": round(total.tokens * scale), "price": round(money(total) * scale, 4),
                                    "wall_s_at_this_rate": round(wall_s * scale, 1)},
        "per_tree": {t: {**c.as_dict(), "tokens": round(c.tokens, 1)} for t, c in by_tree.items()},
    }
    if local is not None:
        out["local_models"] = {kind: dict(spent) for kind, spent in local.items()}
    return out
