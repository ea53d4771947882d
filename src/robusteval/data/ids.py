"""An item id is unique in its dataset: the one check every loader that takes ids from a file runs.

The id is what keeps items apart everywhere after loading: the samples, the groups a consistency
rate is computed over, the bootstrap's clusters, ``--shard``'s partition, ``compare``. Two different
rows under one id would be merged into one item without a word, so they are refused, naming both
rows, unless a rule says otherwise (``--duplicate-ids``):

- ``error`` (the default): one message naming the id and both rows;
- ``first``: the first row of each id is kept, the later ones are left out and counted in the audit;
- ``rename``: the later rows are kept under ``ID~2``, ``ID~3``... and counted in the audit.

A row that repeats an earlier row exactly, its id included, is one item given twice: whatever the
rule, the repeat is left out and counted (asking it twice would count one question twice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from robusteval.data.audit import SourceAudit
from robusteval.errors import UserError


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_Identified)

ID_RULES = ("error", "first", "rename")
DEFAULT_ID_RULE = "error"
SAME_ROW = "same id and content as an earlier row: one item, the repeat left out"
LATER_ROW = "an id already given to another row: left out (--duplicate-ids first)"
RENAMED = "an id already given to another row: kept under ID~N (--duplicate-ids rename)"


def unique_ids(items: Iterable[T], source: str, *, rule: str = DEFAULT_ID_RULE, audit: SourceAudit | None = None,
               where: str | Callable[[T], str] = "source", flag: bool = False) -> list[T]:
    """``items`` (frozen dataclasses with an ``id``) with one row per id, by ``rule`` (`ID_RULES`);
    what was left out or renamed is counted in ``audit``. ``where`` names the row of an item (e.g.
    ``file.jsonl:5``): the name of its field that says so, or a function of the item where it has no
    such field. ``error`` raises a `UserError` naming the id and both rows; ``flag``: the command
    has ``--duplicate-ids``, which the message then offers."""
    if rule not in ID_RULES:
        raise UserError(f"--duplicate-ids {rule}: expected one of {', '.join(ID_RULES)}")
    first: dict[str, Any] = {}  # id -> the row that holds it (renamed rows under their new id)
    out: list[T] = []
    for item in items:
        item_id = str(item.id)
        earlier = first.get(item_id)
        if earlier is None:
            first[item_id] = item
            out.append(item)
            continue
        here = _line(_where(item, where))
        if _content(item, where) == _content(earlier, where):
            _count(audit, SAME_ROW, here)
        elif rule == "error":
            choose = ", or choose --duplicate-ids first (keep the first row) or rename (keep both)" if flag else ""
            raise UserError(f"{source}: id {item_id!r} names two different rows "
                            f"({_line(_where(earlier, where))} and {here}); give each item its own "
                            f"id{choose}")
        elif rule == "first":
            _count(audit, LATER_ROW, here)
        else:
            n = 2
            while f"{item_id}~{n}" in first:
                n += 1
            renamed = replace(item, id=f"{item_id}~{n}")  # type: ignore[type-var]
            first[renamed.id] = renamed
            out.append(renamed)
            if audit is not None:
                audit.anomaly(RENAMED, here)
    return out


def _line(where: str) -> str:
    """"line 5" for "path/of/the/file.jsonl:5" (the message names the source already); other
    places ("item 3", "file.json line 7") as they are."""
    tail = where.rpartition(":")[2]
    return f"line {tail}" if tail.isdigit() else where


def _where(item: Any, where: str | Callable[[Any], str]) -> str:
    return str(where(item) if callable(where) else getattr(item, where))


def _content(item: Any, where: str | Callable[[Any], str]) -> Any:
    """The item without where it was read: two rows are the same item when this is equal."""
    return item if callable(where) else replace(item, **{where: ""})


def _count(audit: SourceAudit | None, reason: str, where: str) -> None:
    if audit is not None:
        audit.leave_out(reason, where)
