"""The `lenient` reader: robusteval's reader first, then the other ways models commonly state an
answer, for replies that ignore the requested closing phrase. Use it to see how much of a model's
"invalid" share is phrasing rather than not answering; report the strict reader's figures beside it.

In order, the first rule that finds a label of the shown options wins:

1. the `robusteval` reader: the label after the last "The best answer is";
2. the last "answer is X", "answer: X", "correct option is X", "choice: X" (any case; X in any
   label style, bracketed, bold or in ``\\boxed{}``, mapped back as the `robusteval` reader does);
3. a reply that *starts* with a label: "B", "(B)", "B.", "B) Paris", "**B**".

Nothing else: a label merely mentioned in passing is not an answer, and a reply none of these
rules reads stays invalid (counted wrong). "is a combination" is an article, not a label, here too.
"""

from __future__ import annotations

import re

from robusteval.readers.robusteval import TOKEN, label_position, read_label
from robusteval.types import Answer

NAME = "lenient"
SUMMARY = ('robusteval\'s reader, else the last "answer is/answer:/correct option is X", else a reply that '
           "starts with a label")

STATED = re.compile(r"(?:answer|option|choice)\s*(?:is|:)", re.IGNORECASE)
_LABEL = r"([A-Za-z]+|\d+)"
# "(B) ...", "[B] ...", "**B** ...", or "B" then ".", ")", ":" or the end: "I think" is not a label
LEADING = re.compile(rf"^\s*(?:\({_LABEL}\)|\[{_LABEL}\]|\*\*{_LABEL}\*\*|{_LABEL}(?:[.):]|\s*$))")


def read(text: str | None, labels: tuple[str, ...]) -> Answer:
    """Map a reply to a shown position by the rules above, or invalid."""
    strict = read_label(text, labels)
    if strict.status != "invalid" or text is None:
        return strict
    return stated_label(text, labels) or strict


def stated_label(text: str, labels: tuple[str, ...]) -> Answer | None:
    """Rules 2 and 3 alone: the label a reply states in another phrasing than the requested
    sentence, or None (the default reader reads these too, `readers.content`)."""
    for match in reversed(list(STATED.finditer(text))):
        if (answer := _label_at(text, match.end(), labels)) is not None:
            return answer
    lead = LEADING.match(text)
    token = next((g for g in lead.groups() if g), None) if lead else None
    if token and (position := label_position(token, labels)) is not None:
        return Answer(position, labels[position], "ok")
    return None


def _label_at(text: str, start: int, labels: tuple[str, ...]) -> Answer | None:
    token = TOKEN.match(text[start:])
    if not token:
        return None
    rest = text[start + token.end():]
    if token.group(1) not in labels and token.group(1).islower() and re.match(r"\s+[a-z]", rest):
        return None  # "is a combination ...": an article, not a label
    position = label_position(token.group(1), labels)
    return None if position is None else Answer(position, labels[position], "ok")
