"""The typed metrics record of a `consistency` run (results.json ``metrics``).

Per judge: the items × models table of 0-5 similarity ratings, the per-item mean (difficulty) and
per model the sum and mean with CIs over items; with two or more judges, their agreement; what the
prompt-set loader repaired or left out; and, for generated prompt sets (``--variations``), how many
variants each variation gave and how many were rejected. Keys that a run did not measure are absent
in results.json, not null (`OmitNone`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robusteval.estimate import Estimate
from robusteval.results.codec import OmitNone


@dataclass(frozen=True)
class VariationMean:
    """Mean rating of the items of one variation type (ELOQUENT's ``variation`` field)."""

    mean: float | None
    items: int


@dataclass(frozen=True)
class ScoreSensitivity:
    """The sensitivity measures that apply to one model's 0-5 similarity ratings (docs/metrics.md
    says which do and why): the rating of an item already compares all its variants' answers, so
    the measures here are across variation types (style, dialect, language...) and on a threshold."""

    threshold: float = 4.0
    # share of items whose answers across all variants were rated >= threshold: the worst-case
    # reading (an item counts only if every variant's answer was judged alike)
    consistent_share: Estimate = field(default_factory=lambda: Estimate(None))
    spread: Estimate = field(default_factory=lambda: Estimate(None))  # best - worst variation mean, in points
    std: Estimate = field(default_factory=lambda: Estimate(None))  # std of the variation means, in points
    by_variation: dict[str, Estimate] = field(default_factory=dict)  # mean rating per variation (points)


@dataclass(frozen=True)
class ModelSimilarity:
    """One model under one judge: how alike its answers to an item's variants are, over items."""

    # defaults: a partial record (a hand-written results.json, as in tests of compare) still reads
    sum: Estimate = field(default_factory=lambda: Estimate(None))
    mean: Estimate = field(default_factory=lambda: Estimate(None))
    rated: int = 0
    missing: int = 0
    by_variation: dict[str, VariationMean] = field(default_factory=dict)
    sampling_mean: OmitNone[Estimate] = None  # with --samples K: the same variant's K answers among themselves
    style_effect: OmitNone[Estimate] = None  # variants' rating minus the samples' rating
    sensitivity: OmitNone[ScoreSensitivity] = None


@dataclass(frozen=True)
class JudgeSimilarity:
    table: dict[str, dict[str, float | None]] = field(default_factory=dict)  # item -> model -> 0-5 (None: missing)
    item_mean: dict[str, float | None] = field(default_factory=dict)
    models: dict[str, ModelSimilarity] = field(default_factory=dict)


@dataclass(frozen=True)
class Agreement:
    """Agreement of two or more judges over the item × model cells."""

    judges: list[str]
    krippendorff_alpha_interval: float | None
    spearman: dict[str, float | None]  # "a~b" -> rho (a label for people; nothing splits it)
    mean_abs_difference: dict[str, float | None]
    per_unit: dict[str, float | None]  # "item|model" -> agreement (a label for people)


@dataclass(frozen=True)
class LoaderReport:
    source: str
    fixed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class VariationCount:
    """What one ``--variations`` name gave over all prompts: variants kept, and rejected by reason."""

    kept: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Generation:
    """Prompt sets generated from plain prompts (``--variations``)."""

    prompts: int  # plain prompts read
    sets: int  # prompt sets kept (an original and at least one variant)
    variations: dict[str, VariationCount]
    dropped_prompts: list[str] = field(default_factory=list)  # ids whose every variant was rejected
    estimated: bool = False  # --estimate: rewrites were counted, not written
    file: str = "prompt-sets.jsonl"  # in the run folder; reloads with --data


@dataclass(frozen=True)
class ConsistencyMetrics:
    judges: dict[str, JudgeSimilarity]
    agreement: OmitNone[Agreement] = None
    loader: OmitNone[LoaderReport] = None
    generation: OmitNone[Generation] = None


@dataclass(frozen=True)
class ConsistencyExtra:
    """The consistency suite's keys beside its metrics in results.json (its `SuiteSpec.extra`)."""

    items: int = 0  # prompt sets asked
    variants: int = 0  # their variants, all together
    # judge -> what it was (``class``, ``model``, ``mode``, ...; ``local_model_s`` for a local model's time)
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)

    def local_time(self, judge: str) -> tuple[float, int] | None:
        """Seconds and calls a local judge's model spent (None: a judge through the engine, or not recorded)."""
        info = self.judges.get(judge) or {}
        seconds = info.get("local_model_s")
        return None if seconds is None else (float(seconds), int(info.get("local_model_calls") or 0))
