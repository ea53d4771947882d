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
# Every ISO 639-1 code (the two-letter codes, ``bh`` included though withdrawn; the list has hardly
# changed since 2002): what a language setting (``--lang``, ``language:CODE``) may name. A typo such as ``zz``
# would otherwise send a model to translate into a language that does not exist, in silence.
ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz
ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik
io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml
mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd
se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi
vo wa wo xh yi yo za zh zu""".split())
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


def language_problem(code: str, *, pair: bool = False) -> str | None:
    """Why ``code`` cannot name a language (None if it can): an ISO 639-1 code (``sv``), or with
    ``pair`` two of them joined by a hyphen (``de-en``, a translation's source and target)."""
    parts = code.split("-") if pair else [code]
    if len(parts) > 2 or not all(parts):
        return "give a language code such as sv" + (", or a pair such as de-en" if pair else "")
    if unknown := [p for p in parts if p not in ISO_639_1]:
        return (f"{', '.join(repr(p) for p in unknown)} is not an ISO 639-1 language code "
                f"(two small letters, e.g. en, sv, de, fr, zh)")
    return None



@cache
def _any_language():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def identify_any(text: str) -> tuple[str, float]:
    """The language of one text among all of py3langid's 97 (ISO 639-1 code), with its probability.
    A text in no language (made-up words) gets a low probability for every one of them."""
    lang, probability = _any_language().classify(text)
    return str(lang), float(probability)


__all__ = ["ISO_639_1", "LANGUAGES", "Identified", "identify", "identify_any", "lang_from_name", "language_problem"]
