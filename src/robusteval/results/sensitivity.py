"""The typed record of every sensitivity measure of one family (mcq), node grouping (tree) or set of
judge scores (consistency), as results.json holds it.

`metrics.sensitivity.sensitivity` computes a `SensitivityReport`; `Sensitivity.of(report)` is its
JSON-able record. Every field has a default so that a partial or older record still reads (what it
lacks shows as n/a). `MEASURES` names the measures in the order the terminal, the report and
``compare`` show them, with the label each uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from robusteval.estimate import Estimate

if TYPE_CHECKING:
    from robusteval.metrics.sensitivity import SensitivityReport


def _na() -> Estimate:
    return Estimate(None)


@dataclass(frozen=True)
class VariantSensitivity:
    """One variant against the reference: accuracy, performance drop rate and flip rate (n/a for
    the reference itself, or without one)."""

    accuracy: Estimate = field(default_factory=_na)
    drop_rate: Estimate = field(default_factory=_na)
    flip_rate: Estimate = field(default_factory=_na)


@dataclass(frozen=True)
class Sensitivity:
    """Every sensitivity measure of one group of variants (docs/metrics.md: paper and formula)."""

    reference: str | None = None
    items: int = 0
    consistency_rate: Estimate = field(default_factory=_na)
    consistency_rate_pooled: Estimate = field(default_factory=_na)
    flip_rate: Estimate = field(default_factory=_na)
    spread: Estimate = field(default_factory=_na)
    std: Estimate = field(default_factory=_na)
    worst_case: Estimate = field(default_factory=_na)
    best_case: Estimate = field(default_factory=_na)
    drop_rate: Estimate = field(default_factory=_na)
    prompt_sensi_score: Estimate = field(default_factory=_na)
    max_p: Estimate = field(default_factory=_na)
    avg_p: Estimate = field(default_factory=_na)
    cps: Estimate = field(default_factory=_na)
    posix: Estimate = field(default_factory=_na)
    per_variant: dict[str, VariantSensitivity] = field(default_factory=dict)

    @classmethod
    def of(cls, report: SensitivityReport) -> Sensitivity:
        return cls(reference=report.reference, items=report.items,
                   **{name: getattr(report, name) for name, _ in MEASURES},
                   per_variant={v.name: VariantSensitivity(v.accuracy, v.drop_rate, v.flip_rate)
                                for v in report.per_variant})

    def measures(self) -> list[tuple[str, str, Estimate]]:
        """(field, label, estimate) for every measure, in `MEASURES` order."""
        return [(name, label, getattr(self, name)) for name, label in MEASURES]


# (field, label) in the order every table shows them
MEASURES: tuple[tuple[str, str], ...] = (
    ("consistency_rate", "consistency rate (per item)"),
    ("consistency_rate_pooled", "consistency rate (pooled pairs)"),
    ("flip_rate", "flip rate vs reference"),
    ("spread", "spread (best - worst variant)"),
    ("std", "std of variant accuracies"),
    ("worst_case", "worst-case accuracy"),
    ("best_case", "best-case accuracy"),
    ("drop_rate", "performance drop rate (mean)"),
    ("prompt_sensi_score", "PromptSensiScore"),
    ("max_p", "MaxP"),
    ("avg_p", "AvgP"),
    ("cps", "CPS"),
    ("posix", "POSIX"),
)
