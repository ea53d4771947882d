"""--shard I/N: a partition of the items by id, the same under any --limit."""

from __future__ import annotations

import pytest

from robusteval.data.shard import Shard, parse_shard
from robusteval.errors import UserError

IDS = [f"q{i}" for i in range(1000)]


def test_the_shards_partition_the_items_each_once():
    shards = [Shard(i, 4) for i in range(1, 5)]
    parts = [s.select(IDS, str) for s in shards]
    assert sorted(x for p in parts for x in p) == sorted(IDS)
    assert all(180 < len(p) < 320 for p in parts)  # near a quarter each (a hash, not positions)


def test_an_items_shard_does_not_depend_on_the_limit_or_order():
    shard = Shard(3, 4)
    full = set(shard.select(IDS, str))
    assert set(shard.select(IDS[:100], str)) == full & set(IDS[:100])
    assert shard.select(list(reversed(IDS)), str) == list(reversed(shard.select(IDS, str)))


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "2/0", "-1/3"])
def test_bad_shards_are_refused(text):
    with pytest.raises(UserError, match="--shard"):
        parse_shard(text)


def test_parse():
    assert parse_shard("2/4") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    assert parse_shard(None) is None and parse_shard("1/1") == Shard(1, 1)
