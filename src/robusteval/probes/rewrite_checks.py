"""Checks that a model's rewrite is a rewrite at all, shared by every rewrite (`probes.apply`) and
the tree's paraphrases (`probes.paraphrase.check_candidate`): in the right language and readable as
one, not an explanation or a list in place of the text, not a model looping. Issue 34 found all of
these kept by the similarity bounds alone ("...beats is a neurological condition...", German made
of no words, a paraphrase opening "Abandonable and Abusive: ...")."""

from __future__ import annotations

__all__ = ["form_problem", "language_problem"]

SURE = 0.9  # a language identified at least this probably is that language
# A text whose likeliest language is below this is in none (made-up words). Measured on 396 MMLU
# questions of 4+ words: 12 fall below 0.5 (formulas, "Change 34 L 18 cL to liters."), hence 0.3
# and at least FLUENT_WORDS words before a text is called no language at all.
NO_LANGUAGE = 0.3
FLUENT_WORDS = 6
MIN_WORDS = 4  # shorter texts do not tell their language
LONGER = 3  # a "rewrite" more than 3 times the original's words (+10) explains or answers instead


def language_problem(original: str, candidate: str, target: str | None = None) -> str | None:
    """``wrong_language`` when the rewrite is confidently in another language than it should be
    (``target`` for a translation, else the original's: a translation left in English, a paraphrase
    that drifted into another language), ``not_fluent`` when it reads as no language at all; None
    otherwise, or when the texts are too short to tell. Identified by py3langid's character n-grams:
    word salad in the right language passes."""
    from robusteval.data.language import identify_any

    if len(candidate.split()) < MIN_WORDS:
        return None
    lang, probability = identify_any(candidate)
    if target is not None:  # a translation into ``target`` (an ISO code: "de", "pt-br")
        if lang != target.lower().split("-")[0] and probability >= SURE:
            return "wrong_language"
        return "not_fluent" if _no_language(candidate, probability) else None
    if len(original.split()) < MIN_WORDS:
        return None
    source, source_probability = identify_any(original)
    if source_probability < SURE:
        return None
    if lang != source and probability >= SURE:
        return "wrong_language"
    return "not_fluent" if _no_language(candidate, probability) else None


def _no_language(text: str, probability: float) -> bool:
    return probability < NO_LANGUAGE and len(text.split()) >= FLUENT_WORDS


def form_problem(original: str, candidate: str) -> str | None:
    """``too_long``: far longer than the original (a definition, an answer, a list of words, not a
    rewrite); ``repetitive``: a run of three words said three times or more (a model looping)."""
    words, before = candidate.lower().split(), len(original.split())
    if len(words) > LONGER * before + 10:
        return "too_long"
    grams = [tuple(words[i:i + 3]) for i in range(len(words) - 2)]
    if grams and max(grams.count(g) for g in set(grams)) >= 3:
        return "repetitive"
    return None
