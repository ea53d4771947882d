"""The one JSON encoder and decoder of result records.

Records are plain frozen dataclasses; pydantic reads their type hints, so a record needs no
serialisation code of its own: ``encode(record)`` gives JSON-able data (field aliases such as an
`Estimate`'s ``ci_low`` applied), ``decode(Type, data)`` checks and converts it back (a number
written as ``"2"`` becomes 2; a value of the wrong kind raises `RecordError` naming the field).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

T = TypeVar("T")


class RecordError(ValueError):
    """Data that does not fit the record type: the message names the field and what was wrong;
    ``problems`` lists them one by one (pydantic's error dicts: ``loc``, ``type``, ``msg``, ``input``)."""

    def __init__(self, message: str, problems: list[Any] | None = None):
        super().__init__(message)
        self.problems = problems or []


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(cls: Any) -> TypeAdapter[Any]:
    """One adapter per type (building one reads every nested type hint: milliseconds)."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def encode(record: Any) -> Any:
    """``record`` (a dataclass, or lists/dicts of them) as JSON-able data."""
    return _adapter(type(record)).dump_python(record, mode="json", by_alias=True)


def decode(cls: type[T], data: Any) -> T:
    """``data`` (parsed JSON or YAML) as a ``cls``; raises `RecordError` with every problem found."""
    try:
        return _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise RecordError(describe(exc), exc.errors(include_url=False)) from None


def describe(exc: ValidationError) -> str:
    """Pydantic's errors as one line per field: ``turns: expected an integer, got 'two'``."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{where}: {err['msg'].lower()}, got {err.get('input')!r}")
    return "; ".join(parts)
