"""Worked examples before the question: where the shots come from and how they are shown.

Shots come from a dev/validation split, of the same category as the question when it has enough
(else the rest are drawn from other categories, and the count is recorded). Without a dev split
they come from the evaluated set itself, never the question being asked. The pick is seeded per
question, so reruns ask exactly the same requests.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass, field

from robusteval.types import Item, Message


@dataclass(frozen=True)
class ShotPool:
    items: tuple[Item, ...]
    source: str  # where the shots come from, reported in results
    _by_category: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        groups: dict[str | None, list[Item]] = defaultdict(list)
        for it in self.items:
            groups[it.category].append(it)
        self._by_category.update(groups)

    def pick(self, item: Item, k: int, seed: int = 0) -> list[Item]:
        """k shots for ``item``: same category first, never the item itself (by id or text)."""
        rng = random.Random(int(hashlib.sha256(f"{seed}:{item.id}".encode()).hexdigest()[:12], 16))
        ok = lambda s: s.id != item.id and s.question != item.question  # noqa: E731
        same = [s for s in self._by_category.get(item.category, ()) if ok(s)]
        picked = rng.sample(same, min(k, len(same)))
        if len(picked) < k:
            others = [s for s in self.items if ok(s) and s.category != item.category]
            picked += rng.sample(others, min(k - len(picked), len(others)))
        return picked


def fewshot_messages(examples: list[tuple[str, str]], prompt: str, *, multiturn: bool) -> tuple[Message, ...]:
    """Shots as user/assistant turns (chat models), or all in one user message."""
    if multiturn:
        turns = [m for q, a in examples for m in (Message("user", q), Message("assistant", a))]
        return (*turns, Message("user", prompt))
    blocks = [f"{q}\n{a}" for q, a in examples]
    return (Message("user", "\n\n".join([*blocks, prompt])),)
