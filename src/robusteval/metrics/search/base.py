"""The search's shared parts: what a method is told (`Problem`), the session every method is (ask a
batch of cells, observe their answers, pick), and the bookkeeping they share (`Cells`).

A session is deterministic: the same problem and the same answers give the same batches. That is
what makes ``run --search`` resumable: a rerun asks the same first batch, finds it in the store,
observes the same answers, and so asks the same second batch, and so on, with no state written
anywhere but the store's answers."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """One family's items x variants grid to search: which cells exist (a 3-option question has no
    ``gold@D``), the most cells the search may ask (``calls``), and its seed."""

    exists: np.ndarray
    calls: int
    seed: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return self.exists.shape


def calls_of(share: float, exists: np.ndarray) -> int:
    """The cells a share of the grid buys (at least one, at most those that exist)."""
    return int(min(int(exists.sum()), max(1, round(share * exists.size))))


def family_seed(seed: int, family: str) -> int:
    """A family's seed: stable across processes (crc32, not Python's salted hash)."""
    return zlib.crc32(f"search:{seed}:{family}".encode())


class Session:
    """What every method shares: the answers so far (``right``: 1/0, NaN where not asked or the
    request failed), which cells were asked, and the calls left. Subclasses choose (`ask`) and pick
    (`pick`); `observe` records what was asked, whatever the method."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.exists = problem.exists.astype(bool)
        self.asked = np.zeros(problem.exists.shape, dtype=bool)
        self.right = np.full(problem.exists.shape, np.nan)
        self.right_sum = np.zeros(problem.exists.shape[1])  # per variant, kept as answers come
        self.answered = np.zeros(problem.exists.shape[1])
        self.n_asked = 0
        self.rng = np.random.default_rng(problem.seed)
        # every method walks the items in one seeded order, the same for every variant, so the
        # variants it compares were asked the same questions (their difficulty cancels)
        self.item_order = self.rng.permutation(problem.exists.shape[0])
        # a tie between variants is broken by a seeded draw, the same on a rerun
        self.tiebreak: np.ndarray = np.asarray(self.rng.random(problem.exists.shape[1]))

    @property
    def calls_used(self) -> int:
        return self.n_asked

    @property
    def calls_left(self) -> int:
        return self.problem.calls - self.calls_used

    def observe(self, cells: np.ndarray, values: np.ndarray) -> None:
        """Record the answers to ``cells`` (k x 2: item, variant): 1/0 (or a mean over samples),
        NaN for a failed request, which is counted as a call spent and not as an answer."""
        cells = np.asarray(cells, dtype=int).reshape(-1, 2)
        new = ~self.asked[cells[:, 0], cells[:, 1]]  # a cell observed twice counts once
        cells, values = cells[new], np.asarray(values, dtype=float).reshape(-1)[new]
        self.asked[cells[:, 0], cells[:, 1]] = True
        self.n_asked = int(self.asked.sum())
        self.right[cells[:, 0], cells[:, 1]] = values
        seen = ~np.isnan(values)
        np.add.at(self.right_sum, cells[seen, 1], values[seen])
        np.add.at(self.answered, cells[seen, 1], 1)

    def ask(self) -> np.ndarray:
        """The next batch of cells (k x 2: item, variant); empty when the search is done."""
        raise NotImplementedError

    def pick(self) -> tuple[int, int]:
        """The variants found best and worst (column indices)."""
        raise NotImplementedError

    def next_items(self, variants: np.ndarray, k: int) -> np.ndarray:
        """Up to ``k`` cells for each of ``variants``: the first items in the seeded order that every
        one of them can still be asked (the same items for all, so their answers are paired), then,
        where those run out, each variant's own next items."""
        variants = np.asarray(variants, dtype=int)
        if k <= 0 or len(variants) == 0:
            return np.empty((0, 2), dtype=int)
        free = (self.exists[:, variants] & ~self.asked[:, variants])[self.item_order]  # ordered items x variants
        shared = np.flatnonzero(free.all(axis=1))[:k]
        out = [np.column_stack([np.repeat(self.item_order[shared], len(variants)),
                                np.tile(variants, len(shared))])]
        if len(shared) < k:
            free[shared] = False
            for col, j in enumerate(variants):
                rows = np.flatnonzero(free[:, col])[: k - len(shared)]
                out.append(np.column_stack([self.item_order[rows], np.full(len(rows), j)]))
        return np.concatenate(out).astype(int)

    def equal_cells(self, variants: np.ndarray, calls: int) -> np.ndarray:
        """``calls`` cells spread evenly over ``variants``: each its first ``calls // len`` items in
        the seeded order, and the remainder one more item each for a seeded sample of them."""
        k, extra = divmod(calls, len(variants))
        more = np.zeros(len(variants), dtype=bool)
        more[self.rng.permutation(len(variants))[:extra]] = True
        return np.concatenate([self.next_items(variants[more], k + 1), self.next_items(variants[~more], k)])

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per variant: right answers and answered cells."""
        return self.right_sum, self.answered


def trim(cells: np.ndarray, calls_left: int) -> np.ndarray:
    """A batch cut to the calls left (the budget is never exceeded)."""
    return cells[: max(0, calls_left)]
