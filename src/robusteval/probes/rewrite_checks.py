"""Checks that a model's rewrite is a rewrite at all, shared by every rewrite (`probes.apply`) and
the tree's paraphrases (`probes.paraphrase.check_candidate`): in the right language and readable as
one, not an explanation or a list in place of the text, not a model looping, not English words in
no sentence's order. Issue 34 found all of
these kept by the similarity bounds alone ("...beats is a neurological condition...", German made
of no words, a paraphrase opening "Abandonable and Abusive: ...")."""

from __future__ import annotations

import re

__all__ = ["fluency_problem", "form_problem", "language_problem"]

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


# English closed-class words. Running English has 30-60% of them; a list of words has next to none,
# and words shuffled into salad put them where no sentence does ("per the which.").
ARTICLES = frozenset("a an the every my your our their its".split())  # never without a word of content after
CLAUSE_LINKS = frozenset("and or but nor which whose".split())  # never the last word of a clause
FUNCTION_WORDS = ARTICLES | CLAUSE_LINKS | frozenset(
    """this these those each his her of in on at to for from by with about into onto over under between among
    through during before after above below per than is are was were be been am do does did has have had will would
    shall should can could may might must not no it he she they them we us you i me there here that who whom what
    when where why how if then so as all any both some such only also very just too up out""".split())
_NOT_AFTER_ARTICLE = ARTICLES | CLAUSE_LINKS | frozenset(
    "of in on at to for from by with per than is are was were be been am do does did has have had".split())
_TOKEN = re.compile(r"\w+(?:'\w+)*|[.,;:!?()]")  # words (with digits: "x2", "0a1") and clause marks
_MARKS = frozenset(".,;:!?()")
SALAD_WORDS = 8  # fewer words do not tell
SALAD_PLACES = 1  # places no sentence has, more than the original has
# Measured on 395 MMLU-Pro, 1,624 AGIEval questions and 56 consistency prompts (docs/perturbations.md):
# the lowest function-word share of a real question is 0.10 (a chemical equation), the 1st percentile
# 0.15; a word list such as "Abandonable and Abusive: Abase, Abash, Abate, ..." has 0.09.
LIST_SHARE = 0.15
LIST_DROP = 0.5  # ... and a rewrite with less than half the original's share lost its sentence


def fluency_problem(original: str, candidate: str) -> str | None:
    """``word_salad`` when an English rewrite does not read as English sentences: a list of words in
    place of the text (its share of function words under `LIST_SHARE` and under half the
    original's), or two or more places where an article has no word of content after it or a
    conjunction ends a clause ("the which", "a is", "...the.", "...and."). Language identity and
    similarity pass these: the words are English and about the topic, only not a sentence (issue 34:
    a tree paraphrase opening "Abandonable and Abusive: ...", "...beats is a neurological
    condition..."). Texts of fewer than `SALAD_WORDS` words, and texts in other languages, pass."""
    from robusteval.data.language import identify_any

    tokens = [t.lower() for t in _TOKEN.findall(candidate)]
    words = [t for t in tokens if t not in _MARKS and not t.isdigit()]
    if len(words) < SALAD_WORDS or identify_any(candidate)[0] != "en":
        return None
    share = _function_share(words)
    before = [t for t in (t.lower() for t in _TOKEN.findall(original)) if t not in _MARKS and not t.isdigit()]
    if share < LIST_SHARE and (len(before) < SALAD_WORDS or share < LIST_DROP * _function_share(before)):
        return "word_salad"
    extra = _dangling(tokens) - _dangling([t.lower() for t in _TOKEN.findall(original)])
    return "word_salad" if extra >= SALAD_PLACES else None


def _function_share(words: list[str]) -> float:
    return sum(w in FUNCTION_WORDS for w in words) / len(words) if words else 0.0


def _dangling(tokens: list[str]) -> int:
    """Places no English sentence has: an article followed by a closed-class word or by the clause's
    end ("the which", "a is", "of the."), a conjunction or "which" ending a clause ("and.")."""
    count = 0
    for here, after in zip(tokens, [*tokens[1:], "."]):
        ends = after in _MARKS
        count += (here in ARTICLES and (ends or after in _NOT_AFTER_ARTICLE)) or (here in CLAUSE_LINKS and ends)
    return count
