"""Knowledge bases: the local corpus (files, JSONL, SQuAD paragraphs, cached BM25 index) and the
Wikipedia API answered by a mock transport."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from robusteval.data.qa import Document
from robusteval.errors import UserError
from robusteval.rag.corpus import LocalKB, SearchError, WikipediaKB, chunk, load_corpus, merge_rankings

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "tree_corpus.jsonl"


def test_chunk_at_sentence_boundaries():
    doc = Document("d", "T", "One two three. Four five six. Seven eight.")
    passages = chunk(doc, words=6)
    assert [p.text for p in passages] == ["One two three. Four five six.", "Seven eight."]
    assert [p.id for p in passages] == ["d#0", "d#1"] and passages[0].title == "T"
    assert [p.text for p in chunk(doc, words=100)] == [doc.text]


def test_load_corpus_jsonl_folder_and_errors(tmp_path):
    docs = load_corpus(str(CORPUS))
    assert [d.id for d in docs] == ["d1", "d2", "d3", "d4", "d5"] and docs[0].title == "Marla Quenby"
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "Old_Mill.txt").write_text("The old mill grinds barley.")
    (tmp_path / "notes" / "empty.md").write_text("   ")
    folder = load_corpus(str(tmp_path / "notes"))
    assert [(d.id, d.title) for d in folder] == [("Old_Mill.txt", "Old Mill")]
    with pytest.raises(UserError, match="no such file"):
        load_corpus(str(tmp_path / "nope"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "x"}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:1: a corpus document needs a 'text'"):
        load_corpus(str(bad))


def test_squad_corpus_offline():
    docs = load_corpus("squad")
    assert len(docs) == 803 and len({d.id for d in docs}) == 803
    assert all(d.title and d.text for d in docs)


def test_local_search_and_cached_index(tmp_path):
    kb = LocalKB(load_corpus(str(CORPUS)), tmp_path)
    assert [d.id for d in kb.rank("Osric Pell", 2)] == ["d3"]  # only documents that match a word
    assert kb.rank("zebra", 3) == []
    found = asyncio.run(kb.search(["Tovren", "Marla Quenby", "Hesk"], 3))
    assert [d.id for d in found] == ["d2", "d1", "d5"]  # each query's best first, round-robin
    assert (kb.index_dir / "bm25").is_dir()
    again = LocalKB(load_corpus(str(CORPUS)), tmp_path)  # loads the stored index
    assert [d.id for d in again.rank("lighthouse keeper", 1)] == ["d1"]
    assert kb.passages_of(found)[0].doc_id == "d2"


def test_merge_rankings():
    d = {i: Document(i, i, i) for i in "abcde"}
    assert [x.id for x in merge_rankings([[d["a"], d["b"]], [d["a"], d["c"]], [d["d"]]], 4)] == ["a", "d", "b", "c"]
    assert merge_rankings([], 3) == []


def _wiki_handler(calls: list):
    def handle(request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        calls.append(params)
        if params.get("list") == "search":
            hits = {"Hesk": [{"title": "Hesk (island)"}], "Nowhere": []}[params["srsearch"]]
            return httpx.Response(200, json={"query": {"search": hits}})
        assert params["prop"] == "extracts" and params["titles"] == "Hesk (island)"
        return httpx.Response(200, json={"query": {"pages": [
            {"title": "Hesk (island)", "extract": "Hesk is an island. It has one lighthouse."}]}})
    return handle


def test_wikipedia_search_is_cached(tmp_path):
    calls: list = []
    kb = WikipediaKB(tmp_path, transport=httpx.MockTransport(_wiki_handler(calls)))
    docs = asyncio.run(kb.search(["Hesk", "Nowhere"], 3))
    assert [(d.id, d.title) for d in docs] == [("wiki:Hesk (island)", "Hesk (island)")]
    assert kb.passages_of(docs)[0].text == "Hesk is an island. It has one lighthouse."
    assert len(calls) == 3  # two searches, one extract request
    stored = json.loads((tmp_path / "wikipedia.json").read_text())
    assert stored["1:Nowhere"] == []
    again = WikipediaKB(tmp_path, transport=httpx.MockTransport(_wiki_handler(calls)))
    assert asyncio.run(again.search(["Hesk"], 3)) == docs and len(calls) == 3  # from the disk cache
    asyncio.run(kb.close())


def test_wikipedia_errors_are_search_errors(tmp_path):
    kb = WikipediaKB(None, transport=httpx.MockTransport(lambda r: httpx.Response(503, text="busy")))
    with pytest.raises(SearchError, match="Wikipedia API"):
        asyncio.run(kb.search(["Hesk"], 3))

    def refuse(request):
        raise httpx.ConnectError("no route to host")

    kb2 = WikipediaKB(None, transport=httpx.MockTransport(refuse))
    with pytest.raises(SearchError, match="ConnectError"):
        asyncio.run(kb2.search(["Hesk"], 3))
