"""The oracle judge: an LLM rates how similar a set of answers is, 0 (different) to 5 (same).

As in the ELOQUENT robustness task, the oracle sees all answers to one item's variants (``set``
mode) and ends with "Similarity score: N". We also offer ``pairwise`` mode: each pair is rated
alone and the ratings are averaged, which keeps long sets within small context windows and gives
a rating per pair.

Parsing is strict: only a final "Similarity score: N" with N in [0, 5] counts (a range such as
"4-5" or another scale such as "4/10" is no rating). An unparseable
reply is asked again (at temperature 0.7 with a new sample index, so the retry is a new request,
not the cached one); after ``retries`` it is recorded as missing, never as 0.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from robusteval.engine import Engine, gather_all
from robusteval.judges.base import SCALE_MAX, Rating
from robusteval.types import GenParams, Message

# The number, then an optional tail that makes it no rating: a range ("0-5", "4 - 5", "3 to 4",
# "3 or 4") or another scale ("4/10"). Matched rather than excluded, so that a final range is
# caught as the final verdict instead of letting an earlier rating count.
SCORE_RE = re.compile(
    r"similarity\s+score\s*[:=]\s*\**\s*(\d+(?:\.\d+)?)"
    r"(\s*(?:[-\u2010-\u2015~]|\bto\b|\bor\b)\s*\d|\s*/\s*(?!5(?!\.?\d))\d)?",
    re.IGNORECASE)
RETRY_TEMPERATURE = 0.7

SYSTEM = "You are a careful, impartial judge of whether answers say the same thing."
INSTRUCTIONS = (
    "Below are {n} answers a system gave to requests that ask for the same thing, written in different "
    "styles{languages}. Rate how similar the answers are in content, on a scale from 0 (completely "
    "different content) to 5 (the same content). Ignore differences in style, tone, length and "
    "language unless they change what is said.{hint}\n\n{answers}\n\n"
    "End your reply with one line of the form \"Similarity score: N\", where N is a whole number from 0 to 5."
)


def parse_score(text: str | None) -> float | None:
    """The last "Similarity score: N" in ``text``, if N is within 0-5 and not part of a range
    ("0-5" once read as 0) or of another scale; otherwise None, so the judge asks again."""
    if not text:
        return None
    matches = SCORE_RE.findall(text)
    if not matches:
        return None
    number, tail = matches[-1]
    if tail:
        return None
    value = float(number)
    return value if 0 <= value <= SCALE_MAX else None


def oracle_messages(answers: list[str], hint: str | None, languages: tuple[str, ...]) -> tuple[Message, ...]:
    body = "\n\n".join(f"Answer {i + 1}:\n{a.strip()}" for i, a in enumerate(answers))
    prompt = INSTRUCTIONS.format(
        n=len(answers), answers=body,
        languages=" or languages" if len(set(languages)) > 1 else "",
        hint=f" {hint.strip()}" if hint else "")
    return (Message("system", SYSTEM), Message("user", prompt))


class OracleJudge:
    """Rates answer sets with an LLM through the engine (so ratings are cached and resumable)."""

    name = "oracle"

    def __init__(self, engine: Engine, model: str, *, mode: str = "set", retries: int = 3, max_tokens: int = 256):
        self.engine, self.model, self.mode, self.retries = engine, model, mode, retries
        self.params = GenParams(temperature=0.0, max_tokens=max_tokens, seed=0)

    async def rate(self, answers: list[str], hint: str | None, languages: tuple[str, ...]) -> Rating:
        if len(answers) < 2:
            return Rating(None, detail="fewer than two answers")
        if self.mode == "set":
            return await self._rate_once(answers, hint, languages)
        pairs = list(itertools.combinations(range(len(answers)), 2))
        ratings = await gather_all(self._rate_once([answers[i], answers[j]], hint, languages) for i, j in pairs)
        scores = [r.score for r in ratings if r.score is not None]
        detail = "; ".join(f"{i + 1}-{j + 1}: {'missing' if r.score is None else r.score}"
                           for (i, j), r in zip(pairs, ratings))
        return Rating(sum(scores) / len(scores) if scores else None, detail=detail,
                      attempts=sum(r.attempts for r in ratings))

    async def _rate_once(self, answers: list[str], hint: str | None, languages: tuple[str, ...]) -> Rating:
        messages = oracle_messages(answers, hint, languages)
        last = None
        for attempt in range(self.retries + 1):
            # retry k is draw k of the request: the engine sends it with the seed 0 + k
            params = self.params if attempt == 0 else replace(self.params, temperature=RETRY_TEMPERATURE)
            response = await self.engine.chat(self.model, messages, params, sample=attempt)
            last = response.text if response.ok else f"[request failed: {response.error}]"
            score = parse_score(response.text) if response.ok else None
            if score is not None:
                return Rating(score, raw=score, detail=last, attempts=attempt + 1)
        return Rating(None, detail=f"no 'Similarity score: N' after {self.retries + 1} tries; last reply: {last}",
                      attempts=self.retries + 1)
