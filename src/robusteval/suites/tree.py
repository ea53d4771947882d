"""The `tree` suite (LexEval): each question becomes a tree of perturbed prompts, answered closed-book
and with retrieval, to see how accuracy falls as the prompt drifts from the original.

Trees (probes/tree.py) are built once by a rewriter model under similarity invariants, with
lexical leaves from the perturbation registry (typos, shuffles, case, spacing, look-alikes, OCR
noise...), and stored as JSON; ``--trees FILE`` evaluates stored trees against any model. Every
node is answered closed-book and, per retriever, through the RAG pipeline (rag/), whose stages are
recorded so a wrong answer is attributed to entity extraction, search, retrieval, the generator or
a failed API call. This module orchestrates: the numbers are metrics/tree.py's, the tables
report/terminal_tree.py's, the records results/tree.py's. Local models (the similarity encoder,
spaCy, the retrievers) run off the event loop (engine/local.py), their time in the cost summary.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

from rich.console import Console

from robusteval.data.qa import NAMED, QAItem, load_qa
from robusteval.engine.local import LocalWork
from robusteval.errors import UserError
from robusteval.metrics.text import score_answer
from robusteval.metrics.tree import TreeRow, cost_summary, metrics, shape_table
from robusteval.probes.apply import Rewriter
from robusteval.probes.paraphrase import Cost, Invariants, LLMParaphraser
from robusteval.probes.registry import Rewrite, get, lexeval_defaults
from robusteval.probes.tree import (
    BuildSettings,
    Node,
    Paraphraser,
    Shape,
    Tree,
    build_tree,
    check_rate,
    load_trees,
    rewrite_kinds,
    save_trees,
    text_kinds,
    trees_document,
    validate_kinds,
)
from robusteval.probes.tree_rewrites import RewriteParaphraser
from robusteval.rag.ner import checkable_subject, ner_messages, parse_entities, spacy_entities, subject_found
from robusteval.rag.pipeline import attribute, closed_messages, context_has_answer, rag_messages, search
from robusteval.rag.retrievers import RETRIEVERS, make_retriever
from robusteval.ranges import Range
from robusteval.results.tree import TreeExtra
from robusteval.suites.base import SampleBase, SuiteContext, SuiteResult, csv_arg
from robusteval.types import GenParams, Message, Response

NAME = "tree"
DEFAULT_DATA = "squad"
MODES = ("closed", "rag")
KBS = ("local", "wikipedia")
NER_MAX_TOKENS = 48
PARAPHRASE = "paraphrase"  # LexEval's paraphrase children: `LLMParaphraser`'s batch prompt


@dataclass(frozen=True)
class Options:
    trees: str | None = None  # evaluate these stored trees instead of building
    build_only: bool = False
    save_trees: str | None = None
    depth: Annotated[int, Range(1, 10)] = 2  # a tree has (paraphrases + lexical)^depth leaves
    paraphrases: Annotated[int, Range(0, 100)] = 2
    lexical: Annotated[int, Range(0, 100)] = 2
    lexical_kinds: tuple[str, ...] = lexeval_defaults()
    paraphrase_kind: str = PARAPHRASE  # any same-language rewrite of the registry
    typo_prob: Annotated[float, Range(0, 1)] = 0.1
    paraphraser: str | None = None  # model spec; default: the first model under test
    paraphrase_temperature: Annotated[float, Range(0, 10)] = 0.7
    sim_lower: Annotated[float, Range(-1, 1)] = 0.80
    sim_upper: Annotated[float, Range(-1, 1)] = 0.96
    retries: Annotated[int, Range(0, 100)] = 5
    embedder: str = "minilm"
    modes: tuple[str, ...] = MODES
    retrievers: tuple[str, ...] = RETRIEVERS
    k: Annotated[int, Range(1, 1000)] = 3
    search_docs: Annotated[int, Range(1, 1000)] = 5
    kb: str = "local"
    corpus: str | None = None  # default: the SQuAD paragraphs when --data squad
    ner: str = "llm"  # llm | spacy:MODEL
    ner_model: str | None = None  # model spec; default: the model under test


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("trees")
    g.add_argument("--trees", help="evaluate the trees stored in this file (from `robusteval tree build`); "
                                   "--limit takes a seeded sample of them, --all every tree")
    g.add_argument("--build-only", dest="build_only", action="store_true", default=None,
                   help="build (and store) the trees, answer nothing")
    g.add_argument("--save-trees", dest="save_trees", help="also write the built trees to this JSON file")
    g.add_argument("--depth", type=int, help="levels below the root (default: 2)")
    g.add_argument("--paraphrases", type=int, help="paraphrase children per node (default: 2)")
    g.add_argument("--lexical", type=int, help="lexical children per node (default: 2)")
    g.add_argument("--lexical-kinds", dest="lexical_kinds", type=csv_arg,
                   help=f"text perturbations the lexical leaves draw from (default: {','.join(lexeval_defaults())}; "
                        f"any of: {','.join(text_kinds())})")
    g.add_argument("--paraphrase-kind", dest="paraphrase_kind",
                   help=f"the rewrite the paraphrase children are written under (default: {PARAPHRASE}; "
                        f"any of: {','.join(rewrite_kinds())})")
    g.add_argument("--typo-prob", dest="typo_prob", type=float,
                   help="per-spot probability of the lexical leaves' edits (default: 0.1); refused with a kind "
                        "that has no rate (shuffle_words, helm:lowercase, ...)")
    g.add_argument("--paraphraser", help="model spec that writes the paraphrases (default: the first --model)")
    g.add_argument("--paraphrase-temperature", dest="paraphrase_temperature", type=float,
                   help="sampling temperature of the paraphraser (default: 0.7)")
    g.add_argument("--sim-lower", dest="sim_lower", type=float, help="least cosine to the parent (default: 0.80)")
    g.add_argument("--sim-upper", dest="sim_upper", type=float, help="most cosine to the parent (default: 0.96)")
    g.add_argument("--retries", type=int, help="re-requests of a failed paraphrase (default: 5)")
    g.add_argument("--embedder", help="embeddings for the invariants and the dense retriever (default: minilm)")
    r = p.add_argument_group("answering and RAG")
    r.add_argument("--modes", type=csv_arg, help="closed and/or rag (default: closed,rag)")
    r.add_argument("--retrievers", type=csv_arg, help="bm25 and/or dense (default: bm25,dense)")
    r.add_argument("--k", dest="k", type=int, help="passages given to the generator (default: 3)")
    r.add_argument("--search-docs", dest="search_docs", type=int, help="documents the search returns (default: 5)")
    r.add_argument("--kb", choices=KBS, help="knowledge base: local corpus or the Wikipedia API (default: local)")
    r.add_argument("--corpus", help="local corpus: JSONL of documents, a folder of .txt/.md, or squad")
    r.add_argument("--ner", help="entity extraction: llm (default) or spacy:MODEL")
    r.add_argument("--ner-model", dest="ner_model",
                   help="model spec for llm entity extraction (default: the model under test)")


def validate(config: Any, o: Options) -> None:
    validate_kinds(o.lexical_kinds, o.paraphrase_kind)
    check_rate(o.lexical_kinds, o.typo_prob, Options.typo_prob)
    if unknown := [m for m in o.modes if m not in MODES]:
        raise UserError(f"unknown --modes {','.join(unknown)}; available: {', '.join(MODES)}")
    if unknown := [r for r in o.retrievers if r not in RETRIEVERS]:
        raise UserError(f"unknown --retrievers {','.join(unknown)}; available: {', '.join(RETRIEVERS)}")
    for ok, message in (
        (o.paraphrases + o.lexical > 0, "--paraphrases and --lexical are both 0: a tree needs children"),
        (o.sim_lower <= o.sim_upper, "--sim-lower must be <= --sim-upper"),
        (o.kb in KBS, f"--kb must be one of {', '.join(KBS)}"),
        (bool(o.modes) or o.build_only, "give --modes closed and/or rag"),
        ("rag" not in o.modes or bool(o.retrievers), "--modes rag needs --retrievers bm25 and/or dense"),
        (o.ner == "llm" or o.ner.startswith("spacy:"), "--ner must be llm or spacy:MODEL (e.g. spacy:en_core_web_sm)"),
        (not (o.trees and o.build_only), "--build-only builds trees; it cannot take --trees"),
        (not (o.trees and config.data), f"--trees {o.trees} holds its own questions; --data cannot change them: "
                                        "drop --data, or build trees of that data with `robusteval tree build --data`"),
    ):
        if not ok:
            raise UserError(message)
    data = config.data or DEFAULT_DATA
    if config.data and config.data not in NAMED and not Path(config.data).expanduser().is_file():
        raise UserError(f"--data {config.data!r}: no such file, and not a known dataset ({', '.join(NAMED)})")
    if "rag" in o.modes and not o.build_only and o.kb == "local" and not o.corpus and data != "squad" \
            and not o.trees:
        raise UserError(f"--data {data} has no local corpus for --modes rag: give --corpus FILE, use --kb wikipedia, "
                        "or --modes closed")


# ---------------------------------------------------------------------------------------------
# Cost accounting


@dataclass
class Ledger:
    """Requests by tree, each counted once (a NER reply shared by two retrievers is one request),
    and the local models' time (spaCy, retrievers), which run off the event loop through ``local``."""

    seen: set[Any] = field(default_factory=set)
    by_tree: dict[str, Any] = field(default_factory=lambda: defaultdict(Cost))
    local: LocalWork = field(default_factory=LocalWork)

    def record(self, tree_id: str, response: Response) -> None:
        if response.key not in self.seen:
            self.seen.add(response.key)
            self.by_tree[tree_id] += Cost.of(response)

    def summary(self, n_trees: int, dataset_size: int, wall_s: float, price_in: float,
                price_out: float) -> dict[str, Any]:
        return cost_summary(dict(self.by_tree), n_trees, dataset_size, wall_s, price_in, price_out,
                            local=self.local.summary())


# ---------------------------------------------------------------------------------------------
# Building


def build_settings(config: Any, o: Options) -> BuildSettings:
    return BuildSettings(Shape(o.depth, o.paraphrases, o.lexical), Invariants(o.sim_lower, o.sim_upper), o.retries,
                         o.lexical_kinds, o.typo_prob, config.seed, o.paraphrase_kind)


def paraphraser_for(ctx: SuiteContext[Options], model: str) -> tuple[Paraphraser, int]:
    """The writer of the paraphrase children, and how many requests a node's children take at first.
    ``paraphrase`` keeps LexEval's one batch request (its prompts, hence its cache keys, unchanged);
    another rewrite asks once per child with its registry instruction."""
    o, config = ctx.options, ctx.config
    if o.paraphrase_kind == PARAPHRASE:
        return LLMParaphraser(ctx.engine, model, temperature=o.paraphrase_temperature, seed=config.seed), 1
    rewrite = get(o.paraphrase_kind)
    assert isinstance(rewrite, Rewrite)  # validate_kinds checked it
    rewriter = Rewriter(ctx.engine, model, temperature=o.paraphrase_temperature, max_tokens=LLMParaphraser.max_tokens)
    return RewriteParaphraser(rewriter, rewrite, seed=config.seed), max(1, o.paraphrases)


async def build_trees(ctx: SuiteContext[Options], items: list[QAItem], dataset_size: int,
                      data: str) -> tuple[list[Tree], dict[str, Any]]:
    """Build every item's tree through the engine; returns the trees and the build information
    stored with them (settings, paraphraser, cost)."""
    from robusteval.judges.embedding import load_embedder

    o, config = ctx.options, ctx.config
    settings = build_settings(config, o)
    paraphraser = await ctx.model(o.paraphraser) if o.paraphraser else ctx.models[0]
    local = LocalWork()
    encoder = await local.run("embedding_load", load_embedder, o.embedder)
    para, per_node = paraphraser_for(ctx, paraphraser)
    shape = settings.shape
    started = time.monotonic()
    trees = await ctx.ask_all(items, lambda item: build_tree(item, settings, para, encoder, local),
                              requests_per_job=per_node * sum(shape.paraphrases ** k for k in range(shape.depth)))
    wall = time.monotonic() - started
    cost = cost_summary({t.item.id: t.cost for t in trees}, len(trees), dataset_size, wall, config.price_in,
                        config.price_out, local=local.summary())
    nodes = [n for t in trees for n in t.nodes]
    info = {
        "data": data, "dataset_size": dataset_size, "seed": config.seed,
        "paraphraser": {"label": paraphraser, "fingerprint": ctx.engine.fingerprint(paraphraser),
                        "temperature": o.paraphrase_temperature},
        "embedder": o.embedder,
        "settings": {"shape": asdict(shape), "sim_lower": o.sim_lower, "sim_upper": o.sim_upper, "retries": o.retries,
                     "lexical_kinds": list(o.lexical_kinds), "typo_prob": o.typo_prob,
                     "paraphrase_kind": o.paraphrase_kind},
        "full_tree_nodes": shape.node_count(),
        "nodes": {"total": len(nodes), "ok": sum(n.status == "ok" for n in nodes),
                  "rejected": sum(n.status == "rejected" for n in nodes),
                  "rejection_reasons": dict[str, Any](Counter(r for n in nodes for r in n.rejections))},
        "build_cost": cost,
    }
    return trees, info


def limit_trees(trees: list[Tree], limit: int | None, seed: int) -> list[Tree]:
    """A seeded sample of ``limit`` stored trees, in the file's order (``--limit`` with ``--trees``):
    the same flag, and the same kind of draw, as for questions read from a dataset."""
    if limit is None or limit >= len(trees):
        return trees
    keep = set(random.Random(seed).sample(range(len(trees)), limit))
    return [t for i, t in enumerate(trees) if i in keep]


# ---------------------------------------------------------------------------------------------
# Evaluation


@dataclass(frozen=True, kw_only=True)
class Sample(SampleBase):
    """One node answered in one mode (closed, rag-bm25, rag-dense); a line of samples.jsonl.
    ``variant`` is the node's id (as ``node``)."""

    LABEL = ("model", "mode", "node", "kind")

    node: str
    level: int
    kind: str
    perturbation: str
    mode: str
    answer: str | None  # the reply's first line, what is scored
    correct: bool | None
    best_alias: str | None
    precision: float | None
    recall: float | None
    f1: float | None
    bleu: float | None
    rouge1: float | None
    rougeL: float | None
    sim_root: float | None
    edit_distance: int
    popularity: float | None
    prop: str | None
    ner_response: str | None = None
    entities: tuple[str, ...] | None = None
    subject_found: bool | None = None
    search_queries: tuple[str, ...] | None = None
    search_docs: tuple[str, ...] | None = None
    search_has_answer: bool | None = None
    retrieved: tuple[str, ...] | None = None
    context_has_answer: bool | None = None
    failure_stage: str | None = None

def first_line(text: str | None) -> str:
    """The short answer in a reply: its first non-empty line, without an "Answer:" label."""
    for line in (text or "").splitlines():
        line = line.strip()
        for prefix in ("answer:", "a:", "the answer is"):
            if line.lower().startswith(prefix):
                line = line[len(prefix):].strip()
        if line:
            return line
    return ""


def make_sample(model: str, tree: Tree, node: Node, mode: str, response: Response, *,
                stages: dict[str, Any] | None = None, failed_stage: str | None = None) -> Sample:
    """Score one reply; ``failed_stage`` is an error of an earlier stage (NER, search) that leaves no verdict."""
    assert node.text is not None  # only accepted nodes are evaluated, and they have a text
    error = failed_stage or response.error
    answer = None if error else first_line(response.text)
    score = score_answer(answer, tree.item.answers) if answer else None
    status = "failed" if error else ("ok" if answer else "invalid")
    correct = None if error else bool(score and score.correct)
    sample = Sample(
        model=model, item_id=tree.item.id, variant=node.id, node=node.id, level=node.level, kind=node.kind,
        perturbation=node.perturbation, mode=mode, prompt=node.text, response=response.text, answer=answer,
        error=error, status=status, correct=correct, best_alias=score.best_alias if score else None,
        precision=_score(score, status, "precision"), recall=_score(score, status, "recall"),
        f1=_score(score, status, "f1"), bleu=_score(score, status, "bleu"), rouge1=_score(score, status, "rouge1"),
        rougeL=_score(score, status, "rougeL"), sim_root=node.sim_root, edit_distance=node.edit_distance,
        popularity=tree.item.popularity, prop=tree.item.prop, cached=response.cached, key=response.key,
        **(stages or {}),
    )
    if stages is None:
        return sample
    stage = attribute(correct=correct, api_failed=error is not None, subject_found=sample.subject_found,
                      search_has_answer=bool(sample.search_has_answer),
                      context_has_answer=bool(sample.context_has_answer))
    return replace(sample, failure_stage=stage)


def _score(score: Any, status: str, name: str) -> float | None:
    if status == "failed":
        return None
    return float(getattr(score, name)) if score else 0.0


@dataclass
class Evaluator:
    """Answers every node of every tree with one model, closed-book and through RAG."""

    ctx: SuiteContext[Options]
    model: str
    ner_model: str
    kb: object | None
    retrievers: dict[str, Any]
    ledger: Ledger
    params: GenParams

    async def ask(self, tree: Tree, label: str, messages: tuple[Message, ...], params: GenParams) -> Response:
        response = await self.ctx.engine.chat(label, messages, params)
        self.ledger.record(tree.item.id, response)
        return response

    async def node(self, tree: Tree, node: Node) -> list[Sample]:
        o = self.ctx.options
        assert node.text is not None  # only accepted nodes are evaluated, and they have a text
        out = []
        if "closed" in o.modes:
            r = await self.ask(tree, self.model, closed_messages(node.text), self.params)
            out.append(make_sample(self.model, tree, node, "closed", r))
        if "rag" in o.modes:
            out += await self.rag(tree, node)
        return out

    async def rag(self, tree: Tree, node: Node) -> list[Sample]:
        o = self.ctx.options
        item = tree.item
        assert node.text is not None  # only accepted nodes are evaluated, and they have a text
        ner_error = ner_reply = None
        if o.ner == "llm":
            r = await self.ask(tree, self.ner_model, ner_messages(node.text),
                               GenParams(temperature=0.0, max_tokens=NER_MAX_TOKENS, seed=self.params.seed))
            entities, ner_error, ner_reply = parse_entities(r.text, node.text), r.error, r.text
        else:  # a local model: off the event loop, its time accounted
            entities = await self.ledger.local.run("ner", spacy_entities, node.text, o.ner.split(":", 1)[1])
        found = await search(self.kb, entities, node.text, item.answers, o.search_docs)
        subject = checkable_subject(item.subject, item.question)
        stages = {"ner_response": ner_reply, "entities": tuple(entities),
                  "subject_found": subject_found(entities, subject),
                  "search_queries": found.queries, "search_docs": found.doc_ids,
                  "search_has_answer": found.has_answer}
        out = []
        for name, retriever in self.retrievers.items():
            hits = await self.ledger.local.run(f"retrieval:{name}", retriever.rank, node.text, list(found.passages),
                                               o.k)
            stage_info = {**stages, "retrieved": tuple(h.passage.id for h in hits),
                          "context_has_answer": context_has_answer(hits, item.answers)}
            failed = f"entity extraction: {ner_error}" if ner_error else (
                f"search: {found.error}" if found.error else None)
            if failed:
                r = Response(key="", text=None, error=failed)
            else:
                r = await self.ask(tree, self.model, rag_messages(node.text, [h.passage for h in hits]), self.params)
            out.append(make_sample(self.model, tree, node, f"rag-{name}", r, stages=stage_info, failed_stage=failed))
        return out

    async def each(self, trees: list[Tree]) -> AsyncIterator[list[Sample]]:
        """Each evaluated node's samples (written to samples.jsonl), tree by tree and node by node,
        with at most a window of nodes under way (`SuiteContext.stream`): nothing of the whole run
        is held at once."""
        per_node = ("closed" in self.ctx.options.modes) + (
            ("rag" in self.ctx.options.modes) * (len(self.retrievers) + (self.ctx.options.ner == "llm")))
        jobs = ((t, n) for t in trees for n in t.evaluated)
        async for group in self.ctx.stream(jobs, lambda job: self.node(*job), requests_per_job=per_node,
                                           window=self.ctx.engine.window()):
            yield group


def make_kb(config: Any, o: Options, data: str) -> Any:
    from robusteval.rag.corpus import LocalKB, WikipediaKB, load_corpus

    cache = Path(config.cache_dir).expanduser()
    if o.kb == "wikipedia":
        return WikipediaKB(cache)
    source = o.corpus or ("squad" if data == "squad" else None)
    if source is None:
        raise UserError(f"trees of --data {data} have no local corpus: give --corpus FILE or use --kb wikipedia")
    return LocalKB(load_corpus(source), cache)


async def execute(ctx: SuiteContext[Options]) -> SuiteResult:
    o, config = ctx.options, ctx.config
    files: dict[str, Any] = {}
    if o.trees:
        stored, info = load_trees(o.trees)
        trees = ctx.shard_items(limit_trees(stored, config.limit, config.seed), key=_tree_id)
        info = {**info, "source": o.trees}
        data = info.get("data", DEFAULT_DATA)
        read = ctx.audit.source(f"trees {o.trees}", o.trees)
        read.rows_read, read.rows_used = len(stored), len(trees)
        read.assume("questions", f"as built into the trees file (from {data})")
        if len(trees) < len(stored):
            read.note(f"a seeded sample (--limit {config.limit}, seed {config.seed}) of the {len(stored)} trees; "
                      "--all evaluates every tree")
    else:
        data = config.data or DEFAULT_DATA
        items, size = load_qa(data, limit=config.limit, seed=config.seed, audit=ctx.audit.source(data))
        items = ctx.shard_items(items, key=_question_id)
        ctx.stage("building trees")
        trees, info = await build_trees(ctx, items, size, data)
        files["trees.json"] = trees_document(trees, info)
        if o.save_trees:
            save_trees(o.save_trees, trees, info)
    if not trees:
        raise UserError("no trees to evaluate")
    extra = TreeExtra(trees=dict(info), tree_shapes=shape_table(trees))
    if o.build_only:
        return SuiteResult(metrics={}, samples=[], extra=extra, files=files)

    kb, retrievers = None, {}
    setup = LocalWork()  # loading the corpus index and the dense encoder: local work too
    if "rag" in o.modes:
        from robusteval.judges.embedding import load_embedder

        kb = await setup.run("corpus_load", make_kb, config, o, data)
        encoder = await setup.run("embedding_load", load_embedder, o.embedder) if "dense" in o.retrievers else None
        retrievers = {name: make_retriever(name, encoder) for name in o.retrievers}
    ner_model = await ctx.model(o.ner_model) if o.ner_model else None
    metrics_by_model, eval_cost = {}, {}
    ctx.stage("asking")
    dataset_size = int(info.get("dataset_size") or len(trees))
    try:
        for model in ctx.models:
            ledger = Ledger()
            started = time.monotonic()
            evaluator = Evaluator(ctx, model, ner_model or model, kb, retrievers, ledger, ctx.params)
            # each sample to samples.jsonl as it is scored; the numbers read only its TreeRow
            rows: list[TreeRow] = []
            async for group in evaluator.each(trees):
                rows += (TreeRow.of(sample) for sample in group)
            wall = time.monotonic() - started
            metrics_by_model[model] = metrics(rows, trees, seed=config.seed)
            eval_cost[model] = ledger.summary(len(trees), dataset_size, wall, config.price_in, config.price_out)
    finally:
        if kb is not None and hasattr(kb, "close"):
            await kb.close()
    extra = replace(extra, cost={"build": info.get("build_cost"), "evaluate": eval_cost,
                                 **({"setup": {"local_models": setup.summary()}} if setup.spent else {})})
    return SuiteResult(metrics=metrics_by_model, samples=[], extra=extra, files=files)


def _tree_id(tree: Tree) -> str:
    return tree.item.id


def _question_id(item: QAItem) -> str:
    return item.id  # a tree's id is its question's: built or read back, a question is in one shard


# ---------------------------------------------------------------------------------------------
# Terminal summary


def print_summary(console: Console, result: SuiteResult) -> None:
    from robusteval.report.terminal_tree import print_tree

    print_tree(console, result.metrics, result.extra)


__all__ = ["NAME", "Options", "Sample", "add_arguments", "build_trees", "execute", "metrics",
           "print_summary", "validate"]
