"""CircularEval (OpenCompass): a question asked under every cyclic rotation of its options counts
as right only when every rotation is answered right. Beside it, "at least j of n" (OpenCompass's
``more_{j}``) and the per-rotation accuracy (the family's per-variant accuracy).

The unit is the question, so each figure is a share of questions with Wilson's interval (one
0/1 cell per question, `metrics.stats.proportion`). A question counts only when every one of its
rotations was answered (a failed request leaves it out, rather than judging it on fewer
rotations); a rotation asked several times (``--samples``) counts as right when all its replies are.
Questions with different numbers of options have different n: "at least j" is given per n.
"""

from __future__ import annotations

import numpy as np

from robusteval.metrics.stats import proportion
from robusteval.results.mcq import CircularMetrics

CIRCULAR = "circular"  # the design family (`probes.design`)


def circular_metrics(correct: np.ndarray, width: np.ndarray) -> CircularMetrics:
    """``correct``: items x rotations (the share of a cell's replies that were right; NaN where not
    asked or failed); ``width``: each item's number of options (its number of rotations)."""
    answered = (~np.isnan(correct)).sum(axis=1)
    right = (np.nan_to_num(correct) >= 1).sum(axis=1)
    complete = (answered == width) & (width > 0)
    at_least = {}
    for n in sorted({int(w) for w in width[complete]}):
        rows = complete & (width == n)  # only these questions enter: each estimate's n is theirs
        for j in range(1, n):
            at_least[f"{j}/{n}"] = proportion(right[rows] >= j, np.ones(int(rows.sum())))
    return CircularMetrics(accuracy=proportion((right == width)[complete], np.ones(int(complete.sum()))),
                           at_least=at_least, questions=int(complete.sum()),
                           incomplete=int(((answered > 0) & ~complete).sum()))
