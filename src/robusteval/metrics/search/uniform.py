"""``uniform``: equal allocation, the baseline. Every variant is asked the same number of items
(the first in one seeded order, the same for all, so the variants are compared on the same
questions), all at once; the best and worst are the highest and lowest accuracies on them."""

from __future__ import annotations

import numpy as np

from robusteval.metrics.search.base import Problem, Session, trim


class Uniform(Session):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem)
        self.done = False

    def ask(self) -> np.ndarray:
        if self.done:
            return np.empty((0, 2), dtype=int)
        self.done = True
        cells = self.equal_cells(np.arange(self.exists.shape[1]), self.problem.calls)
        return trim(cells, self.calls_left)

    def pick(self) -> tuple[int, int]:
        return best_and_worst(*self.counts(), self.tiebreak)


def best_and_worst(right: np.ndarray, answered: np.ndarray, tiebreak: np.ndarray) -> tuple[int, int]:
    """The highest and lowest accuracy among the variants with an answer, a tie broken by
    ``tiebreak`` (a seeded draw per variant: the first in the file would favour its order)."""
    acc = np.where(answered > 0, right / np.maximum(answered, 1), np.nan)
    if np.isnan(acc).all():
        return 0, 0
    return int(np.nanargmax(acc + 1e-9 * tiebreak)), int(np.nanargmin(acc - 1e-9 * tiebreak))
