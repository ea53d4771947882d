"""Lexical perturbations: pinned seeded outputs, the property each one keeps, reproducibility."""

from __future__ import annotations

import random

import pytest

from robusteval.probes.lexical import (
    KEYBOARD_NEIGHBOURS,
    LEXEVAL_NEIGHBOURS,
    LOOKALIKES,
    butter_fingers,
    lexeval_typos,
    random_upper,
    shuffle_words,
    swap_chars,
    visual,
    whitespace,
)
from robusteval.probes.registry import REGISTRY, TextPerturbation, lexeval_defaults

TEXT = "Which river flows through the old capital city?"
PINNED = {  # seed 7, probability 0.1
    "butter_fingers": "Whidh dib3r clows thr0ugh the old cqpital city?",  # LexEval's map: digits too
    "shuffle_words": "capital city? flows the Which through river old",
    "random_upper": "WhicH riVeR fLOws through The old capitaL City?",
    "swap_chars": "Whihc rievr folws htorugh the old captial city?",
    "whitespace": "Which rive r flows throughthe old capitalcity?",
    "visual": "Which riv\u0435r flows thr\u043eugh the \u043eld c\u0430\u0440ital city?",
}


def perturb(kind: str, text: str, rng: random.Random, prob: float = 0.1) -> str:
    """A registered LexEval perturbation at ``prob`` (redrawn while nothing changed)."""
    p = REGISTRY[kind]
    assert isinstance(p, TextPerturbation) and p.lexeval
    return p.apply(text, rng, prob if p.rate is not None else None)


@pytest.mark.parametrize("kind", sorted(PINNED))
def test_seeded_outputs_are_pinned_and_reproducible(kind):
    assert perturb(kind, TEXT, random.Random(7), 0.1) == PINNED[kind]
    assert perturb(kind, TEXT, random.Random(7), 0.1) == perturb(kind, TEXT, random.Random(7), 0.1)
    assert perturb(kind, TEXT, random.Random(8), 0.1) != PINNED[kind]


def test_butter_fingers_only_hits_keyboard_neighbours_and_keeps_case():
    out = butter_fingers(TEXT, random.Random(1), 0.5)
    assert len(out) == len(TEXT)
    changed = [(a, b) for a, b in zip(TEXT, out) if a != b]
    assert changed
    for a, b in changed:
        assert b.lower() in KEYBOARD_NEIGHBOURS[a.lower()]
        assert a.isupper() == b.isupper()
    assert butter_fingers(TEXT, random.Random(1), 0.0) == TEXT


def test_lexeval_map_gives_the_thesis_typos():
    """The LexEval thesis (Table 4.3) shows "d0g" and ";azy": keys touching a letter include the
    digit row and punctuation. The tree's default typo leaf (``butter_fingers``) uses that map and
    produces both; robusteval's ``typo`` map (letters only) never can."""
    assert "0" in LEXEVAL_NEIGHBOURS["o"] and ";" in LEXEVAL_NEIGHBOURS["l"]
    assert "0" not in KEYBOARD_NEIGHBOURS["o"] and ";" not in KEYBOARD_NEIGHBOURS["l"]
    assert LEXEVAL_NEIGHBOURS["q"] == "12wa" and LEXEVAL_NEIGHBOURS["l"] == "opk;,."  # side by side, above, below
    assert lexeval_typos("the lazy dog", random.Random(1700), 0.3) == "the ;azy d0g"
    assert REGISTRY["butter_fingers"].apply("the lazy dog", random.Random(1700), 0.3) == "the ;azy d0g"
    seen = {lexeval_typos("lazy dog", random.Random(s), 0.5) for s in range(400)}
    assert any("d0g" in t for t in seen) and any(t.startswith(";azy") for t in seen)
    assert not any("0" in butter_fingers("lazy dog", random.Random(s), 0.5) for s in range(400))
    for text in seen:  # every change is a key touching the letter it replaced, case kept
        for a, b in zip("lazy dog", text):
            assert a == b or b in LEXEVAL_NEIGHBOURS[a]


def test_shuffle_keeps_the_words():
    out = shuffle_words(TEXT, random.Random(3))
    assert sorted(out.split()) == sorted(TEXT.split()) and out != TEXT


def test_random_upper_changes_case_only():
    out = random_upper(TEXT, random.Random(2), 0.3)
    assert out.lower() == TEXT.lower() and out != TEXT
    assert random_upper(TEXT, random.Random(2), 1.0) == TEXT.upper()


def test_swap_chars_swaps_neighbours_within_words():
    out = swap_chars("abcdef ghij", random.Random(0), 1.0)
    assert out == "badcfe hgji"  # every adjacent pair swapped, never across the space
    assert sorted(swap_chars(TEXT, random.Random(4), 0.2)) == sorted(TEXT)


def test_whitespace_only_moves_spaces():
    out = whitespace(TEXT, random.Random(5), 0.3)
    assert out.replace(" ", "") == TEXT.replace(" ", "") and out != TEXT


def test_visual_uses_look_alikes():
    out = visual(TEXT, random.Random(6), 1.0)
    assert all(LOOKALIKES.get(a, a) == b for a, b in zip(TEXT, out))
    assert out != TEXT and len(out) == len(TEXT)


def test_perturb_escalates_until_something_changes():
    # p=0.01 on a two-letter word usually changes nothing; perturb doubles p until it does
    assert perturb("butter_fingers", "Go", random.Random(3), 0.01) == "Ho"
    # nothing to change: the text comes back as it was (the tree then rejects the node)
    assert perturb("visual", "zzz qqq", random.Random(1), 0.1) == "zzz qqq"
    assert lexeval_defaults() == ("butter_fingers", "shuffle_words", "random_upper", "swap_chars",
                                  "whitespace", "visual")  # the tree's draw order depends on it
