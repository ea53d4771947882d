"""The `robusteval` reader (the default), its first rule: the option label after the last "the best
answer is" (``read_as: label``), the sentence every template asks for and `probes.template_check`
checks. A reply without it is read further by `readers.content` (a label in another common phrasing,
or the one option whose text it names); nothing else is guessed.

Strict on purpose: something after the phrase that is not a label of the shown options is not read
as one. Labels in another style than the one shown (``b`` or ``2`` or ``II`` for ``B``) are mapped
back, since the model understood the question even if it mixed up the label style; so are the
Unicode roman numerals (``Ⅳ``, a numbering of FormatSpread's grammar) and their ASCII spelling (``IV``).
"""

from __future__ import annotations

import re
import unicodedata

from robusteval.labels import LETTERS, ROMAN
from robusteval.types import Answer

PHRASE = re.compile(r"the best answer is", re.IGNORECASE)
TOKEN = re.compile(r"""^[\s:\-=]*(?:option\s+|\*+|["'(\[{<]|\\boxed\{)*\s*([A-Za-z]+|\d+|[\u2160-\u217f]+)\b""",
                   re.IGNORECASE)


NAME = "robusteval"
SUMMARY = ('the label after the last "The best answer is" (any label style mapped back), else a label stated as '
           "lenient reads it, else the one option whose text the reply names; disagreeing readings are invalid")


def read_label(text: str | None, labels: tuple[str, ...]) -> Answer:
    """Map a reply to a shown position (0-based) or invalid. ``labels`` are the labels shown."""
    if text is None:
        return Answer(None, None, "failed")
    matches = list(PHRASE.finditer(text))
    if not matches:
        return Answer(None, None, "invalid")
    token = TOKEN.match(text[matches[-1].end():])
    if not token:
        return Answer(None, None, "invalid")
    rest = text[matches[-1].end() + token.end():]
    if token.group(1) not in labels and token.group(1).islower() and re.match(r"\s+[a-z]", rest):
        return Answer(None, token.group(1), "invalid")  # "is a combination ...": an article, not a label
    position = label_position(token.group(1), labels)
    if position is None:
        return Answer(None, token.group(1), "invalid")
    return Answer(position, labels[position], "ok")


def label_position(token: str, labels: tuple[str, ...]) -> int | None:
    """The shown style first, then letters (any case), digits (1-based) and roman numerals."""
    n = len(labels)
    if token in labels:
        return labels.index(token)
    shown = [label.upper() for label in labels]
    if token.upper() in shown:  # the shown style in another case: "i" under I: is I, not the letter I (IX)
        return shown.index(token.upper())
    candidates = []
    token = unicodedata.normalize("NFKC", token)  # "Ⅳ" is "IV"
    if len(token) == 1 and token.upper() in LETTERS:
        candidates.append(LETTERS.index(token.upper()))
    if token.isdigit():
        candidates.append(int(token) - 1)
    if token.upper() in ROMAN:
        candidates.append(ROMAN.index(token.upper()))
    return next((c for c in candidates if 0 <= c < n), None)
