"""The `mmlu-pro` reader against the authors' own chain, on their released replies."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from robusteval.readers import get_reader
from robusteval.readers.mmlu_pro import extract
from robusteval.types import Answer

LETTERS10 = tuple("ABCDEFGHIJ")
READ = get_reader("mmlu-pro").read


def authors_chain(text: str) -> str | None:
    """TIGER-AI-Lab/MMLU-Pro compute_accuracy.py's patterns, as published (the random guess left out)."""
    if m := re.search(r"answer is \(?([A-J])\)?", text):
        return m.group(1)
    if m := re.search(r".*[aA]nswer:\s*([A-J])", text):
        return m.group(1)
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    return m.group(0) if m else None


@pytest.fixture(scope="module")
def released(realdata):
    out = {}
    for path in sorted((realdata / "mmlu-pro" / "outputs").glob("*.zip")):
        with zipfile.ZipFile(path) as z:
            out[path.stem] = json.loads(z.read(z.namelist()[0]))
    assert len(out) == 3
    return out


def test_same_letter_as_the_authors_patterns_on_real_replies(released):
    """Steps 2 and 3 are rewritten without backtracking: on every short released reply that step 1
    misses (the authors' patterns take minutes on long ones), both give the same letter."""
    checked = steps = 0
    seen = set()
    for rows in released.values():
        for row in rows:
            text = row["generated_text"]
            if len(text) > 1000 or re.search(r"answer is \(?([A-J])\)?", text):
                continue
            letter, step = extract(text)
            assert letter == authors_chain(text), text[-200:]
            seen.add(step)
            checked += 1
            steps += step is not None
    assert checked > 300 and seen == {"2", "3", None}  # every later step and the no-answer case ran


def test_step_one_is_the_released_pred(released):
    """Mistral-7B-Instruct-v0.2's and gemma-7b's released ``pred`` is the chain's first step: where it
    is set, the reader gives that letter from step 1; where it is None, step 1 found nothing."""
    for name in ("model_outputs_Mistral-7B-Instruct-v0.2_5shots", "model_outputs_gemma-7b_5shots"):
        rows = released[name]
        for row in rows:
            letter, step = extract(row["generated_text"])
            if row["pred"] is not None:
                assert (letter, step) == (row["pred"], "1")
            else:
                assert step != "1"
        assert sum(row["pred"] is None for row in rows) > 1000  # the rest of the chain has work to do


def test_a_handful_of_real_replies(released):
    """Read as the authors read them, by position, right or wrong against the gold."""
    rows = {row["question_id"]: row for row in released["model_outputs_Mistral-7B-Instruct-v0.2_5shots"]}
    row = rows[70]  # "... The answer is (D)." against gold I
    labels = LETTERS10[:len(row["options"])]
    assert READ(row["generated_text"], labels) == Answer(3, "D", "ok")
    assert row["answer_index"] == 8


def test_the_chain_rules():
    four = LETTERS10[:4]
    assert READ("So the answer is (C). Then the answer is B", four) == Answer(2, "C", "ok")  # the first
    assert READ("The Answer Is B", four).status == "ok"  # step 3: a standalone B (step 1 is case-sensitive)
    # step 2: the last "Answer: X" of the first line holding one, not the last of the reply
    assert READ("Answer: A, no Answer: B\nAnswer: C", four) == Answer(1, "B", "ok")
    assert READ("Answer: Answer: C", four) == Answer(2, "C", "ok")
    assert READ("Apples and Bananas", four).status == "invalid"  # no standalone capital A-J
    assert READ("the answer is b", four) == Answer(None, None, "invalid")  # never a random guess
    assert READ(None, four) == Answer(None, None, "failed")


def test_a_letter_past_the_options_is_wrong_not_invalid():
    """The authors count "J" for a 9-option question as wrong: read, past the labels shown."""
    answer = READ("The answer is (J)", LETTERS10[:9])
    assert answer.status == "ok" and answer.label == "J" and answer.position == 9


def test_letters_only():
    assert READ("The answer is (B)", ("1", "2", "3", "4")).status == "invalid"
    assert READ("The answer is (B)", tuple("abcd")).status == "invalid"
