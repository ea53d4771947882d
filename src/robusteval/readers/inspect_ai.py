"""The `inspect` reader: how inspect_ai's ``multiple_choice`` solver reads a reply for its ``choice``
scorer (``inspect_ai/solver/_multiple_choice.py``: ``parse_answers``, one answer; inspect-ai 0.3.285),
so that an inspect log's accuracy is reproduced reply for reply.

1. Wrappers dropped first: ``$B$`` and ``**B**`` read as ``B``; ``(B)`` after a line start, ``:`` or
   ``,`` and before ``,``, ``.``, a line break or the end reads as ``B``.
2. The last line that *starts* with ``ANSWER:`` (any case, spaces around the colon allowed) followed
   by letters, digits, spaces or commas up to the line's end or a full stop; else, anywhere, the last
   ``ANSWER:`` followed by those characters up to a character that is not a word character (or the
   end).
3. What follows, stripped, without a trailing full stop, upper-cased, split at commas (empty pieces
   dropped), must be exactly one label of the options shown: ``ANSWER: c.`` reads C, ``ANSWER: A, B``
   and ``ANSWER: E`` of four options are invalid (inspect: no choice marked, counted incorrect).

An empty reply is invalid here and ``NOANSWER`` in inspect: both count it wrong. Labels are compared
upper-cased, so a run that shows ``a)`` labels is read as inspect reads its own ``A)``.
"""

from __future__ import annotations

import re

from robusteval.types import Answer

NAME = "inspect"
SUMMARY = ('inspect_ai multiple_choice: the last line starting "ANSWER: X" (else the last "ANSWER: X" anywhere), '
           "exactly one label, $X$/**X**/(X) unwrapped")

DOLLARS = re.compile(r"\x24\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\x24")
BOLD = re.compile(r"\*\*\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\*\*")
PARENS = re.compile(r"(?i)(^|[:,])(\s*)\(([A-Za-z\d])\)(?=\s*(?:,|\.|\n|\Z))")
STRICT = re.compile(r"(?i)^ANSWER\s*:\s*([A-Za-z\d ,]+)\s*(?:$|\n|\.)", re.MULTILINE)
LOOSE = re.compile(r"(?i)ANSWER\s*:\s*([A-Za-z\d ,]+)(?:[^\w]|\n|$|\.)")


def extract(text: str) -> str | None:
    """inspect's matched answer string (upper-cased, trailing full stop dropped), or None without one."""
    text = PARENS.sub(r"\1\2\3", BOLD.sub(r"\1", DOLLARS.sub(r"\1", text)))
    matches = STRICT.findall(text) or LOOSE.findall(text)
    return matches[-1].strip().rstrip(".").upper() if matches else None


def read(text: str | None, labels: tuple[str, ...]) -> Answer:
    """The shown position inspect's single-answer rule reads from ``text``, or invalid."""
    if text is None:
        return Answer(None, None, "failed")
    matched = extract(text)
    if matched is None:
        return Answer(None, None, "invalid")
    tokens = [token for token in matched.split(",") if token]
    shown = [label.upper() for label in labels]
    if len(tokens) != 1 or tokens[0] not in shown:
        return Answer(None, matched, "invalid")
    position = shown.index(tokens[0])
    return Answer(position, labels[position], "ok")
