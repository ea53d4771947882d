"""`Estimate`: a figure with its confidence interval, the value every metric returns and every result
record holds.

It sits on the floor, below both `metrics` (which computes it) and `results` (which stores and reads
it), so that reading a run's results, printing or rendering them loads no statistics library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field


@dataclass(frozen=True)
class Estimate:
    """A point value with its confidence interval (None when it cannot be computed)."""

    value: float | None
    low: Annotated[float | None, Field(alias="ci_low")] = None  # in JSON: ci_low / ci_high
    high: Annotated[float | None, Field(alias="ci_high")] = None
    n: int | float = 0  # the number of units (items, or an effective number of cells)

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci_low": self.low, "ci_high": self.high, "n": self.n}
