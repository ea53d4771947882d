"""Ranks with ties: paired where items are shared, by intervals otherwise."""

from __future__ import annotations

import random

from robusteval.metrics.ranking import Entry, tie_ranks


def _items(rate: float, n: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"q{i}": float(rng.random() < rate) for i in range(n)}


def test_inseparable_models_share_a_rank_and_a_clear_winner_does_not():
    a = _items(0.9, 300, 1)
    b = dict(a)  # b differs from a on 3 of 300 questions: not significant
    for k in ("q0", "q1", "q2"):
        b[k] = 1.0 - b[k]
    c = _items(0.3, 300, 2)
    entries = [Entry(name, sum(v.values()) / len(v), items=v) for name, v in (("c", c), ("b", b), ("a", a))]
    ranks = {r.name: r for r in tie_ranks(entries)}
    top = sorted(["a", "b"], key=lambda n: -next(e.value for e in entries if e.name == n))
    assert ranks[top[0]].rank == ranks[top[1]].rank == 1 and ranks["a"].tied and ranks["b"].tied
    assert ranks["c"].rank == 3 and not ranks["c"].tied  # competition ranking: 1, =1, 3
    assert ranks[top[1]].basis == ranks["c"].basis == "paired"


def test_intervals_decide_without_per_item_values():
    ranks = tie_ranks([Entry("x", 0.80, 0.75, 0.85), Entry("y", 0.78, 0.73, 0.83), Entry("z", 0.50, 0.45, 0.55),
                       Entry("none", None)])
    assert [(r.name, r.rank, r.tied) for r in ranks] == [("x", 1, True), ("y", 1, True), ("z", 3, False),
                                                         ("none", None, False)]
    assert ranks[1].basis == ranks[2].basis == "intervals"


def test_lower_is_better_and_a_chain_is_judged_against_the_groups_leader():
    # y overlaps x, z overlaps y but not x: z starts a new group (ties are not transitive)
    ranks = tie_ranks([Entry("x", 0.10, 0.08, 0.12, higher_is_better=False),
                       Entry("y", 0.13, 0.11, 0.15, higher_is_better=False),
                       Entry("z", 0.16, 0.14, 0.18, higher_is_better=False)])
    assert [(r.rank, r.tied) for r in ranks] == [(1, True), (1, True), (3, False)]
