"""The RAG stages: search with the entities (or the question), context checks, prompts, and the
failure attribution on constructed cases."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from robusteval.rag.corpus import LocalKB, Passage, SearchError, load_corpus
from robusteval.rag.pipeline import attribute, closed_messages, context_has_answer, rag_messages, search
from robusteval.rag.retrievers import Hit
from robusteval.results.tree import STAGES

CORPUS = Path(__file__).parent.parent / "fixtures" / "tree_corpus.jsonl"


@pytest.mark.parametrize("case, expected", [
    (dict(correct=True, api_failed=False, subject_found=False, search_has_answer=False, context_has_answer=False),
     "correct"),
    (dict(correct=False, api_failed=False, subject_found=True, search_has_answer=True, context_has_answer=True),
     "generator"),
    (dict(correct=False, api_failed=False, subject_found=False, search_has_answer=True, context_has_answer=True),
     "generator"),  # the context had the answer: NER's miss did not matter
    (dict(correct=False, api_failed=False, subject_found=False, search_has_answer=False, context_has_answer=False),
     "entity_extraction"),
    (dict(correct=False, api_failed=False, subject_found=None, search_has_answer=False, context_has_answer=False),
     "search"),  # no subject known: the search is blamed
    (dict(correct=False, api_failed=False, subject_found=True, search_has_answer=False, context_has_answer=False),
     "search"),
    (dict(correct=False, api_failed=False, subject_found=True, search_has_answer=True, context_has_answer=False),
     "retrieval"),
    (dict(correct=None, api_failed=True, subject_found=True, search_has_answer=True, context_has_answer=True),
     "api"),
])
def test_failure_attribution(case, expected):
    assert attribute(**case) == expected
    assert expected in STAGES


def test_search_uses_entities_or_the_question(tmp_path):
    kb = LocalKB(load_corpus(str(CORPUS)), tmp_path)
    found = asyncio.run(search(kb, ["Osric Pell"], "What was Osric Pell's job?", ("cartographer",), 2))
    assert found.queries == ("Osric Pell",) and found.doc_ids == ("d3",) and found.has_answer
    assert found.passages[0].doc_id == "d3" and found.error is None
    fallback = asyncio.run(search(kb, [], "Which band did three sisters form?", ("Glimmerfall",), 2))
    assert fallback.queries == ("Which band did three sisters form?",) and "d4" in fallback.doc_ids
    missed = asyncio.run(search(kb, ["Tovren"], "q", ("cartographer",), 1))
    assert not missed.has_answer


def test_search_error_is_recorded():
    class Down:
        async def search(self, queries, n):
            raise SearchError("Wikipedia API: ConnectError")

    found = asyncio.run(search(Down(), ["Hesk"], "q", ("x",), 3))
    assert found.error == "Wikipedia API: ConnectError" and found.doc_ids == () and not found.has_answer


def test_context_and_prompts():
    p = [Passage("a#0", "a", "Hesk", "Hesk has one lighthouse."), Passage("b#0", "b", "", "Sheep graze.")]
    assert context_has_answer([Hit(p[0], 1.0)], ("lighthouse",))
    assert not context_has_answer([Hit(p[1], 1.0)], ("lighthouse",))
    text = rag_messages("How many lighthouses?", p)[0].content
    assert "[1] Hesk: Hesk has one lighthouse." in text and "[2] Sheep graze." in text
    assert text.endswith("Question: How many lighthouses?\nAnswer:")
    assert "(no extracts found)" in rag_messages("q", [])[0].content
    assert closed_messages("Where?")[0].content.endswith("Question: Where?\nAnswer:")
