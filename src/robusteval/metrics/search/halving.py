"""``halving``: robusteval's search, successive elimination from both ends on paired items.

Every variant is first asked the same few items; then, round by round, only the top and the bottom
``1/KEEP`` of the survivors go on (the best candidates and the worst candidates, two pools), and
each pool is asked new items, the same for all its members. Whatever an item's difficulty, every
variant in a pool meets it, so it moves their totals alike: the item difficulties that a Rasch
model fits (`metrics.budget_fit`) drop out of the comparison without being fitted, and what is left
is each answer's own noise and the format x item term (a total on shared items is also the Rasch
model's sufficient statistic for a variant's ability: a fit would order the pool the same).
Per round the pools get an equal share of the calls, so the fewer survivors of the late rounds
are asked many more items each: the comparisons that decide the answer (the last few candidates,
close together) get the most data, where uniform allocation spends most of its calls on variants
that were plainly not extreme after a few items, and Thompson sampling stakes each step on one
variant's noisy draw.

A round's share that would ask a pool more items than are left is capped and the rest spread
over the other rounds (`schedule`), so the search spends its calls wherever the grid has cells.
Where the calls give under MIN_FIRST items a variant and round, rounds are merged (`fit_keep`),
down to one round of equal allocation.

Cuts are worth their risk only where they free many calls. A cut on a few items each drops the
true extreme with a fair chance (on 10 templates at 4 items each, most scores are tied at 0 or 1
right); what it buys is more items for the finalists. With many variants that is many times what
equal allocation gives each (320 formats at 2%: 20 items each, the finalists over 300), and equal
allocation has no chance anyway; with few it is little (10 variants in three rounds: 1.7 times),
and equal allocation is already close to what the calls allow. So halving runs its rounds only
where its schedule gives the finalists at least GAIN times the items equal allocation gives every
variant (`worth_cutting`: from 12 variants up with the default KEEP), and is equal allocation,
exactly as ``uniform``, below that: never below uniform by construction where the variants are few,
and by measurement where they are many (docs/performance.md).
The best (worst) is the top (bottom) of the last pool by accuracy on the items the pool shared."""

from __future__ import annotations

import math

import numpy as np

from robusteval.metrics.search.base import Problem, Session, trim
from robusteval.metrics.search.uniform import best_and_worst

KEEP = 4  # each round keeps 1/KEEP of a pool at each end
FIRST_SHARE = 1.0  # the first round's share of the calls, relative to a later round's
GAIN = 2.0  # the finalists' items over equal allocation's below which halving does not cut
MIN_FIRST = 2  # the fewest items per variant and round before rounds are merged


def fit_keep(n_variants: int, calls: int) -> int | None:
    """The share each round keeps: 1/KEEP, or fewer rounds (a larger ``keep``) where equal shares
    would ask each variant fewer than MIN_FIRST items a round (a cut on one answer is a coin
    toss); None where even two rounds cannot: one round, equal allocation, as ``uniform``."""
    keep = KEEP
    while True:
        if calls >= MIN_FIRST * n_variants * len(pool_sizes(n_variants, keep)):
            return keep
        if keep >= n_variants:
            return None
        keep = min(keep * 2, n_variants)


def pool_sizes(n_variants: int, keep: int | None = None) -> list[int]:
    """Each round's pool size at one end: all the variants, then 1/keep of the previous (rounded
    up) down to 2, the last pool from which the one best (worst) is picked."""
    keep = keep or KEEP
    sizes = [n_variants]
    while sizes[-1] > 2:
        sizes.append(max(2, math.ceil(sizes[-1] / keep)))
    return sizes


def schedule(n_variants: int, n_items: int, calls: int, keep: int | None = None) -> list[int]:
    """Items asked of each pool member per round: equal shares of ``calls`` per round (the first
    weighted FIRST_SHARE), capped so that no variant is asked more than ``n_items`` in all, the
    share a capped round cannot spend spread over the rounds that can."""
    sizes = pool_sizes(n_variants, keep)
    arms = np.array([sizes[0]] + [min(2 * s, n_variants) for s in sizes[1:]], dtype=float)
    weight = np.ones(len(sizes))
    weight[0] = FIRST_SHARE
    items = np.zeros(len(sizes))
    for _ in range(len(sizes) + 1):  # water-filling: each pass caps at least one round, or ends
        free = items == 0
        left = calls - float((arms * items).sum())
        if not free.any() or left <= 0:
            break
        share = left * weight * free / float((weight * free).sum())
        proposal = np.where(free, share / arms, items)
        over = np.cumsum(proposal) > n_items
        if not (over & free).any():
            items = proposal
            break
        r = int(np.flatnonzero(over & free)[0])  # the first round the cap binds: give it what is left
        items[r] = max(n_items - float(np.cumsum(proposal)[r - 1]) if r else n_items, 1e-9)
        items[r + 1:] = np.where(free[r + 1:], 0.0, items[r + 1:])
    whole = np.floor(items).astype(int)
    whole[0] = max(whole[0], 1)
    return [int(m) for m in whole]


def worth_cutting(n_variants: int, calls: int, per_round: list[int]) -> bool:
    """Whether the schedule's finalists (asked every round's items) get at least GAIN times the
    items that equal allocation gives every variant."""
    return sum(per_round) >= GAIN * calls / n_variants


class Halving(Session):
    def __init__(self, problem: Problem, keep: int | None = None) -> None:
        super().__init__(problem)
        n_items, n_vars = problem.exists.shape
        self.keep = keep or fit_keep(n_vars, problem.calls)
        if self.keep and not worth_cutting(n_vars, problem.calls, schedule(n_vars, n_items, problem.calls, self.keep)):
            self.keep = None
        self.sizes = pool_sizes(n_vars, self.keep) if self.keep else [n_vars]
        self.per_round = schedule(n_vars, n_items, problem.calls, self.keep) if self.keep else [0]
        self.round = 0
        self.top = np.arange(n_vars)
        self.bottom = np.arange(n_vars)

    def ask(self) -> np.ndarray:
        while self.round < len(self.sizes) and self.calls_left > 0:
            r = self.round
            self.round += 1
            if r > 0:
                self.top = self._cut(self.top, self.sizes[r], highest=True)
                self.bottom = self._cut(self.bottom, self.sizes[r], highest=False)
            if self.keep is None:  # too few calls for two rounds: equal allocation
                return trim(self.equal_cells(self.top, self.problem.calls), self.calls_left)
            m = self.per_round[r]
            if r == len(self.sizes) - 1:  # the last round spends what the earlier ones left
                m = max(m, self.calls_left // max(len(np.union1d(self.top, self.bottom)), 1))
            if r == 0:
                cells = self.next_items(self.top, m)
            else:
                cells = np.concatenate([self.next_items(self.top, m),
                                        self.next_items(np.setdiff1d(self.bottom, self.top), m)])
                if len(np.intersect1d(self.top, self.bottom)):  # the pools overlap: few variants
                    cells = np.unique(np.concatenate([cells, self.next_items(self.bottom, m)]), axis=0)
            if len(cells):
                return trim(cells, self.calls_left)
        return np.empty((0, 2), dtype=int)

    def _scores(self, pool: np.ndarray) -> np.ndarray:
        right, answered = self.counts()
        acc: np.ndarray = right[pool] / np.maximum(answered[pool], 1)
        scores: np.ndarray = acc + 1e-9 * self.tiebreak[pool]
        return scores

    def _cut(self, pool: np.ndarray, size: int, highest: bool) -> np.ndarray:
        order = np.argsort(-self._scores(pool) if highest else self._scores(pool), kind="stable")
        return np.sort(pool[order[:size]])

    def pick(self) -> tuple[int, int]:
        right, answered = self.counts()
        best = best_and_worst(right[self.top], answered[self.top], self.tiebreak[self.top])[0]
        worst = best_and_worst(right[self.bottom], answered[self.bottom], self.tiebreak[self.bottom])[1]
        return int(self.top[best]), int(self.bottom[worst])
