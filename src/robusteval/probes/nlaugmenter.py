"""NL-Augmenter's character-level transformations, byte for byte (GEM-benchmark/NL-Augmenter, MIT).

NL-Augmenter seeds each transformation with ``seed=0`` (the global `random` or NumPy generator);
`random.Random(0)` given as ``rng`` is that generator, so `butter_fingers` and `whitespace` return
the strings of the transformations' ``test.json``. `random_upper` draws with NumPy's legacy
generator as NL-Augmenter does: its seed is taken from ``rng`` (`numpy_seed`), and
`random_upper_seeded` with seed 0 is NL-Augmenter's own call. Each keeps the registry's contract
``(text, rng, rate) -> text``; ``rate`` is the transformation's probability (NL-Augmenter's
defaults: 0.05, 0.1 and 0.1).

NL-Augmenter's ``ocr_perturbation`` renders the text as an image and reads it back with Tesseract;
it cannot be reproduced without those, and is not offered (`registry.UNAVAILABLE`).
"""

from __future__ import annotations

import random

import numpy as np

# NL-Augmenter's ButterFingersPerturbation "querty" map: wide neighbourhoods, the letter itself included.
KEY_APPROX = {
    "q": "qwasedzx", "w": "wqesadrfcx", "e": "ewrsfdqazxcvgt", "r": "retdgfwsxcvgt", "t": "tryfhgedcvbnju",
    "y": "ytugjhrfvbnji", "u": "uyihkjtgbnmlo", "i": "iuojlkyhnmlp", "o": "oipklujm", "p": "plo['ik",
    "a": "aqszwxwdce", "s": "swxadrfv", "d": "decsfaqgbv", "f": "fdgrvwsxyhn", "g": "gtbfhedcyjn",
    "h": "hyngjfrvkim", "j": "jhknugtblom", "k": "kjlinyhn", "l": "lokmpujn", "z": "zaxsvde",
    "x": "xzcsdbvfrewq", "c": "cxvdfzswergb", "v": "vcfbgxdertyn", "b": "bvnghcftyun", "n": "nbmhjvgtuik",
    "m": "mnkjloik", " ": " ",
}


def butter_fingers(text: str, rng: random.Random, prob: float = 0.05) -> str:
    """Each key becomes a nearby one (itself included) when a draw from 0..99 is at most ``prob*100``."""
    threshold = int(prob * 100)
    out = []
    for letter in text:
        lower = letter.lower()
        new = lower
        if lower in KEY_APPROX and rng.choice(range(100)) <= threshold:
            new = rng.choice(KEY_APPROX[lower])
        out.append(new.upper() if lower != letter else new)
    return "".join(out)


def whitespace(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Each space is removed with probability ``prob``; after each other character a space is added
    with probability ``prob / 2`` (NL-Augmenter: remove 0.1, add 0.05; one draw a character)."""
    add = prob / 2
    out = []
    for char in text:
        draw = rng.random()
        if char.isspace() and draw < prob:
            continue
        out.append(char)
        if not char.isspace() and draw < add:
            out.append(" ")
    return "".join(out)


def numpy_seed(rng: random.Random) -> int:
    """A NumPy legacy seed drawn from ``rng`` (0 is NL-Augmenter's own)."""
    return rng.getrandbits(32)


def random_upper_seeded(text: str, seed: int, prob: float = 0.1) -> str:
    """NL-Augmenter's RandomUpperPerturbation: ``int(len * prob)`` distinct positions, drawn by
    NumPy's legacy generator seeded with ``seed``, upper-cased."""
    state = np.random.RandomState(seed)
    positions = set(state.choice(range(len(text)), int(len(text) * prob), False).tolist()) if text else set()
    return "".join(ch.upper() if i in positions else ch for i, ch in enumerate(text))


def random_upper(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """`random_upper_seeded` with a seed from ``rng``."""
    return random_upper_seeded(text, numpy_seed(rng), prob)
