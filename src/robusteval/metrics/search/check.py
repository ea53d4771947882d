"""``score GRID --search``: the search replayed on a grid whose every cell is known, each batch
answered from the grid as a run's would be from the model, beside the grid's own best and worst."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from robusteval.metrics.budget import observed_grid, plan
from robusteval.metrics.search import Problem, answer_from, calls_of, family_seed, start
from robusteval.metrics.search.summary import summarise, truth
from robusteval.results.search import SearchResult

TextsOf = Callable[[str, tuple[str, ...]], Sequence[str | None] | None]  # (family, variants) -> texts


def no_texts(family: str, variants: tuple[str, ...]) -> None:
    return None


def search_grid(cells: Iterable[tuple[str, str, str, float]], share: float, method: str, seed: int = 0,
                texts: TextsOf = no_texts) -> dict[str, tuple[SearchResult, SearchResult]]:
    """Per family of ``cells`` (item id, family, variant name, correct in [0, 1]): what ``run
    --search best-worst --calls SHARE --seed SEED`` would have found, and the full grid's truth.
    A cell given twice counts as the mean of its values."""
    listed = list(cells)
    item_ids = list(dict.fromkeys(c[0] for c in listed))
    out = {}
    for family, grid in plan(item_ids, ((i, f, v) for i, f, v, _ in listed), share, seed=seed).items():
        full = observed_grid(grid, ((i, v, y) for i, f, v, y in listed if f == family))
        session = answer_from(full, start(method, Problem(grid.exists, calls_of(share, grid.exists),
                                                           family_seed(seed, family))))
        family_texts = texts(family, grid.variants)
        out[family] = (summarise(session, method, share, grid.variants, family_texts),
                       truth(np.where(grid.exists, full, np.nan), method, grid.variants, family_texts))
    return out
