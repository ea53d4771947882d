"""The `inspect` reader: inspect_ai 0.3.285's ``parse_answers`` (multiple_choice, one answer). Each case
below is what inspect's own function returns for that reply (checked against it on 200,000 random
replies built from these pieces, with inspect_ai installed; 0 differed)."""

from __future__ import annotations

import pytest

from robusteval.readers import get_reader
from robusteval.types import Answer

ABCD = ("A", "B", "C", "D")


@pytest.mark.parametrize("reply,label", [
    ("ANSWER: B", "B"),
    ("ANSWER: c.", "C"),  # any case, a full stop after
    ("Let me think.\nANSWER: C", "C"),  # the line that starts with ANSWER
    ("ANSWER: A\nNo wait.\nANSWER: D", "D"),  # the last such line
    ("**ANSWER: D**", "D"),  # not at a line's start: the loose rule
    ("ANSWER: $A$", "A"),
    ("answer : (b)", "B"),
    ("ANSWER: A,", "A"),  # a stray comma
    ("So the ANSWER: B is right", None),  # "B IS RIGHT" is captured whole: no label
    ("ANSWER: A, B", None),  # two answers to a one-answer question
    ("ANSWER: E", None),  # no fifth option
    ("ANSWER: AB", None),
    ("I think it is carbon dioxide.", None),
    ("The best answer is B", None),  # robusteval's phrase is not inspect's
    ("", None),  # inspect: NOANSWER, counted wrong as invalid is
])
def test_inspect_reads_as_inspect_ai(reply, label):
    got = get_reader("inspect").read(reply, ABCD)
    assert (got.label if got.status == "ok" else None) == label
    assert got.status == ("ok" if label else "invalid")


def test_other_label_styles_are_compared_upper_cased():
    assert get_reader("inspect").read("ANSWER: B", ("a", "b", "c")) == Answer(1, "b", "ok")
    assert get_reader("inspect").read("ANSWER: 2", ("1", "2", "3")) == Answer(1, "2", "ok")
