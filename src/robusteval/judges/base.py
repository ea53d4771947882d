"""What a similarity judge returns for a set of answers, and the protocol every judge follows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

T = TypeVar("T")

SCALE_MAX = 5.0  # ELOQUENT's 0 (different) .. 5 (same content)


@dataclass(frozen=True)
class Rating:
    """A judge's 0-5 score for one set of answers; ``score`` None means missing (never 0)."""

    score: float | None
    raw: float | None = None  # the judge's own quantity before mapping (cosine, entailment prob.)
    detail: str | None = None  # e.g. the oracle's reply, or why the score is missing
    attempts: int = 1


class SimilarityJudge(Protocol):
    name: str

    async def rate(self, answers: list[str], hint: str | None, languages: tuple[str, ...]) -> Rating: ...
