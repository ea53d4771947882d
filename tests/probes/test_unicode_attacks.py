"""Attacks a person cannot see: each changes the characters and still reads the same."""

from __future__ import annotations

import asyncio
import random
import unicodedata

import pytest

from robusteval.probes import unicode_attacks as u
from robusteval.probes.apply import perturb_text

TEXT = "Which office of the first French republic defined the kilometre... in 1795?"
ATTACKS = ("invisible", "tags", "bidi", "homoglyph", "unicode_forms")


@pytest.mark.parametrize("name", ATTACKS)
def test_each_attack_changes_the_text_and_reads_the_same(name):
    for seed in range(20):
        out = asyncio.run(perturb_text(name, TEXT, seed=seed)).text
        assert out is not None and out != TEXT
        assert u.reads_same(out, TEXT), (name, seed, ascii(out))


def test_what_each_attack_does():
    rng = random.Random
    invisible = u.invisible(TEXT, rng(1), 1.0)
    assert {ch for ch in invisible if ch not in TEXT} <= set(u.ZERO_WIDTH)
    assert "".join(ch for ch in invisible if ch not in u.ZERO_WIDTH) == TEXT
    tagged = u.tags("Which office?", rng(5), 1.0)
    assert tagged == "Which" + "".join(chr(0xE0000 + ord(c)) for c in "Which") + " office" + "".join(
        chr(0xE0000 + ord(c)) for c in "office") + "?"
    bidi = u.bidi(TEXT, rng(2), 1.0)
    assert u.RLO in bidi and u.LRI in bidi and bidi != TEXT and u.displayed(bidi) == TEXT
    glyphs = u.homoglyph(TEXT, rng(3), 1.0)
    assert len(glyphs) == len(TEXT) and glyphs.isascii() is False
    assert all(a == b or unicodedata.name(b).startswith(("CYRILLIC", "GREEK")) for a, b in zip(TEXT, glyphs))
    forms = u.unicode_forms("The café's office... K", rng(4), 1.0)
    assert forms == "The\u00a0cafe\u0301's\u00a0o\ufb03ce\u2026\u00a0\u212a"
    assert unicodedata.normalize("NFKC", forms) == "The café's office... K"


def test_reads_same_tells_a_visible_change():
    assert not u.reads_same("Which office?", "Which offica?")  # a typo is seen
    assert not u.reads_same("kilometre", "ki1ometre")  # ASCII look-alikes are not folded: a person may see them
    assert not u.reads_same(f"{u.RLO}abc{u.PDF}", "abc")  # stored forwards under an override it shows reversed
    assert u.reads_same("p\u0430ypal", "paypal")  # Cyrillic а


def test_an_output_that_would_be_seen_is_never_used():
    """The registry passes every attack's output through `unseen`: one that does not read as its
    input does comes back as the input (and a run then counts the copy as unchanged)."""
    from robusteval.probes.registry import _unseen

    seen = _unseen("seen", "a visible edit", lambda text, rng, rate: text.replace("o", "0"))
    assert seen.apply("Which office?", random.Random(0)) == "Which office?"
    assert u.unseen("abc", "a\u200bbc") == "a\u200bbc" and u.unseen("abc", "abd") == "abc"
