"""The declared range of a numeric setting, and the one check of a value against it.

Every numeric flag, YAML setting and model-spec option declares the values it may take: a settings
field as ``Annotated[float, Range(0, 10)]`` (read by `config.decode_settings`), a spec option in
`models.spec.NUMERIC_OPTIONS`, a flag of a command without settings (``serve --port``) where it is
parsed. A value outside it, NaN or infinity is one `UserError` naming the flag and the range before
anything runs: a run never starts on ``--temperature 1e308`` or ``timeout=nan``, and no library
deep inside fails on ``--seed -1`` with a traceback.

A leaf module (it imports only `errors`): the settings decoder, the spec parser and the command
line all check through `check`.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any

from robusteval.errors import UserError


@dataclass(frozen=True)
class Range:
    """``low <= value <= high`` (either end may be open, ``low_open``: ``low < value``, or absent:
    None). A float must also be finite; an integer setting takes no float."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    hint: str = ""  # said after the range: what to do instead ("use --all for every item")

    def __str__(self) -> str:
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {_number(self.low)}" if self.low is not None else "any number"
        if self.low is None:
            return f"{'<' if self.high_open else '<='} {_number(self.high)}"
        return (f"{'(' if self.low_open else '['}{_number(self.low)}, {_number(self.high)}"
                f"{')' if self.high_open else ']'}")

    def contains(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)


FINITE = Range()  # any finite number: what a float setting without a declared range must still be


def _number(x: float | None) -> str:
    if isinstance(x, (int, float)) and abs(x) < 1e15 and float(x).is_integer():
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)


def check(flag: str, value: Any, declared: Range, *, sep: str = " ") -> None:
    """Raise a `UserError` naming ``flag`` and ``declared`` unless ``value`` (a number, or None for
    "not given") lies in it. ``sep``: between the flag and the value (``=`` for a spec option)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if not declared.contains(value):
        what = "not a finite number" if isinstance(value, float) and not math.isfinite(value) else "out of range"
        must = "any finite number" if declared == FINITE else f"in {declared}"
        hint = f"; {declared.hint}" if declared.hint else ""
        raise UserError(f"{flag}{sep}{_shown(value)}: {what}; it must be {must}{hint}")


def _shown(value: float) -> str:
    return repr(value) if isinstance(value, float) and not math.isfinite(value) else _number(value)


def declared_range(hint: Any) -> Range | None:
    """The `Range` in an ``Annotated[...]`` type hint (None when there is none)."""
    for extra in getattr(hint, "__metadata__", ()):
        if isinstance(extra, Range):
            return extra
    for arg in typing.get_args(hint):  # Annotated[int, Range(...)] | None
        if (found := declared_range(arg)) is not None:
            return found
    return None
