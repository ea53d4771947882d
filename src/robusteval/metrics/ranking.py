"""Ranks that show ties: models whose difference is not significant share a rank.

A leaderboard that orders 0.612 above 0.608 on 200 questions claims a difference the data do not
carry (HELM issue 4336 asks for exactly this). Models are ranked by their value; walking down the
order, a model joins the group of the model that leads the current group when the two cannot be told
apart, and starts a new group (its own position as rank: competition ranking, "1, =1, 3") when they can.

Told apart means: where both were scored item by item on at least `MIN_PAIRED` common items, the paired
permutation test of their mean difference (`metrics.paired`) gives p < 0.05 (not the bootstrap interval,
which is too narrow when only a handful of items differ); otherwise (no per-item values,
other items) their 95% intervals do not overlap, which is conservative: two models whose intervals
overlap slightly may still differ. A model without a value has no rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robusteval.metrics.paired import paired_mean_difference

MIN_PAIRED = 5  # common items needed for a paired comparison
ALPHA = 0.05


@dataclass(frozen=True)
class Entry:
    name: str
    value: float | None
    low: float | None = None
    high: float | None = None
    items: dict[str, float] = field(default_factory=dict)  # item id -> the model's score on it
    higher_is_better: bool = True


@dataclass(frozen=True)
class Rank:
    name: str
    rank: int | None  # None: no value
    tied: bool  # shares its rank with another model
    basis: str  # "paired" or "intervals": how it was told apart from its group's leader (or joined it)


def separable(a: Entry, b: Entry, *, seed: int = 0) -> tuple[bool, str]:
    """Whether ``a`` and ``b`` differ significantly, and on what basis."""
    common = sorted(set(a.items) & set(b.items))
    if len(common) >= MIN_PAIRED:
        x = np.array([a.items[k] for k in common], dtype=float)
        y = np.array([b.items[k] for k in common], dtype=float)
        d = paired_mean_difference(x, y, seed=seed)
        if d.p_value is not None:
            return d.p_value < ALPHA, "paired"
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return False, "intervals"  # no interval: nothing shows a difference
    return (a.low > b.high or b.low > a.high), "intervals"


def tie_ranks(entries: list[Entry], *, seed: int = 0) -> list[Rank]:
    """The rank of each entry (in the order given), with ties for differences that are not significant."""
    valued = [e for e in entries if e.value is not None]
    order = sorted(valued, key=lambda e: -float(e.value or 0) if e.higher_is_better else float(e.value or 0))
    ranks: dict[str, tuple[int, str]] = {}
    group_of: dict[str, int] = {}
    leader: Entry | None = None
    for position, entry in enumerate(order, 1):
        if leader is not None:
            differs, basis = separable(leader, entry, seed=seed)
            if not differs:
                ranks[entry.name] = (ranks[leader.name][0], basis)
                group_of[entry.name] = group_of[leader.name]
                continue
        else:
            basis = ""  # the first: compared with nobody
        leader = entry
        ranks[entry.name] = (position, basis)
        group_of[entry.name] = position
    sizes: dict[int, int] = {}
    for g in group_of.values():
        sizes[g] = sizes.get(g, 0) + 1
    return [Rank(e.name, ranks[e.name][0], sizes[group_of[e.name]] > 1, ranks[e.name][1]) if e.name in ranks
            else Rank(e.name, None, False, "") for e in entries]
