"""Reading "The best answer is X" strictly."""

from __future__ import annotations

import pytest

from robusteval.readers import read_label

ABCD = ("A", "B", "C", "D")


@pytest.mark.parametrize("text, position", [
    ("The best answer is B.", 1),
    ("the best answer is **c**", 2),
    ("The best answer is (D)", 3),
    ("The best answer is option A", 0),
    ("The best answer is: C) brick", 2),
    ("The best answer is 2", 1),
    ("The best answer is IV", 3),
    ("The best answer is A. On reflection, the best answer is D.", 3),
])
def test_reads_the_last_label(text, position):
    answer = read_label(text, ABCD)
    assert (answer.position, answer.status, answer.label) == (position, "ok", ABCD[position])


@pytest.mark.parametrize("text", [
    "I think it is B.", "The best answer is E", "The best answer is 5", "The best answer is X",
    "The best answer is the brick", "The best answer is a combination of both", "The best answer is",
])
def test_invalid(text):
    answer = read_label(text, ABCD)
    assert answer.position is None and answer.status == "invalid"


def test_shown_style_wins_and_failed_requests():
    assert read_label("The best answer is a", ("a", "b", "c", "d")).position == 0
    assert read_label("The best answer is I", ("I", "II", "III", "IV")).position == 0
    assert read_label(None, ABCD).status == "failed"
