"""Rewrite checks that catch what is not a rewrite (issue 34): a translation left in English or in
no language, a paraphrase that drifted into another language, an explanation or a list in place
of the question, a model looping. Each has its reason, which the run's report counts."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.probes.apply import Checks, _check
from robusteval.probes.registry import get
from robusteval.probes.rewrite_checks import fluency_problem, form_problem, language_problem

QUESTION = "What colour is the sky on a clear day?"


@pytest.mark.parametrize(("name", "candidate", "reason"), [
    ("language:de", "Welche Farbe hat der Himmel an einem klaren Tag?", None),
    ("language:de", "What colour is the sky on a clear day, please tell me?", "wrong_language"),
    ("language:de", "Flubber wibble gronk snarf blat zorp quix?", "not_fluent"),
    ("language:fr", "Welche Farbe hat der Himmel an einem klaren Tag?", "wrong_language"),
    ("paraphrase", "On a clear day, which colour does the sky have?", None),
    ("paraphrase", "Welche Farbe hat der Himmel an einem klaren Tag?", "wrong_language"),
    ("paraphrase", "Flubber wibble gronk snarf blat zorp quix?", "not_fluent"),
    ("paraphrase", "Sky?", None),  # too short to tell its language
])
def test_language_of_a_rewrite(name, candidate, reason):
    target = name.split(":", 1)[1] if name.startswith("language:") else None
    assert language_problem(QUESTION, candidate, target) == reason


def test_form_of_a_rewrite():
    assert form_problem(QUESTION, "Which colour does a cloudless sky have?") is None
    explanation = ("Beats is a neurological condition in which the sky appears to change colour, and it is "
                   "studied by many scientists who write about light, air, scattering and the eye in "
                   "long papers that describe the physics in detail for other readers to learn from.")
    assert form_problem(QUESTION, explanation) == "too_long"
    assert form_problem(QUESTION, "Abandonable and Abusive: the sky the sky the sky the sky is blue?") == "repetitive"


def test_the_checks_run_in_the_rewrite_check():
    reason, _ = asyncio.run(_check(get("language:de"), QUESTION, "What colour is the sky on a clear day, friend?",
                                   Checks(), None))
    assert reason == "wrong_language"
    reason, _ = asyncio.run(_check(get("language:de"), QUESTION, "Welche Farbe hat der Himmel an einem klaren Tag?",
                                   Checks(), None))
    assert reason is None


def test_tree_paraphrases_get_the_same_checks():
    from robusteval.probes.paraphrase import Invariants, check_candidate

    def reason(text):
        return check_candidate(sim_parent=0.8, sim_root=0.7, parent_sim_root=0.9, duplicate=False,
                               bounds=Invariants(), text=text, root=QUESTION)

    assert reason("Which colour does the sky have on a clear day?") is None
    assert reason("Welche Farbe hat der Himmel an einem klaren Tag?") == "wrong_language"
    assert reason("Abandonable and Abusive: the sky the sky the sky the sky is what colour?") == "repetitive"


HEART = "What is the normal resting heart rate of an adult, in beats per minute?"


@pytest.mark.parametrize("salad", [
    # a list of words in place of the question (the tree paraphrase seen in issue 34 opened like this)
    "Abandonable and Abusive: Abase, Abash, Abate, Abbreviate, Abdicate, Abduct, Aberrant, Abhor, Abide.",
    # the question's and the topic's words with no sentence's order
    "Heart rate beats is a neurological condition minute resting normal adult per the which.",
    "Minute the per beats in adult an of rate heart resting normal the is what?",
])
def test_word_salad_is_refused(salad):
    assert fluency_problem(HEART, salad) == "word_salad"


@pytest.mark.parametrize("paraphrase", [
    "In beats per minute, what is an adult's normal resting heart rate?",
    "How many times per minute does the heart of a resting adult normally beat?",
    "At rest, how many beats per minute is normal for an adult heart?",
    "Beats per minute: what resting heart rate is normal for a grown-up?",
    "Was ist die normale Ruheherzfrequenz eines Erwachsenen in Schlägen pro Minute?",  # not English: not judged here
    "Heart rate at rest?",  # too short to tell
])
def test_fluent_paraphrases_pass(paraphrase):
    assert fluency_problem(HEART, paraphrase) is None


def test_the_fluency_check_compares_with_the_original():
    """A question that is itself mostly symbols and names keeps its few function words in a rewrite:
    it is not called a list."""
    formula = "Balance 2 NaHCO3 Na2CO3 CO2 H2O: enthalpy change ΔH equals 30.92 kJ per mole, sodium bicarbonate."
    assert fluency_problem(formula, "Sodium bicarbonate, 2 NaHCO3 Na2CO3 CO2 H2O: enthalpy change ΔH 30.92 kJ per "
                                    "mole, balanced.") is None


def test_word_salad_is_refused_in_both_rewrite_paths():
    from robusteval.probes.paraphrase import Invariants, check_candidate

    salad = "Heart rate beats is a neurological condition minute resting normal adult per the which?"
    reason, _ = asyncio.run(_check(get("paraphrase"), HEART, salad, Checks(), None))
    assert reason == "word_salad"
    assert check_candidate(sim_parent=0.8, sim_root=0.7, parent_sim_root=0.9, duplicate=False, bounds=Invariants(),
                           text=salad, root=HEART) == "word_salad"
