"""OCR noise: the errors a scanner's character recogniser makes, independent of any keyboard.

Letters that look alike in print are confused ("rn" read as "m", "l" as "1", "O" as "0", "cl"
as "d"), in both directions. Each confusable spot changes with probability ``prob``; the same
seed always gives the same text. The added perturbation of the invariance core: this file plus
one line in `probes/registry.py` make it available to mcq, consistency and tree.
"""

from __future__ import annotations

import random
import re

# What a recogniser reads for what is printed (many-to-one pairs go both ways).
CONFUSIONS: dict[str, tuple[str, ...]] = {
    "rn": ("m",), "m": ("rn",), "cl": ("d",), "d": ("cl",), "vv": ("w",), "w": ("vv",),
    "l": ("1", "I"), "I": ("l", "1"), "1": ("l",), "O": ("0",), "0": ("O",), "o": ("0",),
    "S": ("5",), "5": ("S",), "B": ("8",), "8": ("B",), "e": ("c",), "c": ("e",), "h": ("b",),
    "fi": ("ﬁ",), "fl": ("ﬂ",), ",": (".",), ".": (",",),
}
_SPOTS = re.compile("|".join(sorted(map(re.escape, CONFUSIONS), key=len, reverse=True)))


def ocr_noise(text: str, rng: random.Random, prob: float = 0.1) -> str:
    """Each confusable spot (longest match first) is misread with probability ``prob``."""
    return _SPOTS.sub(lambda m: rng.choice(CONFUSIONS[m.group()]) if rng.random() < prob else m.group(), text)
