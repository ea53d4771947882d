"""Final-answer extraction and equivalence on the reply shapes real models write."""

from __future__ import annotations

from fractions import Fraction

import pytest

from robusteval.data.math_answers import gsm8k_gold, last_boxed
from robusteval.readers.math import MathAnswer, is_equivalent, normalize, read_math

# Replies of the embedded SmolLM2-135M-Instruct to GSM8K questions (greedy, abridged to their ends):
# it copies GSM8K's "####", restates, and writes prose or arithmetic after "The final answer is".
SMOLLM = [
    ("The final answer is the total amount of money Janet earns every day at the farmers' market = "
     "624 + 156 = 210 dollars.\n#### 2\nThe answer is: 2", "210", "final-answer"),
    ("So, 2 bolts of blue fiber is 2 * 2 = 4 bolts of white fiber.  The final answer is 4 bolts of white fiber.",
     "4", "final-answer"),
    ("She makes a total of 16 + 12 + 24 = 60 dollars per day from selling the remainder.\n#### 6\nThe answer is: 6",
     "6", "hashes"),
    ("So, the profit made by flipping the house is 150 * 1.5 = 200.\n\nThe final answer is 200.\n\n"
     "The final answer is 200.", "200", "final-answer"),
    ("The final answer is 1890 + 800 = 2690 cups of feed is needed to feed 20 chickens.\n\nSo, the final",
     "2690", "final-answer"),
    ("Therefore, the final answer is 1.5 cups of feed.\n\nThe final answer is 1.5 cups of feed.", "1.5",
     "final-answer"),
    ("So, 10 seconds is 1000.\n\nThe answer is 10.\n\nThe answer is 10.", "10", "answer-is"),
    ("So, Josh made a profit of $50,000.", "50000", "last-number"),
    ("He runs 180 * 3 = 540 meters per week.  He runs 180 * 3", "3", "last-number"),  # cut off at max_tokens
]


@pytest.mark.parametrize(("reply", "expected", "rule"), SMOLLM)
def test_embedded_model_replies(reply, expected, rule):
    answer = read_math(reply)
    assert (answer.normalized, answer.status, answer.rule) == (expected, "ok", rule)


@pytest.mark.parametrize(("reply", "expected", "rule"), [
    # MATH / chat models: \boxed{} with nested braces wins over everything else
    (r"So $x = \frac{3}{4}$, hence the answer is $\boxed{\frac{3}{4}}$.", "0.75", "boxed"),
    (r"Thus $r = 3$ and $\theta = \frac{\pi}{2}$: $\boxed{\left( 3, \frac{\pi}{2} \right)}$", r"(3,\frac{\pi}{2})",
     "boxed"),
    (r"The final answer is 7. Checking again: \boxed{8}", "8", "boxed"),
    (r"First guess \boxed{5}, corrected: \boxed{6}", "6", "boxed"),
    (r"\boxed 5", "5", "boxed"),
    (r"We get $\boxed{\text{(C)}}$.", "(C)", "boxed"),
    (r"Answer: \boxed{1,000}", "1000", "boxed"),
    (r"The answer is \boxed{\dfrac{1}{2}}", "0.5", "boxed"),
    # Minerva's format
    ("Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.", "0.5", "final-answer"),
    ("Final Answer: The final answer is $x^2 + 1$. I hope it is correct.", "x^2+1", "final-answer"),
    # GSM8K: the reference format and its few-shot chain of thought
    ("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18", "18",
     "hashes"),
    ("#### $1,234", "1234", "hashes"),
    ("The temperature drops 8 degrees. So the answer is - 3.", "-3", "answer-is"),
    ("So the answer is 18.", "18", "answer-is"),
    ("The final answer is: 42", "42", "final-answer"),
    ("**Final answer:** 12 apples", "12", "final-answer"),
    # chatty replies with no marker: the last number
    ("Sure! Let me help. Each box has 12 eggs, and 3 boxes make 36 eggs in total.", "36", "last-number"),
    ("It costs $3.50 per pound, so 2 pounds cost $7.00.", "7", "last-number"),
    ("The result is -4.", "-4", "last-number"),
])
def test_reply_shapes(reply, expected, rule):
    answer = read_math(reply)
    assert (answer.normalized, answer.status, answer.rule) == (expected, "ok", rule)


def test_no_answer_is_invalid_and_no_reply_failed():
    assert read_math("I am not sure how to solve this problem.") == MathAnswer(None, None, "invalid")
    assert read_math(None).status == "failed"


def test_an_empty_marker_gives_way_to_an_earlier_statement():
    # the last "final answer is" holds no answer: the one before it counts
    assert read_math("The final answer is 12.\nThe final answer is the number of apples.").normalized == "12"


def test_cut_off_box_is_not_an_answer():
    assert last_boxed(r"so \boxed{\frac{1}{2") is None
    assert read_math(r"Let x = 3, so \boxed{\frac{1}{2").rule == "last-number"


@pytest.mark.parametrize(("a", "b"), [
    (r"\frac{1}{2}", "1/2"), ("1/2", "0.5"), ("0.5", ".5"), (r"\dfrac12", "0.50"), (r"\frac 12", "0.5"),
    (r"\frac9{5}", "1.8"), ("1,000", "1000"), ("$18", "18"), (r"\$18.00", "18"), ("18 dollars", "18"),
    ("18.", "18"), (r"50\%", "50"), (r"90^\circ", "90"), (r"90^{\circ}", "90"), (r"2 \text{ cm}", "2"),
    (r"440\text{ cm}^2", "440"), (r"\frac{68}{3}\text{ pounds}", r"\frac{68}{3}"), ("x = 5", "5"),
    (r"\left( 3, \frac{\pi}{2} \right)", r"(3,\frac{\pi}{2})"), (r"\sqrt2", r"\sqrt{2}"), ("−7", "-7"),
    (r"-\frac{3}{4}", "-0.75"), (r"\text{Evelyn}", "Evelyn"), (r"\(12\)", "12"), ("1/3", r"\frac{1}{3}"),
])
def test_equivalent_forms(a, b):
    assert is_equivalent(a, b), (normalize(a), normalize(b))


@pytest.mark.parametrize(("a", "b"), [
    ("0.33", "1/3"),  # a rounding is not the answer
    ("1,5", "15"),  # not a thousands separator
    ("(100, 200)", "100200"),
    ("3x", "3"),
    ("4x-5y=-50", "-50"),  # an equation with a long left side is the answer, not a label
    ("12", "13"),
])
def test_different_answers(a, b):
    assert not is_equivalent(a, b)


def test_number_and_invalid_predictions():
    assert read_math(r"\boxed{\frac{3}{4}}").number == Fraction(3, 4)
    assert read_math(r"\boxed{x+1}").number is None
    assert not is_equivalent(read_math("no idea"), "3")
    assert not is_equivalent(None, "3")


def test_gsm8k_gold():
    assert gsm8k_gold("She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18") == "18"
    assert gsm8k_gold("... #### 1,600") == "1,600"
    with pytest.raises(ValueError, match="####"):
        gsm8k_gold("no marker")
