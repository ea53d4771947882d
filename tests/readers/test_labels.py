"""The strict label reader: the label after the last "the best answer is", or invalid."""

from __future__ import annotations

import pytest

from robusteval.labels import LABEL_STYLES
from robusteval.readers.robusteval import label_position, read_label
from robusteval.types import Answer

ABCD = ("A", "B", "C", "D")
LOWER = ("a", "b", "c", "d")
DIGITS = ("1", "2", "3", "4")
ROMAN4 = ("I", "II", "III", "IV")


def ok(position: int, labels=ABCD) -> Answer:
    return Answer(position, labels[position], "ok")


@pytest.mark.parametrize("text", [
    "The best answer is B",
    "the best answer is B.",
    "THE BEST ANSWER IS B",
    "The best answer is **B**",
    "The best answer is (B)",
    "The best answer is B. Banana is yellow.",
    "The best answer is option B",
    "The best answer is: B) Banana",
    "The best answer is [B]",
    "The best answer is \"B\"",
    "The best answer is \\boxed{B}",
    "Reasoning first.\nThe best answer is\n B",
    "The best answer is - B",
])
def test_decorations_around_the_label(text):
    assert read_label(text, ABCD) == ok(1)


def test_last_occurrence_wins():
    text = "At first I thought the best answer is A, but on reflection the best answer is C."
    assert read_label(text, ABCD) == ok(2)
    # an invalid final statement is not rescued by an earlier valid one
    assert read_label("The best answer is A. Actually the best answer is unclear.", ABCD).status == "invalid"


@pytest.mark.parametrize("token, labels, position", [
    ("b", ABCD, 1),        # lowercase letter under A. style
    ("2", ABCD, 1),        # digit (1-based)
    ("II", ABCD, 1),       # roman numeral
    ("iv", ABCD, 3),
    ("B", LOWER, 1),       # uppercase under a: style
    ("c", LOWER, 2),
    ("C", DIGITS, 2),      # letter under 1. style
    ("3", DIGITS, 2),
    ("III", ROMAN4, 2),
    ("b", ROMAN4, 1),      # a letter under I: style
    ("I", ROMAN4, 0),      # shown style beats the letter I
])
def test_other_styles_map_back_to_positions(token, labels, position):
    answer = read_label(f"The best answer is {token}", labels)
    assert answer == Answer(position, labels[position], "ok")


def test_roman_style_with_ten_options_reads_lowercase_roman_as_roman():
    roman10 = LABEL_STYLES["I:"].take(10)
    assert read_label("The best answer is i", roman10) == Answer(0, "I", "ok")
    assert read_label("The best answer is ix", roman10) == Answer(8, "IX", "ok")
    # under letters, "I" is the ninth letter when ten options are shown, and roman I when only four
    letters10 = LABEL_STYLES["A."].take(10)
    assert read_label("The best answer is I", letters10) == Answer(8, "I", "ok")
    assert read_label("The best answer is I", ABCD) == ok(0)


@pytest.mark.parametrize("text", [
    "I think it is B.",                     # no phrase
    "The answer is B",                      # not the phrase
    "The best answer is",                   # nothing after it
    "The best answer is ...",
    "The best answer is E",                 # not one of 4 options
    "The best answer is 5",
    "The best answer is 0",
    "The best answer is X",
    "The best answer is Banana",            # a word
    "The best answer is unclear",
    "The best answer is a combination of A and B",  # article, not a label
    "",
])
def test_invalid_replies(text):
    answer = read_label(text, ABCD)
    assert answer.status == "invalid"
    assert answer.position is None


def test_invalid_keeps_the_token_it_rejected():
    assert read_label("The best answer is E", ABCD) == Answer(None, "E", "invalid")
    assert read_label("The best answer is a combination", ABCD) == Answer(None, "a", "invalid")


def test_article_a_is_valid_under_lowercase_style():
    assert read_label("The best answer is a", LOWER) == ok(0, LOWER)
    assert read_label("The best answer is a combination of things", LOWER) == ok(0, LOWER)
    # and a lone lowercase letter at the end is still read under the A. style
    assert read_label("The best answer is a", ABCD) == ok(0)
    assert read_label("The best answer is c.", ABCD) == ok(2)


def test_three_options_reject_the_fourth_label():
    assert read_label("The best answer is D", ABCD[:3]).status == "invalid"
    assert read_label("The best answer is 4", DIGITS[:3]).status == "invalid"
    assert read_label("The best answer is IV", ROMAN4[:3]).status == "invalid"
    assert read_label("The best answer is C", ABCD[:3]) == ok(2, ABCD[:3])


def test_none_text_is_failed_not_invalid():
    assert read_label(None, ABCD) == Answer(None, None, "failed")


def test_label_position_directly():
    assert label_position("D", ABCD) == 3
    assert label_position("d", ABCD) == 3
    assert label_position("4", ABCD) == 3
    assert label_position("IV", ABCD) == 3
    assert label_position("V", ABCD) is None
    assert label_position("AB", ABCD) is None
