"""Reading paraphrase replies, and the invariants a candidate must pass."""

from __future__ import annotations

import pytest

from robusteval.probes.paraphrase import (
    Cost,
    Invariants,
    check_candidate,
    is_question,
    leaked_answers,
    parse_candidates,
)


@pytest.mark.parametrize("reply, expected", [
    ('["Which river crosses the capital?", "What river runs through the capital?"]',
     ["Which river crosses the capital?", "What river runs through the capital?"]),
    ('Sure! Here are 2 paraphrases:\n```json\n["Which river crosses the capital?",\n "What river runs',
     ["Which river crosses the capital?"]),  # cut off by the token limit: the complete string is kept
    ("Here are two rewrites:\n1. Which river crosses the capital?\n2) What river runs through it?",
     ["Which river crosses the capital?", "What river runs through it?"]),
    ('- "Which river crosses the capital?"\n- Paraphrase 2: Name the river of the capital.',
     ["Which river crosses the capital?", "Name the river of the capital."]),
    ('[{"paraphrase": "Which river crosses the capital?"}, {"question": "Name the capital\'s river."}]',
     ["Which river crosses the capital?", "Name the capital's river."]),
    ('["Same question twice?", "Same question twice?", "x"]', ["Same question twice?"]),
    ("", []), (None, []), ("Okay.", []),
])
def test_parse_candidates_from_messy_replies(reply, expected):
    assert parse_candidates(reply) == expected


def test_check_candidate_reasons():
    bounds = Invariants(0.80, 0.96)

    def check(sim_parent=0.9, sim_root=0.85, parent_sim_root=0.95, duplicate=False):
        return check_candidate(sim_parent=sim_parent, sim_root=sim_root, parent_sim_root=parent_sim_root,
                               duplicate=duplicate, bounds=bounds)

    assert check() is None
    assert check(duplicate=True) == "duplicate"
    assert check(sim_parent=0.79) == "too_far_from_parent"
    assert check(sim_parent=0.97) == "too_close_to_parent"
    assert check(sim_parent=0.80) is None and check(sim_parent=0.96) is None  # bounds inclusive
    assert check(sim_root=0.95) == "not_further_from_root"  # equal is not further
    assert check(sim_root=0.96, parent_sim_root=1.0) is None  # children of the root


def test_cost_arithmetic():
    c = Cost(1, 100, 20, 2.0) + Cost(1, 50, 10, 1.0)
    assert c == Cost(2, 150, 30, 3.0) and c.tokens == 180
    assert c.share(2) == Cost(1, 75, 15, 1.5)


@pytest.mark.parametrize("text, asks", [
    ("What is Marla Quenby's occupation?", True), ("Which river crosses the capital", True),
    ("Name the river of the capital.", True), ("In what country is Tovren?", True),
    ('"Is it raining?"', True), ("To whom was the prize given", True),
    ("Marla Quenby is a historian who writes about lighthouses.", False),
    ("The river of the capital.", False), ("In 1950 she became a historian.", False), ("", False),
])
def test_is_question(text, asks):
    assert is_question(text) is asks


def test_leaked_answers_whole_words_normalised_and_not_in_the_root():
    answers = ("historian", "Historian of Science")
    root = "What is Marla Quenby's occupation?"
    assert leaked_answers("Is Marla Quenby a historian?", answers, root) == ["historian"]
    assert leaked_answers("Is she a historian of science?", answers, root) == ["historian", "Historian of Science"]
    assert leaked_answers("Is she a prehistorian?", answers, root) == []  # whole words only
    assert leaked_answers("Which river, the Vell, flows there?", ("Vell",), "Which river, the Vell or the Arn?") == []


def test_check_candidate_asks_for_a_question_without_the_answer():
    def check(text):
        return check_candidate(sim_parent=0.9, sim_root=0.85, parent_sim_root=0.95, duplicate=False,
                               bounds=Invariants(), text=text, answers=("historian",), root="What is her job?")

    assert check("What does she do for a living?") is None
    assert check("She is a historian who writes books.") == "not_a_question"
    assert check("Is she a historian?") == "contains_answer"
