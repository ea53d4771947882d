"""Read a questionnaire answer to a point of the response scale (or invalid).

Small models answer "C", "(c)", "**D. Somewhat like me**", "My answer: E", "Like me.", write
"A: ..." meaning "Answer: ..." (SmolLM2 does), or repeat the whole list. We accept a reply when
every clue in it points to one option: the option letters (in answer-like positions, not the
article "A"), the option texts (longest first, so "Not like me at all" is not also read as
"Like me"), or a leading number. Clues that disagree, or none, make
the answer invalid; invalid answers are kept and left out of the scores, never guessed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from robusteval.labels import LETTERS


@dataclass(frozen=True)
class ScaleAnswer:
    """``index``: 0-based point of the scale (lowest first), or None."""

    index: int | None
    status: str  # ok | invalid | failed
    clue: str = ""  # what decided it: letter | text | number | ""


_MARKUP = re.compile(r"[*_`#>]+")


def read_scale(text: str | None, scale: tuple[str, ...]) -> ScaleAnswer:
    if text is None:
        return ScaleAnswer(None, "failed")
    clean = _MARKUP.sub(" ", text).strip()
    if not clean:
        return ScaleAnswer(None, "invalid")
    letters = LETTERS[: len(scale)]
    masked, by_text = _option_texts(clean, scale)
    listed = {m.upper() for m in re.findall(rf"(?m)^\s*([{letters}])[.)]", clean, re.IGNORECASE)}
    if len(listed) > 1:
        return ScaleAnswer(None, "invalid")  # the options echoed back, not a choice
    lead = _leading_letter(clean, letters)
    by_letter = _letters(masked, letters)
    if lead is not None:
        prefix = re.match(r"^[\s\"'(\[]*A:\s*(\S.*)", clean, re.DOTALL)
        if lead == 0 and prefix:  # "A: ..." is how small models write "Answer: ...": read what follows
            return read_scale(prefix.group(1), scale)
        if by_text and by_text != {lead}:
            return ScaleAnswer(None, "invalid")  # "D. Very much like me": letter and text disagree
        return ScaleAnswer(lead, "ok", "letter")
    if len(by_letter) > 1 or len(by_text) > 1:
        return ScaleAnswer(None, "invalid")
    if by_letter and by_text and by_letter != by_text:
        return ScaleAnswer(None, "invalid")
    if by_letter:
        return ScaleAnswer(by_letter.pop(), "ok", "letter")
    if by_text:
        return ScaleAnswer(by_text.pop(), "ok", "text")
    number = re.match(r"^\W*(\d+)\b", clean)
    if number and 1 <= int(number.group(1)) <= len(scale):
        return ScaleAnswer(int(number.group(1)) - 1, "ok", "number")
    return ScaleAnswer(None, "invalid")


def _option_texts(text: str, scale: tuple[str, ...]) -> tuple[str, set[int]]:
    """Options named by their text (longest first), and the text with those mentions blanked."""
    found = set()
    for index in sorted(range(len(scale)), key=lambda i: -len(scale[i])):
        pattern = re.compile(r"(?<![A-Za-z])" + re.escape(scale[index]) + r"(?![A-Za-z])", re.IGNORECASE)
        if pattern.search(text):
            found.add(index)
            text = pattern.sub(" ", text)
    return text, found


def _leading_letter(text: str, letters: str) -> int | None:
    """A reply that starts with an option letter standing alone: "C", "(c)", "D.", "E -", "B: Not like me"."""
    m = re.match(r"^[\s\"'(\[]*([A-Za-z])(?:[.):\]\"']|\s*-|\s*$|\s*\n|\s+(?=[A-Z]))", text)
    if not m:
        return None
    letter = m.group(1)
    if letter.upper() not in letters:
        return None
    if letter.islower() and letter not in ("a", "b", "c", "d", "e", "f", "g", "h", "i"):
        return None
    if letter == "A" and re.match(r"^[\s\"'(\[]*A\s+[a-z]", text):
        return None  # the article: "A little like me", "A good question"
    if letter in ("a", "i") and re.match(r"^[\s\"'(\[]*[ai]\s", text):
        return None  # "a", "i" as words
    return letters.index(letter.upper())


def _letters(text: str, letters: str) -> set[int]:
    """Letters in answer-like positions anywhere: "answer: C", "option d", "(E)", "is B."."""
    found: set[int] = set()
    cls = f"[{letters}{letters.lower()}]"
    patterns = (
        rf"\b(?:answer|option|choice|choose|pick|select|letter)(?:\s+is)?\s*[:=\-]?\s*\(?({cls})\b",
        rf"\(({cls})\)",
        rf"\bis\s+({letters[:len(letters)]})\b(?!\s+[a-z])",
        rf"(?:^|\n)\s*({cls})\s*$",
        rf"\b([{letters}])\s*(?:or|and|/)\s*\(?([{letters}])\b",  # "C or D": both count, so it is ambiguous
    )
    for pattern in patterns:
        for m in re.finditer(pattern, text, re.IGNORECASE if pattern is patterns[0] else 0):
            found.update(letters.index(g.upper()) for g in m.groups())
    return found


__all__ = ["ScaleAnswer", "read_scale"]


@dataclass(frozen=True)
class ScaleDistribution:
    """The model's probabilities over the scale points, read from its first answer token.

    ``probs`` are renormalised over the scale letters (lowest point first); ``mass`` is how much of
    the token distribution the letters held before renormalising (low mass: the model mostly wanted
    to say something else, worth reporting)."""

    probs: tuple[float, ...] | None
    mass: float
    status: str  # ok | invalid | failed

    @property
    def argmax(self) -> int | None:
        return None if self.probs is None else max(range(len(self.probs)), key=self.probs.__getitem__)

    @property
    def expected(self) -> float | None:
        """Probability-weighted point on a 1..n scale."""
        return None if self.probs is None else sum((i + 1) * p for i, p in enumerate(self.probs))


def read_scale_logprobs(top: tuple[tuple[str, float], ...] | None, n_points: int) -> ScaleDistribution:
    """Sum the probability of every top token that is a scale letter (" C", "C", "(c" are all C).

    Why letters only: after an "Answer:" prefill the next token is the choice; option texts span
    several tokens and cannot be scored from one distribution. No letter among the top tokens is an
    invalid answer, as in generation."""
    if top is None:
        return ScaleDistribution(None, 0.0, "failed")
    letters = LETTERS[:n_points]
    mass = [0.0] * n_points
    for token, logprob in top:
        t = token.strip().strip("(\"'*").upper()
        if len(t) == 1 and t in letters:
            mass[letters.index(t)] += math.exp(logprob)
    total = sum(mass)
    if total <= 0:
        return ScaleDistribution(None, 0.0, "invalid")
    return ScaleDistribution(tuple(m / total for m in mass), total, "ok")
