"""Retrievers: rank the passages of the documents a search returned against the question.

``bm25`` (bm25s, English stop words) and ``dense`` (cosine of sentence embeddings; the same
offline embedders as the judges). Passage vectors are computed once per text and kept, so the
same passage found for many nodes is embedded once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from robusteval.rag.corpus import Passage, bm25s_module

if TYPE_CHECKING:
    from robusteval.probes.tree import Encoder

RETRIEVERS = ("bm25", "dense")


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


class BM25Retriever:
    name = "bm25"

    def rank(self, question: str, passages: list[Passage], k: int) -> list[Hit]:
        """The ``k`` passages with the highest BM25 score for ``question`` (ties keep corpus order)."""
        bm25s = bm25s_module()
        if not passages:
            return []
        index = bm25s.BM25()
        index.index(bm25s.tokenize([f"{p.title}. {p.text}" for p in passages], stopwords="en",
                                   show_progress=False), show_progress=False)
        query = bm25s.tokenize([question], stopwords="en", show_progress=False, return_ids=False)
        docs, scores = index.retrieve(query, k=min(k, len(passages)), show_progress=False)
        return [Hit(passages[int(i)], float(s)) for i, s in zip(docs[0], scores[0])]


@dataclass
class DenseRetriever:
    encoder: Encoder  # encode(texts) -> normalised rows
    name: str = "dense"
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def warm(self, passages: list[Passage]) -> None:
        """Embed passages ahead of time (one batch instead of many small ones)."""
        todo = list(dict.fromkeys(p.text for p in passages if p.text not in self._vectors))
        for start in range(0, len(todo), 256):
            batch = todo[start:start + 256]
            for text, vec in zip(batch, self.encoder.encode(batch)):
                self._vectors[text] = vec

    def rank(self, question: str, passages: list[Passage], k: int) -> list[Hit]:
        """The ``k`` passages most similar (cosine) to ``question``; ties keep corpus order."""
        if not passages:
            return []
        self.warm(passages)
        q = self.encoder.encode([question])[0]
        scores = np.array([float(self._vectors[p.text] @ q) for p in passages])
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(passages[int(i)], float(scores[i])) for i in order]


def make_retriever(name: str, encoder=None):
    if name == "bm25":
        return BM25Retriever()
    return DenseRetriever(encoder)
