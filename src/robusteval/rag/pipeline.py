"""One node through RAG: entities → knowledge-base search → retriever → generator prompt, every
stage recorded, and the stage to blame when the answer is wrong.

Stages run once where they can be shared: a node's entities and search results serve every
retriever; only the ranking and the generator prompt differ per retriever.
"""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.rag.corpus import Passage, SearchError
from robusteval.rag.retrievers import Hit
from robusteval.readers.aliases import alias_match
from robusteval.types import Message

RAG_PROMPT = ("Answer the question in a few words, using the extracts below.\n\n{extracts}\n\n"
              "Question: {question}\nAnswer:")
CLOSED_PROMPT = "Answer the question in a few words.\n\nQuestion: {question}\nAnswer:"


def closed_messages(question: str) -> tuple[Message, ...]:
    return (Message("user", CLOSED_PROMPT.format(question=question)),)


def rag_messages(question: str, passages: list[Passage]) -> tuple[Message, ...]:
    extracts = "\n\n".join(f"[{i}] {p.title}: {p.text}" if p.title else f"[{i}] {p.text}"
                           for i, p in enumerate(passages, 1))
    return (Message("user", RAG_PROMPT.format(extracts=extracts or "(no extracts found)", question=question)),)


@dataclass(frozen=True)
class SearchResult:
    queries: tuple[str, ...]
    doc_ids: tuple[str, ...]
    passages: tuple[Passage, ...]
    has_answer: bool
    error: str | None = None


async def search(kb, entities: list[str], question: str, aliases: tuple[str, ...], n_docs: int) -> SearchResult:
    """The knowledge base searched for each entity (for the question itself when there is none)."""
    queries = tuple(entities) if entities else (question,)
    try:
        docs = await kb.search(list(queries), n_docs)
    except SearchError as exc:
        return SearchResult(queries, (), (), False, str(exc))
    passages = tuple(kb.passages_of(docs))
    return SearchResult(queries, tuple(d.id for d in docs), passages,
                        any(alias_match(d.text, aliases) for d in docs))


def context_has_answer(hits: list[Hit], aliases: tuple[str, ...]) -> bool:
    return any(alias_match(h.passage.text, aliases) for h in hits)


def attribute(*, correct: bool | None, api_failed: bool, subject_found: bool | None, search_has_answer: bool,
              context_has_answer: bool) -> str:
    """The first stage to blame for a RAG answer, by the chain of evidence:

    - ``api``: a model request or the knowledge-base API failed (no verdict);
    - ``correct``: the answer holds a gold alias (whatever the stages did);
    - ``generator``: the extracts in the prompt held a gold answer and the answer is still wrong;
    - ``entity_extraction``: otherwise, when the entities missed the subject of the question;
    - ``search``: the documents found held no gold answer;
    - ``retrieval``: they did, but none of the top-k passages given to the generator did.
    """
    if api_failed or correct is None:
        return "api"
    if correct:
        return "correct"
    if context_has_answer:
        return "generator"
    if subject_found is False:
        return "entity_extraction"
    return "retrieval" if search_has_answer else "search"
