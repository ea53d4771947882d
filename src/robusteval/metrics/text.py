"""Short-answer scoring against gold aliases: alias match, token P/R/F1, BLEU, ROUGE-1, ROUGE-L.

Normalisation follows the SQuAD evaluation script (lower case, no punctuation, no articles, single
spaces), so "The Eiffel Tower." and "eiffel tower" are the same answer.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from robusteval.readers.aliases import alias_match, normalize_answer


def token_prf(prediction: str, reference: str) -> tuple[float, float, float]:
    """SQuAD token overlap: (precision, recall, F1) of the normalised bags of words."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred or not ref:
        same = float(pred == ref)
        return same, same, same
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    p, r = common / len(pred), common / len(ref)
    return p, r, 2 * p * r / (p + r)


def sentence_bleu(prediction: str, reference: str) -> float:
    """sacrebleu sentence BLEU (0-100, exponential smoothing) on normalised text."""
    import sacrebleu

    return float(sacrebleu.sentence_bleu(normalize_answer(prediction), [normalize_answer(reference)]).score)


@functools.lru_cache(maxsize=1)
def _rouge() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=False)


def rouge(prediction: str, reference: str) -> tuple[float, float]:
    """(ROUGE-1 F, ROUGE-L F) from rouge-score on normalised text."""
    scores = _rouge().score(normalize_answer(reference), normalize_answer(prediction))
    return float(scores["rouge1"].fmeasure), float(scores["rougeL"].fmeasure)


@dataclass(frozen=True)
class AnswerScore:
    """How one answer compares with the gold aliases; overlap scores are against ``best_alias``,
    the alias with the highest token F1."""

    correct: bool
    best_alias: str
    precision: float
    recall: float
    f1: float
    bleu: float
    rouge1: float
    rougeL: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_answer(answer: str, aliases: tuple[str, ...] | list[str]) -> AnswerScore:
    """Alias match plus every overlap metric against the best-matching alias."""
    if not aliases:
        raise ValueError("an answer needs at least one gold alias to be scored")
    best = max(aliases, key=lambda a: (token_prf(answer, a)[2], -len(a)))
    p, r, f1 = token_prf(answer, best)
    r1, rl = rouge(answer, best)
    return AnswerScore(alias_match(answer, aliases), best, p, r, f1, sentence_bleu(answer, best), r1, rl)
