"""BM25 and dense passage ranking."""

from __future__ import annotations

import numpy as np

from robusteval.rag.corpus import Passage
from robusteval.rag.retrievers import BM25Retriever, DenseRetriever, make_retriever

PASSAGES = [
    Passage("a#0", "a", "Hesk", "Hesk is an island with sheep and one lighthouse."),
    Passage("b#0", "b", "Tovren", "Tovren is a harbour town with a fish market."),
    Passage("c#0", "c", "Osric Pell", "Osric Pell drew charts of the coast as a cartographer."),
]
VOCAB = ["hesk", "island", "tovren", "harbour", "fish", "osric", "charts", "cartographer", "coast", "lighthouse"]


class BagOfWords:
    """A transparent encoder: counts of a few words, L2-normalised."""

    def __init__(self):
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        rows = np.array([[t.lower().count(w) for w in VOCAB] for t in texts], dtype=float) + 1e-6
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_bm25_ranks_by_shared_words():
    hits = BM25Retriever().rank("Which town has a fish market?", PASSAGES, 2)
    assert hits[0].passage.id == "b#0" and hits[0].score > 0
    assert len(hits) == 2 and hits[1].score == 0  # no other passage shares a word
    assert BM25Retriever().rank("anything", [], 3) == []
    assert len(BM25Retriever().rank("island", PASSAGES, 10)) == 3


def test_dense_ranks_by_cosine_and_embeds_each_passage_once():
    enc = BagOfWords()
    dense = make_retriever("dense", enc)
    hits = dense.rank("Who made charts of the coast?", PASSAGES, 2)
    assert hits[0].passage.id == "c#0" and hits[0].score > hits[1].score
    calls = enc.calls
    dense.rank("lighthouse island", PASSAGES, 1)
    assert enc.calls == calls + 1  # only the question is embedded again
    assert dense.rank("x", [], 3) == []
    assert isinstance(make_retriever("bm25"), BM25Retriever) and isinstance(dense, DenseRetriever)
