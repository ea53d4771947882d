"""The NLI model as HalluciGen used it: a judge of generated hypotheses and a detection baseline.

Entailment is scored from the source (premise) to a hypothesis. Two classes are compared,
entailment against not-entailment (every other label), so a hypothesis is *entailed* when
P(entailment) >= 0.5 (for a three-way head, when it outweighs neutral + contradiction together).
"""

from __future__ import annotations

THRESHOLD = 0.5


def entailed(p_entailment: float) -> bool:
    return p_entailment >= THRESHOLD


def nli_detect(p1: float, p2: float) -> str:
    """Which hypothesis is hallucinated, from P(entailment) of source→hyp1 and source→hyp2.

    The task's three rules: one entailed and one not → the not-entailed one; both entailed → the
    one with the lower entailment; both not entailed → the one with the higher non-entailment
    (1 − P(entailment)). An exact tie (equal scores) goes to hyp2.
    """
    e1, e2 = entailed(p1), entailed(p2)
    if e1 != e2:
        return "hyp2" if e1 else "hyp1"
    if e1:
        return "hyp1" if p1 < p2 else "hyp2"
    return "hyp1" if (1 - p1) > (1 - p2) else "hyp2"


__all__ = ["THRESHOLD", "entailed", "nli_detect"]
