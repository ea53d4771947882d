"""The typed record of a budgeted best/worst search (``--search best-worst``): which variant of a
family was found best and which worst, from how many calls. results.json holds them under
``search`` (`McqExtra.search`): model -> family -> `SearchResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

from robusteval.estimate import Estimate


@dataclass(frozen=True)
class FoundVariant:
    """A variant the search named: its name, its text where the family has one (a template's, a
    format's strings), and its accuracy on the items it was asked (``n``: how many), with a 95%
    Wilson interval. That accuracy is of the items the search chose to ask and, being the highest
    (lowest) found, leans outward: the winner's curse of any search."""

    name: str
    accuracy: Estimate = field(default_factory=lambda: Estimate(None))
    text: str | None = None


@dataclass(frozen=True)
class SearchResult:
    """One family's search: the best and the worst found, the spread between them (best minus
    worst accuracy, Newcombe's interval from the two Wilson intervals), ``calls`` cells asked of
    ``cells`` (``share``: the share asked for), the method and its seed."""

    method: str
    best: FoundVariant
    worst: FoundVariant
    spread: Estimate
    calls: int
    cells: int
    share: float
    seed: int = 0
    # search_truth only (score GRID --search): every variant's accuracy on the full grid, so the found
    # best and worst can be read on it (empty in a run: the unasked cells are unknown)
    accuracies: dict[str, float] = field(default_factory=dict)


# model -> family -> search
SearchResults = dict[str, dict[str, SearchResult]]
