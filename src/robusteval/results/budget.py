"""The typed record of a budgeted estimate (``--budget``): what the full items x variants grid of one
family would show, estimated from the cells asked (`metrics.budget.estimate`). results.json holds
them under ``budget``: model -> family -> `BudgetEstimate`."""

from __future__ import annotations

from dataclasses import dataclass, field

from robusteval.estimate import Estimate


@dataclass(frozen=True)
class BudgetEstimate:
    """Per-variant accuracy, the 5/50/95% quantiles of the variants' accuracies and the spread (best
    minus worst), each with a 95% interval that includes the fit's own error; ``asked`` of ``cells``
    (item, variant) cells were asked (``budget``: the share asked for)."""

    variants: dict[str, Estimate] = field(default_factory=dict)
    quantiles: dict[str, Estimate] = field(default_factory=dict)  # "5%", "50%", "95%"
    spread: Estimate = field(default_factory=lambda: Estimate(None))
    asked: int = 0
    cells: int = 0
    budget: float = 1.0
    # how many cells of each variant were asked: how far each figure rests on the model (older runs: empty)
    asked_per_variant: dict[str, int] = field(default_factory=dict)
    # what the estimate was told of the variants before asking: per covariate kind asked
    # (`metrics.budget_covariates`), the columns it gave this family (empty: none asked, or an older run)
    covariates: dict[str, int] = field(default_factory=dict)


# model -> family -> estimate
BudgetEstimates = dict[str, dict[str, BudgetEstimate]]

