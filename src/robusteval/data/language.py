"""The language of a data file, from its name or from its text, for files that do not say it.

HalluciGen's paraphrase files carry no language column: ``trial_sv.csv``, ``test_detection_sv.csv``,
``test_generation_en.csv`` say it only in their name (translation files a pair: ``trial_de_en.csv``).
A loader first reads the name; the text is identified by py3langid (langid.py's model, shipped in
its wheel, offline), restricted to the languages the task uses, both to fill in a missing name and
to check the name. What was assumed, and how, goes to the data audit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

LANGUAGES = ("en", "sv", "de", "fr")  # HalluciGen's
MIN_CONFIDENCE = 0.9  # below this the text does not tell (a few words, names only)
SAMPLE_ROWS = 50  # texts joined for one identification: enough for a clear verdict, fast
_NAME = re.compile(r"(?:^|[_\-.])(?P<a>[a-z]{2})(?:[_\-](?P<b>[a-z]{2}))?$")


@dataclass(frozen=True)
class Identified:
    """A language (``sv``) or pair (``de-en``) and how it was found."""

    lang: str
    how: str


def lang_from_name(path: str | Path) -> str | None:
    """``trial_sv.csv`` -> ``sv``; ``test_detection_de_en.csv`` -> ``de-en``; None when the name's last
    part is not one of LANGUAGES."""
    match = _NAME.search(Path(path).stem.lower())
    if not match or match["a"] not in LANGUAGES or (match["b"] and match["b"] not in LANGUAGES):
        return None
    return f"{match['a']}-{match['b']}" if match["b"] else match["a"]


@cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGES))
    return identifier


def identify(texts: list[str]) -> tuple[str, float] | None:
    """The language of ``texts`` (the first SAMPLE_ROWS joined) among LANGUAGES, with its probability;
    None when there is no text or the verdict is below MIN_CONFIDENCE."""
    sample = " ".join(t for t in texts[:SAMPLE_ROWS] if t)
    if not sample.strip():
        return None
    lang, probability = _identifier().classify(sample)
    return (str(lang), float(probability)) if probability >= MIN_CONFIDENCE else None


@cache
def _any_language():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def identify_any(text: str) -> tuple[str, float]:
    """The language of one text among all of py3langid's 97 (ISO 639-1 code), with its probability.
    A text in no language (made-up words) gets a low probability for every one of them."""
    lang, probability = _any_language().classify(text)
    return str(lang), float(probability)


__all__ = ["LANGUAGES", "Identified", "identify", "identify_any", "lang_from_name"]
