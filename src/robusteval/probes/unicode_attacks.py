"""Attacks a person cannot see: the text reads the same, the model gets different characters.

Boucher and Anderson's "Bad Characters" (2022) and garak's 2026 probes: invisible characters
(zero-width spaces and joiners inside words; words repeated in Unicode tag characters),
bidirectional controls (isolates and marks that change nothing on screen, and words stored
backwards under a right-to-left override so they show forwards), homoglyphs (Latin letters
swapped for look-alikes of other scripts, from Unicode's confusables list as the
`confusable-homoglyphs` package ships it), and other normalisation forms of the same text
(ligatures, no-break spaces, decomposed accents, which NFKC folds back).

Each keeps the registry's contract ``(text, rng, rate) -> text``; ``rate`` is the probability per
spot. `reads_same` is the check that an output still looks like its original to a person: both,
as displayed (overrides resolved), NFKC-normalised, without invisible format characters and
mapped to Unicode's confusable skeleton, are equal. In a run every output passes through it
(`unseen`, applied by the registry).
"""

from __future__ import annotations

import random
import re
import unicodedata
from functools import cache

ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060")  # ZW space, ZW non-joiner, ZW joiner, word joiner
LRI, PDI, LRM, RLO, PDF = "\u2066", "\u2069", "\u200e", "\u202e", "\u202c"
# Spots with another form that NFKC folds back to them (longest first): ligatures, the ellipsis,
# the no-break space, the Kelvin and Angstrom signs. Letters with accents are decomposed (NFD).
FORMS = {"ffi": "\ufb03", "ffl": "\ufb04", "ff": "\ufb00", "fi": "\ufb01", "fl": "\ufb02", "...": "\u2026",
         " ": "\u00a0", "K": "\u212a", "Å": "\u212b"}
_FORM_SPOTS = re.compile("|".join(map(re.escape, sorted(FORMS, key=len, reverse=True))) + r"|[^\x00-\x7f]")
_OVERRIDE = re.compile(f"{RLO}([^{PDF}]*){PDF}")


def invisible(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """Between two letters of a word, with probability ``rate``, a zero-width character."""
    out = []
    for i, ch in enumerate(text):
        out.append(ch)
        if ch.isalpha() and i + 1 < len(text) and text[i + 1].isalpha() and rng.random() < rate:
            out.append(rng.choice(ZERO_WIDTH))
    return "".join(out)


TAG_BASE = 0xE0000  # Unicode tag characters: U+E0020..U+E007E mirror printable ASCII, and show nothing


def tags(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """After each word, with probability ``rate``, the word again in Unicode tag characters: text
    no font draws, which a tokenizer still reads ("ASCII smuggling")."""
    def word(match: re.Match[str]) -> str:
        w = match.group()
        if rng.random() >= rate or not w.isascii():
            return w
        return w + "".join(chr(TAG_BASE + ord(ch)) for ch in w)

    return re.sub(r"\w+", word, text)


def bidi(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """Each word, with probability ``rate``: isolated left-to-right, followed by a left-to-right
    mark, or stored reversed under a right-to-left override (shown forwards: Trojan Source)."""
    def word(match: re.Match[str]) -> str:
        w = match.group()
        if rng.random() >= rate:
            return w
        form = rng.randrange(3)
        return f"{LRI}{w}{PDI}" if form == 0 else f"{w}{LRM}" if form == 1 else f"{RLO}{w[::-1]}{PDF}"

    return re.sub(r"\w+", word, text)


@cache
def _homoglyphs() -> dict[str, tuple[str, ...]]:
    """Latin letter -> single Cyrillic or Greek letters that Unicode lists as confusable with it
    (scripts every common font draws; no compatibility forms: NFKC would undo them)."""
    from confusable_homoglyphs.confusables import confusables_data  # type: ignore[import-untyped]

    table = {}
    for ch in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        found = [h["c"] for h in confusables_data.get(ch, ())
                 if len(h["c"]) == 1 and unicodedata.category(h["c"]).startswith("L")
                 and h["n"].startswith(("CYRILLIC", "GREEK"))
                 and unicodedata.normalize("NFKC", h["c"]) == h["c"] and _prototype(h["c"]) == ch]
        if found:
            table[ch] = tuple(sorted(set(found)))
    return table


def homoglyph(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """Each Latin letter with a confusable in another script becomes one with probability ``rate``."""
    table = _homoglyphs()
    return "".join(rng.choice(table[ch]) if ch in table and rng.random() < rate else ch for ch in text)


def unicode_forms(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """Each spot with another form NFKC folds back (`FORMS`; an accented letter decomposed) takes
    it with probability ``rate``."""
    def spot(match: re.Match[str]) -> str:
        s = match.group()
        other = FORMS.get(s) or unicodedata.normalize("NFD", s)
        return other if other != s and rng.random() < rate else s

    return _FORM_SPOTS.sub(spot, text)


@cache
def _prototype(ch: str) -> str:
    """The ASCII letter or digit Unicode lists ``ch`` as confusable with (itself when none or ASCII)."""
    if ch.isascii():
        return ch
    from confusable_homoglyphs.confusables import confusables_data

    for h in confusables_data.get(ch, ()):
        if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalnum():
            return str(h["c"])
    return ch


def displayed(text: str) -> str:
    """What a person sees, as far as these attacks go: right-to-left overrides shown reversed,
    invisible format characters (category Cf: zero-width, bidi controls, tags) gone."""
    text = _OVERRIDE.sub(lambda m: m.group(1)[::-1], text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def skeleton(text: str) -> str:
    """The displayed text, NFKC-normalised, each character mapped to its confusable prototype."""
    return "".join(_prototype(ch) for ch in unicodedata.normalize("NFKC", displayed(text)))


def reads_same(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` look the same to a person (equal skeletons)."""
    return skeleton(a) == skeleton(b)


def unseen(text: str, out: str) -> str:
    """``out`` when it reads as ``text`` does, else ``text`` (the copy then counts as unchanged):
    the check every attack here passes through in a run (`registry`)."""
    return out if reads_same(out, text) else text
