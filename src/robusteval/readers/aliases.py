"""Whether a short answer holds a gold alias: SQuAD's normalisation (lower case, no punctuation, no
articles, single spaces), so "The Eiffel Tower." and "eiffel tower" are the same answer, then a
whole-word match. A reader of replies and passages: the tree suite's scoring (`metrics.text`), its
RAG stages (`rag.pipeline`: did the search or the context hold the answer) and its paraphrase
checks (`probes.paraphrase`: did a rewrite leak it) all read answers this one way."""

from __future__ import annotations

import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…"}


def normalize_answer(text: str) -> str:
    """Lower case, strip accents' compatibility forms, punctuation and articles, collapse spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def alias_match(answer: str, aliases: tuple[str, ...] | list[str]) -> bool:
    """True when some gold alias, normalised, appears in the normalised answer as whole words."""
    padded = f" {normalize_answer(answer)} "
    return any(n and f" {n} " in padded for n in (normalize_answer(a) for a in aliases))


__all__ = ["alias_match", "normalize_answer"]
