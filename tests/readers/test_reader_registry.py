"""The readers by name, and the rules of `score` and `lenient`."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.readers import DEFAULT_READER, READERS, get_reader
from robusteval.readers.robusteval import read_label
from robusteval.types import Answer

ABCD = ("A", "B", "C", "D")


def test_every_reader_by_name():
    assert list(READERS) == ["robusteval", "score", "mmlu-pro", "lenient", "inspect"]
    assert DEFAULT_READER == "robusteval" and get_reader().read is read_label
    assert all(get_reader(name).name == name and get_reader(name).summary for name in READERS)
    available = "robusteval, score, mmlu-pro, lenient, inspect"
    with pytest.raises(UserError, match=f"unknown --reader 'scores'; available: {available}"):
        get_reader("scores")


@pytest.mark.parametrize("name", list(READERS))
def test_a_failed_request_is_failed_whatever_the_reader(name):
    assert get_reader(name).read(None, ABCD) == Answer(None, None, "failed")


def score(text, labels=ABCD):
    return get_reader("score").read(text, labels)


def test_score_reads_as_lm_evaluation_harness():
    assert score("Reasoning...\nThe best answer is (B).") == Answer(1, "B", "ok")
    assert score("The best answer is A. No wait, the best answer is c") == Answer(2, "C", "ok")  # the last
    assert score("The best answer is a combination of both.") == Answer(0, "A", "ok")  # SCORE's quirk
    assert score("The best answer is: B").status == "invalid"  # no space after "is": the first word, THE
    assert score("The best answer is\nB").status == "invalid"
    assert score("b") == Answer(1, "B", "ok")  # no phrase: the whole reply is the answer
    assert score("B.").status == "invalid" and score(" B").status == "invalid"
    assert score("The best answer is 2", ("1", "2", "3")) == Answer(1, "2", "ok")
    assert score("The best answer is 2").status == "invalid"  # digits are not mapped to letters
    assert score("The best answer is II", ("I", "II", "III")) == Answer(1, "II", "ok")


def lenient(text, labels=ABCD):
    return get_reader("lenient").read(text, labels)


def test_lenient_reads_common_phrasings_and_nothing_in_passing():
    assert lenient("The best answer is C") == Answer(2, "C", "ok")
    assert lenient("I'd say the answer is (B).") == Answer(1, "B", "ok")
    assert lenient("Answer: a") == Answer(0, "A", "ok")
    assert lenient("The correct option is **D**") == Answer(3, "D", "ok")
    assert lenient("Answer: A\nOn reflection, answer: D") == Answer(3, "D", "ok")  # the last statement
    for reply, position in (("B", 1), ("(C) Paris", 2), ("d) x", 3), ("**A**", 0), ("[B]", 1)):
        assert lenient(reply) == Answer(position, ABCD[position], "ok"), reply
    for reply in ("I think it is Paris", "Both A and B are plausible.", "The answer is a combination",
                  "Dogs.", "The best answer is E"):
        assert lenient(reply).status == "invalid", reply
