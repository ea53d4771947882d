"""Read the final answer of an open-answer math reply (GSM8K, MATH) and decide whether it equals the gold.

Models end a worked solution in many ways: ``\\boxed{...}`` (MATH, most chat models), "The final
answer is X" (Minerva, SCORE's prompts), "#### X" (GSM8K's own format, which small models copy),
"So the answer is X" (GSM8K chain-of-thought few-shot), or with nothing at all. The rules are tried
in that order, and the last occurrence of the first rule that matches wins (a model that restates
its answer means the restatement); only a reply with none of them falls back to its last number,
as lm-evaluation-harness's "flexible-extract" does. `MathAnswer.rule` records which rule found
the answer, so that a report can say how many answers were guessed from a last number.

After a marker the answer is the first math in its sentence: the last ``$...$`` span if there is
one, else what follows the last "=" (the small models' "The final answer is 1890 + 800 = 2690 cups
of feed"), then a leading number without its unit words ("4 bolts of white fiber" -> 4).

Normalisation makes equal answers compare equal: LaTeX wrappers (``\\text{}``, ``\\left``/``\\right``,
``\\dfrac``, ``$``, ``\\(`` ``\\)``), units and currency, thousands separators (only in groups of three
digits: "1,5" and "(3, 4)" keep their comma), a trailing ".", percent and degree signs, "x = 5" to
"5". A pure number (integer, decimal, a/b, ``\\frac{a}{b}``, with a sign) becomes an exact fraction,
so 0.5, 1/2 and \\frac{1}{2} are one answer while 0.33 and 1/3 stay apart (a rounding is not the
answer). Anything else is compared as normalised text, without spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from robusteval.data.math_answers import last_boxed

Rule = str  # "boxed" | "final-answer" | "hashes" | "answer-is" | "last-number"


@dataclass(frozen=True)
class MathAnswer:
    """What a reader made of a reply: the answer as written (``text``), its normalised form (what is
    compared), ``status`` ok | invalid (no answer found; kept, counted wrong) | failed (no reply),
    and the ``rule`` that found it."""

    text: str | None
    normalized: str | None
    status: str
    rule: Rule | None = None

    @property
    def number(self) -> Fraction | None:
        """The answer as an exact number, when it is one."""
        return _as_number(self.normalized) if self.normalized is not None else None


_FINAL = re.compile(r"final\s+answer\s*(?:is|:)\s*:?", re.IGNORECASE)
_HASHES = re.compile(r"####\s*")
_ANSWER_IS = re.compile(r"\banswer\s+is\s*:?", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[-−]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?![\d/])|(?<![\w.])[-−]?\.\d+")


def read_math(text: str | None) -> MathAnswer:
    """The final answer of a reply (see the module docstring for the rules), normalised."""
    if text is None:
        return MathAnswer(None, None, "failed")
    boxed = last_boxed(text)
    if boxed is not None:
        return _answer(boxed, "boxed")
    for rule, marker in (("final-answer", _FINAL), ("hashes", _HASHES), ("answer-is", _ANSWER_IS)):
        matches = list(marker.finditer(text))
        for m in reversed(matches):  # the last statement first; an empty one gives way to an earlier one
            found = _after_marker(text[m.end():], whole_line=rule == "hashes")
            if found:
                return _answer(found, rule)
    numbers = _NUMBER.findall(text)
    if numbers:
        return _answer(numbers[-1], "last-number")
    return MathAnswer(None, None, "invalid")


def is_equivalent(pred: MathAnswer | str | None, gold: MathAnswer | str) -> bool:
    """Whether a predicted answer equals the gold. Strings are final answers (not replies) and are
    normalised; an invalid or failed prediction is never equivalent."""
    p = pred if isinstance(pred, MathAnswer) or pred is None else _answer(pred, None)
    g = gold if isinstance(gold, MathAnswer) else _answer(gold, None)
    if p is None or p.status != "ok" or g.status != "ok":
        return False
    return p.normalized == g.normalized


def normalize(answer: str) -> str:
    """The comparable form of a final answer (module docstring): a canonical fraction for a number,
    else the cleaned LaTeX without spaces."""
    s = answer.strip()
    s = s.replace("−", "-").replace("\\!", "").replace("\\,", "").replace("\\;", "").replace("\\:", "")
    s = re.sub(r"\\(?:left|right)(?![a-zA-Z])", "", s)
    s = re.sub(r"\\displaystyle", "", s)
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = re.sub(r"^\\\(|\\\)$|^\\\[|\\\]$", "", s).strip()
    s = s.strip("$").strip()
    # a trailing \text{ unit} (its content starts with a space), squared or not, is a unit: dropped
    s = re.sub(r"\\(?:text|mbox|mathrm)\{\s+[^{}]*\}(?:\^\{?\d\}?)?\s*$", "", s).strip()
    s = re.sub(r"\\(?:text|textbf|mathrm|mbox|mathbf)\s*\{([^{}]*)\}", r"\1", s)
    s = s.replace("\\$", "").replace("$", "")
    s = re.sub(r"\\?%|\^\s*\{?\\circ\}?|°", "", s)
    s = re.sub(r"\s+", " ", s).strip().rstrip(".").strip()
    # "x = 5" -> "5": a short left side (a variable) is a label, the answer is the right side
    if s.count("=") == 1 and len(s.split("=")[0].strip()) <= 2:
        s = s.split("=")[1].strip()
    # thousands separators, only in a lone number ("80,000", "1,200.50 dollars"): in "(100,200)" or
    # "1,2,3" the comma separates answers
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\s+[a-zA-Z][a-zA-Z\s.]*)?", s):
        s = s.replace(",", "")
    s = re.sub(r"\\sqrt\s*(\w)", r"\\sqrt{\1}", s)
    # \frac12, \frac 12, \frac9{5}, \frac{9}5: braces around one-character arguments
    s = re.sub(r"\\frac\s*([^{\s\\])", r"\\frac{\1}", s)
    s = re.sub(r"\\frac\{([^{}]*)\}\s*([^{\s\\])", r"\\frac{\1}{\2}", s)
    unit = re.fullmatch(r"(-?\d+(?:\.\d+)?(?:/\d+)?)\s+[a-zA-Z][a-zA-Z\s.]*", s)  # "18 dollars", "5 cm"
    if unit:
        s = unit.group(1)
    number = _as_number(s)
    if number is not None:
        return _canonical(number)
    return s.replace(" ", "")


def _canonical(x: Fraction) -> str:
    """A number's one written form: an integer or a terminating decimal as such ("18", "0.5"),
    any other fraction as "a/b"."""
    den = x.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{x.numerator}/{x.denominator}"
    if x.denominator == 1:
        return str(x.numerator)
    digits = 0
    while (x * 10 ** digits).denominator != 1:
        digits += 1
    return f"{float(x):.{digits}f}" if digits < 15 else f"{x.numerator}/{x.denominator}"


def _as_number(s: str) -> Fraction | None:
    """An exact value for an integer, a decimal, a/b or \\frac{a}{b} (with a sign), else None."""
    t = s.replace(" ", "")
    sign = 1
    if t.startswith("-"):
        sign, t = -1, t[1:]
    m = re.fullmatch(r"\\frac\{(\d+(?:\.\d+)?)\}\{(\d+(?:\.\d+)?)\}", t) or re.fullmatch(r"(\d+(?:\.\d+)?)/(\d+)", t)
    try:
        if m:
            den = Fraction(m.group(2))
            return None if den == 0 else sign * Fraction(m.group(1)) / den
        if re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", t):
            return sign * Fraction(t.rstrip(".") if not t.startswith(".") else "0" + t)
    except (ValueError, ZeroDivisionError):
        return None
    return None


def _after_marker(rest: str, *, whole_line: bool) -> str | None:
    """The answer in the sentence after a marker (module docstring), or None when it holds none."""
    end = rest.find("\n") if whole_line else _sentence_end(rest)
    span = (rest if end < 0 else rest[:end]).strip()
    maths = re.findall(r"\$([^$]+)\$", span)
    if maths:
        return maths[-1].strip()
    if "=" in span:
        span = span.rsplit("=", 1)[1].strip()
    lead = re.match(r"\\?\$?\s*((?:[-−]\s?)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?)(?![\d/])", span)
    if lead:
        return lead.group(1)
    numbers = _NUMBER.findall(span)
    if numbers:
        return numbers[-1]
    span = span.strip(" :*").rstrip(".").strip()
    return span if span and len(span) <= 40 and not re.search(r"[a-z]{3,}\s+[a-z]{3,}", span) else None


def _sentence_end(rest: str) -> int:
    """Where the sentence after a marker ends: a newline, or a full stop that is not a decimal point."""
    for m in re.finditer(r"\n|\.(?!\d)", rest):
        return m.start()
    return -1


def _answer(found: str, rule: Rule | None) -> MathAnswer:
    normalized = normalize(found)
    if not normalized:
        return MathAnswer(found, None, "invalid", rule)
    return MathAnswer(found, normalized, "ok", rule)


__all__ = ["MathAnswer", "is_equivalent", "normalize", "read_math"]
