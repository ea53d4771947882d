"""The tree suite's evaluator through a real engine and store with a scripted backend: which
requests each node makes, what each stage records, and attribution when the knowledge base or
a request fails. (The real embedded model runs in test_tree_e2e.py.)"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx

from robusteval.data.qa import QAItem
from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.errors import BackendError
from robusteval.metrics.tree import metrics
from robusteval.probes.tree import Node, Shape, Tree
from robusteval.rag.corpus import LocalKB, WikipediaKB, load_corpus
from robusteval.rag.pipeline import attribute
from robusteval.rag.retrievers import BM25Retriever
from robusteval.results.codec import encode
from robusteval.suites import tree as suite
from robusteval.types import Completion, GenParams

CORPUS = Path(__file__).parent.parent / "fixtures" / "tree_corpus.jsonl"


class Scripted:
    """Answers NER with the entities, RAG with the first extract's last word when it mentions the
    lighthouse, closed-book with 'I do not know'; fails every request that mentions 'Broken'."""

    fingerprint = "scripted:v1"
    max_concurrency = 4

    def __init__(self):
        self.prompts: list[str] = []

    async def start(self):
        pass

    async def close(self):
        pass

    async def chat(self, messages, params: GenParams) -> Completion:
        text = messages[-1].content
        self.prompts.append(text)
        if "broken" in text.lower():
            raise BackendError("scripted failure", retryable=False)
        if text.startswith("List the named entities"):
            reply = '["Marla Quenby"]' if "Quenby" in text else "[]"
        elif "extracts below" in text:
            reply = "a lighthouse keeper" if "lighthouse keeper" in text else "no idea"
        else:
            reply = "I do not know"
        return Completion(reply, prompt_tokens=len(text) // 4, completion_tokens=len(reply) // 4)


def _tree(question: str) -> Tree:
    item = QAItem("q1", question, ("lighthouse keeper",), subject="Marla Quenby")
    return Tree(item, Shape(1, 0, 1), (Node("r", None, 0, "root", "root", question, sim_root=1.0),
                                       Node("r.l1", "r", 1, "lexical", "random_upper", question.upper(), sim_root=0.9)))


def _evaluate(tmp_path, tree: Tree, kb, context, modes=("closed", "rag")):
    async def go():
        store = Store(tmp_path / "store.sqlite")
        engine = Engine(store, retry=RetryPolicy(max_retries=0))
        backend = Scripted()
        await engine.add_model("m", backend)
        options = suite.Options(modes=modes, retrievers=("bm25",), k=1, search_docs=2)
        ctx = context(engine, ["m"], suite="tree", options=options)
        ev = suite.Evaluator(ctx, "m", "m", kb, {"bm25": BM25Retriever()}, suite.Ledger(), GenParams(max_tokens=8))
        try:
            return [s async for group in ev.each([tree]) for s in group], ev.ledger, backend
        finally:
            await engine.close()
            store.close()
    return asyncio.run(go())


def test_each_stage_is_recorded(tmp_path, suite_context):
    kb = LocalKB(load_corpus(str(CORPUS)), tmp_path)
    samples, ledger, backend = _evaluate(tmp_path, _tree("What was Marla Quenby's job?"), kb, suite_context)
    assert len(samples) == 4 and len(backend.prompts) == 6  # 2 nodes x (closed, NER, generator)
    root_rag = next(s for s in samples if s.node == "r" and s.mode == "rag-bm25")
    assert root_rag.entities == ("Marla Quenby",) and root_rag.subject_found is True
    assert root_rag.search_queries == ("Marla Quenby",) and root_rag.search_docs[0] == "d1"
    assert root_rag.search_has_answer and root_rag.retrieved == ("d1#0",) and root_rag.context_has_answer
    assert root_rag.correct and root_rag.failure_stage == "correct"
    closed = next(s for s in samples if s.node == "r" and s.mode == "closed")
    assert closed.correct is False and closed.failure_stage is None and closed.entities is None
    # the upper-cased node: NER finds "Marla Quenby" in "MARLA QUENBY" too (the filter ignores case)
    assert ledger.by_tree["q1"].requests == 6


def test_entities_missing_the_named_subject(tmp_path, suite_context):
    kb = LocalKB(load_corpus(str(CORPUS)), tmp_path)
    question = "What did Marla do for a living?"  # names the subject in part; the scripted NER finds nothing
    samples, _, _ = _evaluate(tmp_path, _tree(question), kb, suite_context, modes=("rag",))
    root = next(s for s in samples if s.node == "r")
    assert root.entities == () and root.search_queries == (question,)  # the question itself is searched
    assert root.subject_found is False
    assert root.failure_stage == attribute(correct=root.correct, api_failed=False, subject_found=False,
                                           search_has_answer=root.search_has_answer,
                                           context_has_answer=root.context_has_answer)


def test_api_failures_are_attributed_not_counted_wrong(tmp_path, suite_context):
    down = WikipediaKB(None, transport=httpx.MockTransport(lambda r: httpx.Response(503)))
    samples, _, _ = _evaluate(tmp_path, _tree("What was Marla Quenby's job?"), down, suite_context, modes=("rag",))
    assert {s.failure_stage for s in samples} == {"api"}
    assert all(s.status == "failed" and s.correct is None and s.error.startswith("search: Wikipedia API")
               for s in samples)
    kb = LocalKB(load_corpus(str(CORPUS)), tmp_path)
    broken, _, _ = _evaluate(tmp_path, _tree("Broken: what was Marla Quenby's job?"), kb, suite_context)
    rag = [s for s in broken if s.mode == "rag-bm25"]
    assert all(s.failure_stage == "api" and s.error.startswith("entity extraction:") for s in rag)
    assert all(s.status == "failed" for s in broken)
    m = encode(metrics(broken, [_tree("x")]))
    assert m["modes"]["closed"]["accuracy"]["value"] is None and m["modes"]["closed"]["failed"] == 2


def test_tree_build_estimate_asks_nothing(tmp_path, capsys):
    """`tree build --estimate` prints the estimate and sends no request: the stub counts every chat
    request it is sent, and must count none; no trees file and no run folder are written."""
    from robusteval.cli import main
    from robusteval.testing.openai_stub import StubServer

    out = tmp_path / "trees.json"
    with StubServer() as stub:
        code = main(["tree", "build", "--model", f"openai:stub?base_url={stub.base_url}",
                     "--data", str(Path(__file__).parent.parent / "fixtures" / "popqa_small.jsonl"), "--limit", "2",
                     "--depth", "2", "--paraphrases", "2", "--lexical", "1", "--estimate",
                     "--cache-dir", str(tmp_path / "cache"),
                     "--out", str(tmp_path / "runs"), "--output", str(out)])
        asked = stub.counters()
    captured = capsys.readouterr()
    assert code == 0
    assert asked["hits"] == {} and asked["requests"] == {}
    assert not out.exists() and not (tmp_path / "runs").exists()
    text = " ".join((captured.out + captured.err).split())
    assert "nothing was asked" in text and "no trees were written" in text
    # 6 requests (per question a batch at the root and under each of its 2 paraphrases, planned
    # as kept), 0 cached, 0 duplicates, 6 to send
    assert re.search(r"openai:stub\W+6\W+0\W+0\W+6\W", text)
