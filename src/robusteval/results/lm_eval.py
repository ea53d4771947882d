"""The typed record of lm-evaluation-harness's own figures beside robusteval's, for a folder scored
from lm-eval's ``--log_samples`` output with its ``results_*.json``: results.json holds them under
``lm_eval``, model -> a list of `LmEvalFigure`, one per metric of a task that both give."""

from __future__ import annotations

from dataclasses import dataclass

# lm-eval rounds SCORE's figures to 4 decimals (``np.round(accuracy, 4)``): equal within half a unit
TOLERANCE = 0.5e-4 + 1e-9


@dataclass(frozen=True)
class LmEvalFigure:
    """One metric of one lm-eval task (``task``, ``metric`` as lm-eval names them) and robusteval's
    figure of the same replies (``measure`` of ``family``, ``variant`` or the family's own where None);
    ``reasons``: why they differ, where known (empty where they agree or no reason is known)."""

    task: str
    metric: str
    family: str
    variant: str | None
    measure: str  # robusteval's field: accuracy, macro_accuracy, consistency_rate_pooled
    lm_eval: float
    robusteval: float | None
    reasons: tuple[str, ...] = ()

    @property
    def difference(self) -> float | None:
        return None if self.robusteval is None else self.robusteval - self.lm_eval

    @property
    def agrees(self) -> bool:
        return self.robusteval is not None and abs(self.robusteval - self.lm_eval) <= TOLERANCE


LmEvalFigures = dict[str, list[LmEvalFigure]]  # model -> figures

