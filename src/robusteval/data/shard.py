"""Which items a shard runs: ``--shard I/N`` keeps a deterministic 1/N of a run's items.

An item belongs to shard ``I`` when the hash of its id, modulo ``N``, is ``I - 1``. The partition
depends on nothing but the id, so it is the same in every suite and under any ``--limit`` (the
limited, seeded selection is made first, then split): the N shards of one command together ask
exactly the items the unsharded command asks, each once. Shards are near, not exactly, equal in
size (a hash, not a position: a position would move items between shards when the limit changes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from robusteval.errors import UserError

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as written on the command line
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, item_id: str) -> bool:
        digest = hashlib.sha256(item_id.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def select(self, items: Iterable[T], key: Callable[[T], str]) -> list[T]:
        return [item for item in items if self.holds(key(item))]


def parse_shard(text: str | None) -> Shard | None:
    """``"2/4"`` as a `Shard`; None for no sharding. A `UserError` for anything else."""
    if text in (None, ""):
        return None
    index, sep, count = str(text).partition("/")
    try:
        shard = Shard(int(index), int(count))
    except ValueError:
        shard = None
    if not sep or shard is None or not (shard.count >= 1 and 1 <= shard.index <= shard.count):
        raise UserError(f"--shard {text}: give I/N with 1 <= I <= N, e.g. --shard 2/4")
    return shard
