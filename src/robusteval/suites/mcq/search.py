"""``--search best-worst --calls F``: each model asked only the cells a budgeted search picks
(`metrics.search`), in rounds: every family's session names a batch, the batches are asked together
through the engine, their answers observed, and the sessions name the next. A session chooses from
the answers alone (and its seed), so a rerun asks the same first batch, finds it in the store, and
so reaches the same choices round after round: the run resumes with no state of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from robusteval.metrics.budget import Grid, plan
from robusteval.metrics.search import DEFAULT_METHOD, Problem, Session, calls_of, family_seed, start
from robusteval.metrics.search.summary import summarise
from robusteval.probes.design import Design
from robusteval.probes.formats import example, formats_count
from robusteval.probes.variant_texts import CROSS, EXAMPLE, variant_texts
from robusteval.results.search import SearchResult
from robusteval.suites.mcq.options import Options


@dataclass(frozen=True)
class Searched:
    """One family's search plan: its grid (items, variants, which cells exist), the method, the
    share of cells and the variants' texts where the family has them."""

    grid: Grid
    method: str
    share: float
    texts: list[str | None] | None

    def problem(self, seed: int) -> Problem:
        return Problem(self.grid.exists, calls_of(self.share, self.grid.exists), family_seed(seed, self.grid.family))


def plan_search(options: Options, item_ids: list[str], cells: Iterable[tuple[str, str, str]], seed: int,
                design: Design) -> tuple[dict[str, Searched], dict[str, Any]]:
    """Per family, what the search works on, and what results.json's design says of it."""
    share = options.calls or 1.0
    method = options.search_method or DEFAULT_METHOD
    grids = plan(item_ids, cells, share, seed=seed)
    out = {family: Searched(grid, method, share, _shown_texts(family, grid.variants, design))
           for family, grid in grids.items()}
    return out, {"search": options.search, "search_calls": share, "search_method": method}


def _shown_texts(family: str, variants: tuple[str, ...], design: Design) -> list[str | None] | None:
    """What the search's table shows of each variant: a format's own strings on the example question
    (`probes.formats.example`, as the formats tables show it: the whole prompt would show the
    instruction first, whose label list differs per format), else the family's `variant_texts`."""
    if CROSS not in family and formats_count(family) is not None:
        shown = {f.name: example(f, EXAMPLE.question, EXAMPLE.options) for f in design.formats}
        return [shown.get(v) for v in variants]
    return variant_texts(family, variants, design)


AskCells = Callable[[set[tuple[str, str, str]]], Awaitable[None]]


async def ask_searched(plans: dict[str, Searched], seed: int, ask_cells: AskCells, answered: list[Any],
                       ) -> dict[str, SearchResult]:
    """The searches of every family for one model, round by round: ``ask_cells`` asks a set of
    (item id, family, variant) cells and appends their answers (`budget.Cell`) to ``answered``."""
    sessions = {family: start(p.method, p.problem(seed)) for family, p in plans.items()}
    active = dict(sessions)
    while active:
        batches = {family: s.ask() for family, s in active.items()}
        active = {family: s for family, s in active.items() if len(batches[family])}
        wanted = {(plans[f].grid.item_ids[i], f, plans[f].grid.variants[j])
                  for f in active for i, j in batches[f]}
        seen = len(answered)
        await ask_cells(wanted)
        got = _answers(answered[seen:])
        for family, session in active.items():
            grid = plans[family].grid
            values = [got.get((grid.item_ids[i], family, grid.variants[j]), np.nan) for i, j in batches[family]]
            session.observe(batches[family], np.array(values, dtype=float))
    return {family: _summary(sessions[family], p) for family, p in plans.items()}


def _summary(session: Session, p: Searched) -> SearchResult:
    return summarise(session, p.method, p.share, p.grid.variants, p.texts)


def _answers(cells: Iterable[Any]) -> dict[tuple[str, str, str], float]:
    """(item id, family, variant) -> the mean correctness of its answered samples (a failed one is
    left out; a cell with none answered is absent, and observed as failed)."""
    total: dict[tuple[str, str, str], list[float]] = {}
    for c in cells:
        if c.correct is not None:
            total.setdefault((c.item_id, c.family, str(c.variant)), []).append(float(c.correct))
    return {k: sum(v) / len(v) for k, v in total.items()}
