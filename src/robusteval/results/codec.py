"""The one JSON encoder and decoder of result records.

Records are plain frozen dataclasses; pydantic reads their type hints, so a record needs no
serialisation code of its own: ``encode(record, Type)`` gives JSON-able data written by the
*declared* type (field aliases such as an `Estimate`'s ``ci_low`` applied, at any depth),
``decode(Type, data)`` checks and converts it back (a number written as ``"2"`` becomes 2; a value
of the wrong kind raises `RecordError` naming the field).

The one rule for None: it is written as ``null``, except in a field declared `OmitNone[X]` (a
measure only some runs have: a RAG mode's recall, a sensitivity over valid replies only), which is
left out when None; reading, a missing key is the field's default. A record round-trips:
``decode(Type, encode(record, Type)) == record``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import Field, TypeAdapter, ValidationError

T = TypeVar("T")


def _is_none(value: object) -> bool:
    return value is None


# ``OmitNone[Estimate]`` is ``Estimate | None`` to a type checker; the codec leaves the key out when None
OmitNone = Annotated[T | None, Field(exclude_if=_is_none)]


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


def encode(record: Any, kind: Any = None) -> Any:
    """``record`` as JSON-able data, written by its declared type ``kind`` (default: its own class).

    A dict, list or tuple needs ``kind`` (``dict[str, FamilyMetrics]``): its runtime type does not
    say what its items are, and records encoded from it would lose their aliases and their
    `OmitNone` rule (``low`` instead of ``ci_low``)."""
    if kind is None:
        if isinstance(record, dict | list | tuple):
            raise TypeError(f"encode: a {type(record).__name__} needs its declared type (encode(value, kind))")
        kind = type(record)
    return _adapter(kind).dump_python(record, mode="json", by_alias=True)


def decode(cls: type[T], data: Any) -> T:
    """``data`` (parsed JSON or YAML) as a ``cls``; raises `RecordError` with every problem found."""
    try:
        decoded: T = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise RecordError(describe(exc), exc.errors(include_url=False)) from None
    return decoded


def describe(exc: ValidationError) -> str:
    """Pydantic's errors as one line per field: ``turns: expected an integer, got 'two'``."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{where}: {err['msg'].lower()}, got {err.get('input')!r}")
    return "; ".join(parts)
