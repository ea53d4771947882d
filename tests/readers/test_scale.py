"""The questionnaire reader on messy replies."""

from __future__ import annotations

import math

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


def test_logprob_reader_sums_letter_spellings_and_renormalises():
    from robusteval.readers.scale import read_scale_logprobs

    top = ((" A", math.log(0.4)), ("A", math.log(0.1)), (" C", math.log(0.25)), ("(f", math.log(0.05)),
           (" G", math.log(0.1)), ("The", math.log(0.1)))  # G is off a 6-point scale; The is no letter
    d = read_scale_logprobs(top, 6)
    assert d.status == "ok" and d.mass == pytest.approx(0.8)
    assert d.probs == pytest.approx((0.625, 0, 0.3125, 0, 0, 0.0625))
    assert d.argmax == 0 and d.expected == pytest.approx(0.625 + 3 * 0.3125 + 6 * 0.0625)


def test_logprob_reader_without_a_letter_is_invalid_and_without_logprobs_failed():
    from robusteval.readers.scale import read_scale_logprobs

    assert read_scale_logprobs((("I", -0.1), (" think", -2.0)), 6).status == "invalid"
    assert read_scale_logprobs(None, 6).status == "failed"
