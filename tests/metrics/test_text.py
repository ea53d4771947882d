"""Short-answer scoring: normalisation, alias match, token P/R/F1, BLEU, ROUGE on hand-computed cases."""

from __future__ import annotations

import pytest

from robusteval.metrics.text import rouge, score_answer, sentence_bleu, token_prf
from robusteval.readers.aliases import alias_match, normalize_answer


def test_normalize_answer():
    assert normalize_answer("  The Eiffel-Tower, of course! ") == "eiffel tower of course"
    assert normalize_answer("An Apple a day") == "apple day"


def test_alias_match_whole_words_after_normalising():
    aliases = ("Sunset Boulevard", "Sunset Blvd.")
    assert alias_match("I think it was sunset blvd", aliases)
    assert alias_match("The answer: SUNSET BOULEVARD.", aliases)
    assert not alias_match("Sunset", aliases)
    assert not alias_match("1972", ("197",))  # no match inside a longer word or number
    assert alias_match("in December 1972", ("December 1972", "14 December 1972"))
    assert not alias_match("", ("x",))


def test_token_prf_hand_computed():
    # pred: [paris, france] ref: [paris] -> P = 1/2, R = 1, F1 = 2/3
    p, r, f1 = token_prf("Paris, France", "Paris")
    assert (p, r) == (0.5, 1.0) and f1 == pytest.approx(2 / 3)
    assert token_prf("London", "Paris") == (0.0, 0.0, 0.0)
    assert token_prf("the", "a") == (1.0, 1.0, 1.0)  # both empty after normalising


def test_bleu_and_rouge():
    assert sentence_bleu("Sunset Boulevard", "sunset boulevard") == pytest.approx(100.0)
    assert sentence_bleu("London", "Paris") < 1
    r1, rl = rouge("new york city", "york new")
    # unigrams: overlap 2, P = 2/3, R = 1 -> F = 0.8; LCS = 1 ("new" or "york") -> P=1/3, R=1/2 -> F=0.4
    assert r1 == pytest.approx(0.8) and rl == pytest.approx(0.4)


def test_score_answer_uses_best_alias():
    s = score_answer("It is the Cestida genus", ("The Cestida", "Venus girdle"))
    assert s.correct and s.best_alias == "The Cestida"
    # [it, is, cestida, genus] against [cestida]: P = 1/4, R = 1, F1 = 0.4
    assert s.recall == 1.0 and s.precision == pytest.approx(0.25) and s.f1 == pytest.approx(0.4)
    wrong = score_answer("Protylophreptia", ("Cestida",))
    assert not wrong.correct and wrong.f1 == 0.0
    with pytest.raises(ValueError):
        score_answer("x", ())
