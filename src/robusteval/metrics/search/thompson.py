"""``thompson``: FormatSpread's search (Sclar et al., ICLR 2024), written from its description and
``format_evaluation.py`` (MIT): Thompson sampling over the variants, each step one batch of
``BATCH`` items asked of one variant, in two phases of half the calls each: first toward the
highest accuracy, then (its counts kept) toward the lowest.

Each step draws an accuracy for every variant from its Beta posterior and asks the next batch of
the variant whose draw is highest (lowest in the second phase); a variant asked of every item is
not drawn again. The prior is FormatSpread's: Beta(a, 5) whose mean is the reference accuracy,
``a`` at least 1.1. FormatSpread reads that accuracy from its first format asked of the whole
data set outside the budget; here it is the accuracy of every answer so far (0.5 before any),
which costs nothing extra. The best (worst) is the variant whose accuracy on its answered items
is highest (lowest), as FormatSpread chooses it."""

from __future__ import annotations

import numpy as np

from robusteval.metrics.search.base import Problem, Session, trim
from robusteval.metrics.search.uniform import best_and_worst

BATCH = 10  # items per step
PRIOR_B = 5.0  # FormatSpread's b; a follows from the reference accuracy
MIN_A = 1.1  # FormatSpread's floor on a (keeps the prior bell-shaped)


class Thompson(Session):
    def __init__(self, problem: Problem, batch: int = BATCH) -> None:
        super().__init__(problem)
        self.batch = batch
        self.steps = -(-problem.calls // batch)  # the last batch cut to the calls left
        self.step = 0

    def ask(self) -> np.ndarray:
        if self.step >= self.steps or self.calls_left <= 0:
            return np.empty((0, 2), dtype=int)
        highest = self.step < self.steps // 2
        self.step += 1
        right, answered = self.counts()
        open_ = (self.exists & ~self.asked).any(axis=0)
        if not open_.any():
            return np.empty((0, 2), dtype=int)
        total = answered.sum()
        mean = min(max(right.sum() / total if total else 0.5, 1e-3), 1 - 1e-3)
        a0 = max(mean / (1 - mean) * PRIOR_B, MIN_A)
        draws = self.rng.beta(a0 + right, PRIOR_B + answered - right)
        draws = np.where(open_, draws, -np.inf if highest else np.inf)
        chosen = int(np.argmax(draws) if highest else np.argmin(draws))
        return trim(self.next_items(np.array([chosen]), self.batch), self.calls_left)

    def pick(self) -> tuple[int, int]:
        return best_and_worst(*self.counts(), self.tiebreak)
