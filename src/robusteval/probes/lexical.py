"""Lexical perturbations of a prompt (LexEval's leaf nodes): typos, word order, case, spacing and
look-alike characters.

Each is a pure function of the text, a ``random.Random`` and a probability; the same seed always
gives the same text. `redraw` makes sure something changes: when a draw left the text as it was
(a short question and a small probability), it draws again with the probability doubled. They are
registered (with the LexEval tree's defaults marked) in `probes/registry.py`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

# QWERTY neighbours (lower case; case is restored after the swap).
KEYBOARD_NEIGHBOURS = {
    "q": "was", "w": "qesad", "e": "wsdfr", "r": "edfgt", "t": "rfghy", "y": "tghju", "u": "yhjki",
    "i": "ujklo", "o": "iklp", "p": "ol", "a": "qwszx", "s": "qweadzx", "d": "wersfxc", "f": "ertdgcv",
    "g": "rtyfhvb", "h": "tyugjbn", "j": "yuihknm", "k": "uiojlm", "l": "iopk", "z": "asx", "x": "zsdc",
    "c": "xdfv", "v": "cfgb", "b": "vghn", "n": "bhjm", "m": "njk",
}
# LexEval's typo map: every key that touches a letter's key on a QWERTY keyboard, the digit row and
# the punctuation keys included, so "dog" can become "d0g" and "lazy" ";azy" (the LexEval thesis,
# Table 4.3). Rows with their stagger in key widths; two keys touch when they are side by side or
# in adjacent rows less than a key width apart.
QWERTY_ROWS = (("1234567890-=", 0.0), ("qwertyuiop[]", 0.5), ("asdfghjkl;'", 0.75), ("zxcvbnm,./", 1.25))


def touching_keys(rows: tuple[tuple[str, float], ...] = QWERTY_ROWS) -> dict[str, str]:
    """Each letter key -> the keys touching it (left, right, and the two above and below)."""
    at = {key: (row, i + offset) for row, (keys, offset) in enumerate(rows) for i, key in enumerate(keys)}
    return {key: "".join(other for other, (r, x) in at.items() if other != key and (
                (r == row and abs(x - x0) == 1) or (abs(r - row) == 1 and abs(x - x0) < 1)))
            for key, (row, x0) in at.items() if key.isalpha()}


LEXEVAL_NEIGHBOURS = touching_keys()
# Latin letters and the Cyrillic/Greek characters that look the same.
LOOKALIKES = {
    "a": "а", "c": "с", "e": "е", "i": "і", "o": "о", "p": "р", "x": "х", "y": "у", "s": "ѕ", "j": "ј",
    "A": "А", "B": "В", "C": "С", "E": "Е", "H": "Н", "I": "І", "K": "К", "M": "М", "O": "О", "P": "Р",
    "T": "Т", "X": "Х", "Y": "Υ",
}


def butter_fingers(text: str, rng: random.Random, prob: float = 0.1,
                   neighbours: dict[str, str] = KEYBOARD_NEIGHBOURS) -> str:
    """Each letter becomes a keyboard neighbour with probability ``prob`` (case kept): robusteval's
    letters-only map (``typo``) by default, `LEXEVAL_NEIGHBOURS` for LexEval's tree leaves."""
    out = []
    for ch in text:
        near = neighbours.get(ch.lower())
        if near and rng.random() < prob:
            new = rng.choice(near)
            ch = new.upper() if ch.isupper() else new
        out.append(ch)
    return "".join(out)


def lexeval_typos(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """`butter_fingers` with LexEval's map: digits and punctuation keys can replace letters."""
    return butter_fingers(text, rng, prob, LEXEVAL_NEIGHBOURS)


def shuffle_words(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """The words in a random order (``prob`` unused: a shuffle is all or nothing)."""
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def random_upper(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Each lower-case letter becomes upper case with probability ``prob``."""
    return "".join(ch.upper() if ch.islower() and rng.random() < prob else ch for ch in text)


def swap_chars(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Adjacent letters inside a word swap places with probability ``prob`` per position."""
    chars = list(text)
    i = 0
    while i < len(chars) - 1:
        if chars[i].isalpha() and chars[i + 1].isalpha() and chars[i] != chars[i + 1] and rng.random() < prob:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
            i += 2
        else:
            i += 1
    return "".join(chars)


def whitespace(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Each space is dropped, and each letter followed by a space, with probability ``prob``."""
    out = []
    for i, ch in enumerate(text):
        if ch == " " and rng.random() < prob:
            continue  # two words run together
        out.append(ch)
        if ch.isalpha() and i + 1 < len(text) and text[i + 1].isalpha() and rng.random() < prob / 2:
            out.append(" ")  # a word split in two
    return "".join(out)


def visual(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Each letter with a look-alike in another script is replaced by it with probability ``prob``."""
    return "".join(LOOKALIKES[ch] if ch in LOOKALIKES and rng.random() < prob else ch for ch in text)


DRAWS = 8  # draws, the probability doubling each time, before the text is given back unchanged


def redraw(fn: Callable[[str, random.Random, float], str], text: str, rng: random.Random, prob: float = 0.1) -> str:
    """``fn(text, rng, prob)``, drawn again with the probability doubled while a draw left the text
    as it was (a short question and a small probability); the text unchanged only when ``fn``
    cannot change it (no letter with a look-alike, a one-word shuffle)."""
    for attempt in range(DRAWS):
        out = fn(text, rng, min(1.0, prob * 2**attempt))
        if out != text:
            return out
    return text
