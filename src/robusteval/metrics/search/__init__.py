"""Budgeted best/worst search: which of a family's variants is the best and which the worst, from a
share of the items x variants grid's cells, chosen round by round from the answers so far.

A method is a `Session` (`base`): `ask` gives the next batch of (item, variant) cells, `observe`
takes their answers, `pick` names the best and the worst; the same problem and answers give the
same batches, so a run that asks through the store resumes (``run --search``) and a known grid
replays the search exactly (`replay`, ``score GRID --search``). A new method is one file here and
a line in METHODS.

- ``uniform`` (`uniform`): equal allocation, every variant asked the same items;
- ``thompson`` (`thompson`): FormatSpread's Thompson sampling, as its paper runs it;
- ``halving`` (`halving`, the default): successive elimination from both ends on paired items.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robusteval.metrics.search.base import Problem, Session, calls_of, family_seed
from robusteval.metrics.search.halving import Halving
from robusteval.metrics.search.thompson import Thompson
from robusteval.metrics.search.uniform import Uniform

METHODS: dict[str, Callable[[Problem], Session]] = {"halving": Halving, "thompson": Thompson, "uniform": Uniform}
DEFAULT_METHOD = "halving"
SEARCHES = ("best-worst",)  # what --search takes


def start(method: str, problem: Problem) -> Session:
    """A new session of ``method`` on ``problem``."""
    return METHODS[method](problem)


@dataclass(frozen=True)
class Found:
    """What a search found: the best and worst variants (column indices), and the calls it used."""

    best: int
    worst: int
    calls: int


def answer_from(full: np.ndarray, session: Session) -> Session:
    """``session`` run to its end, each batch answered from ``full`` (items x variants)."""
    while len(cells := session.ask()):
        session.observe(cells, full[cells[:, 0], cells[:, 1]])
    return session


def replay(full: np.ndarray, method: str, calls: int, seed: int = 0, exists: np.ndarray | None = None) -> Found:
    """The search run on a grid whose every cell is known (``full``: items x variants, 1/0 or a
    mean; NaN: a failed cell): each batch answered from the grid, as a run would from the model."""
    exists = ~np.isnan(full) if exists is None else exists
    session = answer_from(full, start(method, Problem(exists, calls, seed)))
    best, worst = session.pick()
    return Found(best, worst, session.calls_used)


__all__ = ["DEFAULT_METHOD", "METHODS", "SEARCHES", "Found", "Problem", "Session", "answer_from", "calls_of",
           "family_seed", "replay", "start"]
