"""The questionnaire reader on messy replies."""

from __future__ import annotations

import pytest

from robusteval.readers.scale import read_scale

SCALE = ("Not like me at all", "Not like me", "A little like me", "Somewhat like me", "Like me", "Very much like me")


@pytest.mark.parametrize("reply, expected", [
    ("C", 2),
    ("c", 2),
    ("(d)", 3),
    ("D.", 3),
    ("E - Like me", 4),
    ("B: Not like me", 1),
    ("**F. Very much like me**", 5),
    ("A. Not like me at all", 0),
    ("  \"B\"", 1),
    ("My answer is E.", 4),
    ("Answer: d", 3),
    ("I would choose option B because I value order.", 1),
    ("Very much like me!", 5),
    ("Honestly, that is not like me at all.", 0),
    ("That sounds like me.", 4),
    ("It's somewhat like me, I suppose", 3),
    ("I'd say (C) a little like me", 2),
    ("5", 4),
    ("3 - a little like me", 2),
    ("As Napoleon, I must say: Very much like me", 5),
    ("A\n", 0),
    ("A:", 0),
    ("A: not like me at all", 0),
    ("A: Very much like me", 5),  # "A:" as "Answer:" (SmolLM2's habit), then the option's text
    ("A: D", 3),
    ("A little like me.", 2),  # the article, then the option text
])
def test_reads_messy_answers(reply, expected):
    answer = read_scale(reply, SCALE)
    assert answer.status == "ok" and answer.index == expected, answer


@pytest.mark.parametrize("reply", [
    "",
    "I am Albert Einstein, and I think imagination matters more than knowledge.",
    "A. Not like me at all\nB. Not like me\nC. A little like me\nD. Somewhat like me",  # the list echoed
    "Not like me, or maybe very much like me.",  # two options named
    "A good question! I cannot say.",  # the article, not a label
    "Answer: C or D",
    "9",
    "G",
    "A: This person is someone I admire.",  # "Answer:" followed by no option
    "D. Very much like me",  # the letter says D, the text says F
])
def test_ambiguous_or_empty_answers_are_invalid(reply):
    answer = read_scale(reply, SCALE)
    assert answer.status == "invalid" and answer.index is None


def test_a_failed_request_is_failed_not_invalid():
    assert read_scale(None, SCALE).status == "failed"


def test_letters_beyond_the_scale_are_not_read():
    assert read_scale("E", ("No", "Maybe", "Yes")).status == "invalid"
    assert read_scale("Yes", ("No", "Maybe", "Yes")).index == 2
