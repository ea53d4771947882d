"""The `mmlu-pro` reader: the chain MMLU-Pro's authors score their released replies with
(TIGER-AI-Lab/MMLU-Pro, ``compute_accuracy.py`` and ``evaluate_from_api.py``), without its random guess.

1. the first ``answer is \\(?([A-J])\\)?`` (case-sensitive: "The answer is (B)", "the answer is C");
2. else ``re.search(r".*[aA]nswer:\\s*([A-J])", text)``: ``.`` stops at a line break, so this is the
   *last* "Answer: X" on the *first* line that has one (not the last in the reply);
3. else the last standalone capital A-J (``\\b[A-J]\\b`` not followed by another anywhere after it);
4. else nothing: the reply is **invalid**. The authors then draw a random letter (``random.seed(12345)``
   before each draw, so always the same one); robusteval never guesses, so their accuracy can be higher
   than this reader's by the guesses that hit, and their "unreadable" count is ours.

Their older ``evaluate_from_local.py`` ended step 3 with ``[A-J](?=[^A-J]*$)`` (the last capital A-J
*anywhere*, inside words too): the released replies of some models were read with step 1 only, and
this reader follows the newest chain. Only letters are read: under another label style (``1.``,
``a:``, ``I:``) a template check refuses the run rather than read it wrongly.

A letter past the shown options ("J" for a 9-option question) is a read, wrong answer, as the
authors count it: its position is past the labels (`Answer.position` >= len(labels)).

Steps 2 and 3 are written without the authors' backtracking patterns (on a long reply without a
match, ``.*[aA]nswer:`` is quadratic per line: minutes for one file), with the same results; a test
compares both on real replies.
"""

from __future__ import annotations

import re

from robusteval.labels import LETTERS
from robusteval.types import Answer

NAME = "mmlu-pro"
SUMMARY = ('MMLU-Pro authors\' chain: first "answer is (X)", else the last "Answer: X" of the first line that has '
           "one, else the last standalone A-J; no random guess")

FIRST = re.compile(r"answer is \(?([A-J])\)?")
AGAIN = re.compile(r"(?=[aA]nswer:\s*([A-J]))")  # a lookahead: "Answer: Answer: B" holds two candidates
STANDALONE = re.compile(r"\b[A-J]\b")


def extract(text: str) -> tuple[str | None, str | None]:
    """The letter the authors' chain finds in ``text`` and the step that found it (1, 2, 3), or (None, None)."""
    if match := FIRST.search(text):
        return match.group(1), "1"
    if letter := _again(text):
        return letter, "2"
    letters = STANDALONE.findall(text)
    return (letters[-1], "3") if letters else (None, None)


def _again(text: str) -> str | None:
    """``re.search(r".*[aA]nswer:\\s*([A-J])", text)``: the search starts at the earliest place a
    match can, which is the start of the first line holding a candidate, and the greedy ``.*`` then
    takes the last candidate that starts on that line."""
    candidates = list(AGAIN.finditer(text))
    if not candidates:
        return None
    line_end = text.find("\n", candidates[0].start())
    on_line = [m for m in candidates if line_end < 0 or m.start() < line_end]
    return on_line[-1].group(1)


def read(text: str | None, labels: tuple[str, ...]) -> Answer:
    """The shown position of the letter the chain finds (letters A-J only), or invalid."""
    if text is None:
        return Answer(None, None, "failed")
    letter, _ = extract(text)
    if letter is None:
        return Answer(None, None, "invalid")
    if tuple(labels) != tuple(LETTERS[:len(labels)]):
        return Answer(None, letter, "invalid")  # letters are all this chain reads (see the template check)
    return Answer(LETTERS.index(letter), letter, "ok")
