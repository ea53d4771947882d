"""A search's answer as a record: the found best and worst with their accuracies on the items they
were asked, and the spread between them with its interval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robusteval.estimate import Estimate
from robusteval.metrics.search.base import Session
from robusteval.metrics.stats import wilson
from robusteval.results.search import FoundVariant, SearchResult


def found_variant(session: Session, j: int, name: str, text: str | None) -> FoundVariant:
    right, answered = session.counts()
    n = int(answered[j])
    if n == 0:
        return FoundVariant(name, Estimate(None), text)
    p = float(right[j] / n)
    low, high = wilson(p, n)
    return FoundVariant(name, Estimate(p, float(low), float(high), n), text)


def newcombe(best: Estimate, worst: Estimate) -> Estimate:
    """best - worst with Newcombe's hybrid score interval (his method 10) from their Wilson
    intervals: it treats the two as independent, which the paired items make cautious."""
    if best.value is None or worst.value is None or None in (best.low, best.high, worst.low, worst.high):
        return Estimate(None)
    b, w = best.value, worst.value
    bl, bh, wl, wh = float(best.low), float(best.high), float(worst.low), float(worst.high)  # type: ignore[arg-type]
    d = b - w
    return Estimate(d, d - float(np.hypot(b - bl, wh - w)), d + float(np.hypot(bh - b, w - wl)),
                    min(best.n, worst.n))


def summarise(session: Session, method: str, share: float, names: Sequence[str],
              texts: Sequence[str | None] | None = None) -> SearchResult:
    """The finished ``session`` as a `SearchResult` (``names``: the variants' names, ``texts``: their
    texts where the family has them)."""
    best, worst = session.pick()
    b = found_variant(session, best, names[best], texts[best] if texts is not None else None)
    w = found_variant(session, worst, names[worst], texts[worst] if texts is not None else None)
    return SearchResult(method, b, w, newcombe(b.accuracy, w.accuracy), session.calls_used,
                        int(session.exists.sum()), share, session.problem.seed)


def truth(full: np.ndarray, method: str, names: Sequence[str], texts: Sequence[str | None] | None = None,
          ) -> SearchResult:
    """The full grid's own best and worst (every cell asked), for ``score GRID --search`` to show
    beside what the search found."""
    acc = np.nanmean(full, axis=0)
    n = (~np.isnan(full)).sum(axis=0)
    best, worst = int(np.nanargmax(acc)), int(np.nanargmin(acc))

    def variant(j: int) -> FoundVariant:
        return FoundVariant(names[j], Estimate(float(acc[j]), n=int(n[j])), texts[j] if texts is not None else None)

    return SearchResult("exhaustive", variant(best), variant(worst), Estimate(float(acc[best] - acc[worst])),
                        int(n.sum()), int(n.sum()), 1.0,
                        accuracies={name: float(a) for name, a in zip(names, acc) if not np.isnan(a)})
