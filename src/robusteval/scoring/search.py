"""``score GRID --search best-worst --calls F [--method NAME]``: the budgeted best/worst search
replayed on a known grid (`metrics.search.check`), per model and family, under results.json's
``search`` as ``run --search`` writes it, and the full grid's own best and worst under
``search_truth``."""

from __future__ import annotations

from typing import Any

from robusteval.errors import UserError
from robusteval.metrics.search import DEFAULT_METHOD, METHODS, SEARCHES
from robusteval.metrics.search.check import search_grid
from robusteval.results.search import SearchResults


def check_search(search: str | None, calls: float | None, method: str | None, kind: str) -> None:
    """The flags checked before any file is scored: one message for each mistake."""
    if search is None:
        if calls is not None or method is not None:
            raise UserError("score: --calls and --method apply with --search best-worst")
        return
    if search not in SEARCHES:
        raise UserError(f"score: --search {search!r}: one of {', '.join(SEARCHES)}")
    if kind != "grid":
        raise UserError("score: --search replays the search on a correctness grid (every cell known), not on replies")
    if calls is None:
        raise UserError("score: --search needs --calls F, the share of the grid's cells it may ask (e.g. 0.125)")
    if method is not None and method not in METHODS:
        raise UserError(f"score: --method {method!r}: one of {', '.join(METHODS)}")


def search_design(search: str, calls: float | None, method: str | None) -> dict[str, Any]:
    """What results.json's design says of a search."""
    return {"search": search, "search_calls": calls, "search_method": method or DEFAULT_METHOD}


def search_check(samples: list[Any], calls: float, seed: int, method: str | None,
                 texts: dict[str, str] | None = None) -> tuple[SearchResults, SearchResults]:
    """Per model and family, what ``run --search best-worst --calls F --seed S`` would have found
    (``texts``: variant -> text, from --variant-texts), and the full grid's best and worst: McqExtra's
    ``search`` and ``search_truth``."""
    name = method or DEFAULT_METHOD

    def texts_of(family: str, variants: tuple[str, ...]) -> list[str | None] | None:
        return None if texts is None else [texts.get(v) for v in variants]

    found: SearchResults = {}
    truths: SearchResults = {}
    for model in dict.fromkeys(s.model for s in samples):
        cells = [(s.item_id, s.family, str(s.variant), float(s.correct)) for s in samples
                 if s.model == model and s.correct is not None]
        checked = search_grid(cells, calls, name, seed=seed, texts=texts_of)
        found[model] = {family: f for family, (f, _) in checked.items()}
        truths[model] = {family: t for family, (_, t) in checked.items()}
    return found, truths
