"""The default reader's whole rule (`readers.content`): the requested sentence, else a label in
another phrasing, else the one option whose text the reply names; how each reply was read is kept.
The replies are the embedded model's, from the demo (`run mcq --families order,format --limit 20`)."""

from __future__ import annotations

import pytest

from robusteval.readers import READERS, get_reader
from robusteval.readers.option_text import named_options
from robusteval.types import Answer

ABCD = ("A", "B", "C", "D")
BEATS = ("reflection.", "refraction.", "interference.", "All of these.")
CONTRACT = ("enforceable, because the parties agreed to it.",
            "unenforceable, because the agreement was violative of the parol evidence rule.",
            "enforceable, because their written contract on the same date was the final integration.",
            "unenforceable, because the manufacturer's promise lacked consideration.")
MORAL = ("Wrong, Wrong", "Wrong, Not wrong", "Not wrong, Wrong", "Not wrong, Not wrong")


def read(text, options=BEATS, labels=ABCD):
    return get_reader().read_reply(text, labels, options)


def test_the_requested_sentence_is_read_first_and_says_so():
    assert read("The best answer is C.\n\nThe correct answer is refraction.") == Answer(2, "C", "ok", "label")
    assert read("The best answer is (b)") == Answer(1, "B", "ok", "label")


def test_a_label_in_another_phrasing_is_read_as_a_phrase():
    assert read("A) enforceable\n\nThe answer is A.", CONTRACT) == Answer(0, "A", "ok", "phrase")
    assert read("c: interference.", labels=("a", "b", "c", "d")) == Answer(2, "c", "ok", "phrase")
    assert read("Answer: (D)") == Answer(3, "D", "ok", "phrase")


def test_an_option_named_by_its_text_alone_is_read_as_that_option():
    assert read("The best answer is reflection.") == Answer(0, "A", "ok", "text")
    assert read("INTERFERENCE") == Answer(2, "C", "ok", "text")  # case and punctuation do not count
    assert read("unenforceable, because the agreement was violative of the parol evidence rule.",
                CONTRACT) == Answer(1, "B", "ok", "text")


def test_disagreement_and_ambiguity_stay_invalid():
    # a label and another option's text
    assert read("C. unenforceable, because the agreement was violative of the parol evidence rule.",
                CONTRACT) == Answer(None, None, "invalid", "invalid")
    # two options' texts: the options listed back
    assert read("A. reflection.\nB. refraction.\nC. interference.").read_as == "invalid"
    assert read("It is refraction or interference.").read_as == "invalid"
    # a label stated but another option named as well
    assert read("The answer is A) reflection. The answer is not C) interference.").read_as == "invalid"
    assert read("I think it is sound.").read_as == "invalid"


def test_a_label_agreeing_with_the_option_it_names_is_read():
    assert read("B. refraction.") == Answer(1, "B", "ok", "phrase")
    assert read("B. refraction.\n\nThe answer is B.") == Answer(1, "B", "ok", "phrase")


def test_a_shorter_text_inside_a_longer_one_is_not_named():
    assert named_options("Not wrong, Not wrong", MORAL) == {3}  # holds "wrong, not wrong" (B) inside it
    assert read("Not wrong, Not wrong", MORAL) == Answer(3, "D", "ok", "text")
    assert named_options("Wrong, Wrong or Not wrong, Wrong", MORAL) == {0, 2}


def test_a_repeated_text_is_one_answer_and_a_label_prefix_is_not_part_of_the_text():
    repeated = ("8.75", "9", "8.75", "7")
    assert named_options("It is 8.75", repeated) == {0}
    assert read("It is 8.75", repeated) == Answer(0, "A", "ok", "text")
    assert read("C. 8.75", repeated) == Answer(2, "C", "ok", "phrase")  # the copy at C is the same answer
    assert read("Rome", ("A) Paris", "B) Rome", "C) Oslo", "D) Bern")) == Answer(1, "B", "ok", "text")
    assert named_options("b rome", ("A) Paris", "B) Rome")) == {1}


def test_whole_words_only():
    assert named_options("the wrongdoer", ("wrong", "right")) == frozenset()
    assert named_options("it is 17", ("7", "17")) == {1}


def test_without_options_or_a_reply():
    assert get_reader().read_reply(None, ABCD, BEATS) == Answer(None, None, "failed")
    unread = get_reader().read_reply("The best answer is reflection.", ABCD)  # no texts given: none read
    assert (unread.position, unread.status, unread.read_as) == (None, "invalid", "invalid")
    assert get_reader().read_reply("The answer is B", ABCD) == Answer(1, "B", "ok", "phrase")


@pytest.mark.parametrize("name", [n for n in READERS if n != "robusteval"])
def test_the_named_readers_keep_their_rules(name):
    """`score`, `mmlu-pro`, `lenient` and `inspect` read a reply as before, options or not, and say nothing
    of how (their authors' rules have no such notion)."""
    reader = get_reader(name)
    for reply in ("The best answer is reflection.", "B. refraction.", "The answer is (C)", "refraction", "B",
                  "C. reflection."):
        assert reader.read_reply(reply, ABCD, BEATS) == reader.read(reply, ABCD)
        assert reader.read_reply(reply, ABCD, BEATS).read_as is None
