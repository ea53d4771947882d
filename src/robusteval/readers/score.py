"""The `score` reader: how lm-evaluation-harness's SCORE robustness tasks read a reply
(``lm_eval/tasks/score/utils.py``: ``__postprocess_pred`` then ``translate_model_answer_to_labels``),
quirks included, so that a SCORE run's accuracy is reproduced reply for reply.

- With "the best answer is" anywhere (any case): the text after the *last* "the best answer is "
  (with its space), up to the line break, up to the first space; every character that is not a
  letter or digit removed; upper-cased. "The best answer is (b)." reads B.
- Quirk: lower-casing first means an article reads as a label: "The best answer is a combination of
  ..." reads **A** (robusteval's own reader calls it invalid).
- Quirk: the phrase without a space after it ("The best answer is: B", "...is\\nB") is not split
  at all: the reply's first word is read ("The best answer is: B" reads THE: no label).
- Without the phrase the whole reply, upper-cased and not stripped, is the answer: a reply of just
  "B" or "b" is read, " B" or "B." is not.

SCORE has no "invalid": an answer that is no label simply differs from the gold. Here it is
invalid (counted wrong, as SCORE does, and in the invalid rate); SCORE's consistency rate compares
those strings, so two identical unreadable replies agree there and not here (docs/suites/mcq.md).
"""

from __future__ import annotations

import re

from robusteval.types import Answer

NAME = "score"
SUMMARY = ('lm-evaluation-harness SCORE: the first word after the last "the best answer is ", '
           "non-alphanumerics dropped, upper-cased (\"is a combination\" reads A); else the whole reply")

PHRASE = "the best answer is"
NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def extract(text: str) -> str:
    """SCORE's final answer string for a reply (before it is compared with a label)."""
    if PHRASE not in text.lower():
        return text.upper()
    after = text.lower().split(PHRASE + " ")[-1].split("\n")[0].split(" ")[0]
    return NOT_ALNUM.sub("", after).strip().upper()


def read(text: str | None, labels: tuple[str, ...]) -> Answer:
    """The shown position whose label (upper-cased) equals SCORE's answer string, or invalid."""
    if text is None:
        return Answer(None, None, "failed")
    answer = extract(text)
    shown = [label.upper() for label in labels]
    if answer in shown:
        position = shown.index(answer)
        return Answer(position, labels[position], "ok")
    return Answer(None, answer[:40] or None, "invalid")
