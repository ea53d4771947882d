"""The `tree` suite (LexEval): each question becomes a tree of perturbed prompts, answered closed-book
and with retrieval, to see how accuracy falls as the prompt drifts from the original.

Trees (probes/tree.py) are built once by a paraphraser model under similarity invariants, with
lexical leaves (typos, shuffles, case, spacing, look-alikes), and stored as JSON; ``--trees FILE``
evaluates stored trees against any model. Every node is answered closed-book and, per retriever,
through the RAG pipeline (rag/), whose stages are recorded so a wrong answer is attributed to
entity extraction, search, retrieval, the generator or a failed API call.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from robusteval.data.qa import NAMED, QAItem, load_qa
from robusteval.engine import gather_all
from robusteval.errors import UserError
from robusteval.metrics.stats import bootstrap
from robusteval.metrics.text import score_answer
from robusteval.probes.lexical import PERTURBATIONS
from robusteval.probes.paraphrase import Cost, Invariants, LLMParaphraser
from robusteval.probes.tree import (
    BuildSettings,
    Node,
    Shape,
    Tree,
    build_tree,
    load_trees,
    save_trees,
    trees_document,
    validate_kinds,
)
from robusteval.rag.ner import checkable_subject, ner_messages, parse_entities, spacy_entities, subject_found
from robusteval.rag.pipeline import STAGES, attribute, closed_messages, context_has_answer, rag_messages, search
from robusteval.rag.retrievers import RETRIEVERS, make_retriever
from robusteval.suites.base import SuiteContext, SuiteResult, csv_arg
from robusteval.types import GenParams, Message, Response

NAME = "tree"
DEFAULT_DATA = "squad"
MODES = ("closed", "rag")
KBS = ("local", "wikipedia")
POPULARITY_BINS = ((0, 1e2, "<100"), (1e2, 1e3, "100-1k"), (1e3, 1e4, "1k-10k"), (1e4, 1e5, "10k-100k"),
                   (1e5, math.inf, ">=100k"))
NER_MAX_TOKENS = 48


@dataclass(frozen=True)
class Options:
    trees: str | None = None  # evaluate these stored trees instead of building
    build_only: bool = False
    save_trees: str | None = None
    depth: int = 2
    paraphrases: int = 2
    lexical: int = 2
    lexical_kinds: tuple[str, ...] = tuple(PERTURBATIONS)
    typo_prob: float = 0.1
    paraphraser: str | None = None  # model spec; default: the first model under test
    paraphrase_temperature: float = 0.7
    sim_lower: float = 0.80
    sim_upper: float = 0.96
    retries: int = 5
    embedder: str = "minilm"
    modes: tuple[str, ...] = MODES
    retrievers: tuple[str, ...] = RETRIEVERS
    k: int = 3
    search_docs: int = 5
    kb: str = "local"
    corpus: str | None = None  # default: the SQuAD paragraphs when --data squad
    ner: str = "llm"  # llm | spacy:MODEL
    ner_model: str | None = None  # model spec; default: the model under test


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("trees")
    g.add_argument("--trees", help="evaluate the trees stored in this file (from `robusteval tree build`)")
    g.add_argument("--build-only", dest="build_only", action="store_true", default=None,
                   help="build (and store) the trees, answer nothing")
    g.add_argument("--save-trees", dest="save_trees", help="also write the built trees to this JSON file")
    g.add_argument("--depth", type=int, help="levels below the root (default: 2)")
    g.add_argument("--paraphrases", type=int, help="paraphrase children per node (default: 2)")
    g.add_argument("--lexical", type=int, help="lexical children per node (default: 2)")
    g.add_argument("--lexical-kinds", dest="lexical_kinds", type=csv_arg,
                   help=f"lexical perturbations to draw from (default: {','.join(PERTURBATIONS)})")
    g.add_argument("--typo-prob", dest="typo_prob", type=float,
                   help="per-character probability of lexical edits (default: 0.1)")
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


def validate(config, o: Options) -> None:
    validate_kinds(o.lexical_kinds)
    if unknown := [m for m in o.modes if m not in MODES]:
        raise UserError(f"unknown --modes {','.join(unknown)}; available: {', '.join(MODES)}")
    if unknown := [r for r in o.retrievers if r not in RETRIEVERS]:
        raise UserError(f"unknown --retrievers {','.join(unknown)}; available: {', '.join(RETRIEVERS)}")
    for ok, message in (
        (o.depth >= 1, "--depth must be >= 1"),
        (o.paraphrases >= 0 and o.lexical >= 0 and o.paraphrases + o.lexical > 0,
         "--paraphrases and --lexical must be >= 0, and not both 0"),
        (0 <= o.typo_prob <= 1, "--typo-prob must be in [0, 1]"),
        (-1 <= o.sim_lower <= o.sim_upper <= 1, "--sim-lower must be <= --sim-upper, both in [-1, 1]"),
        (o.retries >= 0, "--retries must be >= 0"),
        (o.paraphrase_temperature >= 0, "--paraphrase-temperature must be >= 0"),
        (o.k >= 1 and o.search_docs >= 1, "--k and --search-docs must be >= 1"),
        (o.kb in KBS, f"--kb must be one of {', '.join(KBS)}"),
        (bool(o.modes) or o.build_only, "give --modes closed and/or rag"),
        ("rag" not in o.modes or bool(o.retrievers), "--modes rag needs --retrievers bm25 and/or dense"),
        (o.ner == "llm" or o.ner.startswith("spacy:"), "--ner must be llm or spacy:MODEL (e.g. spacy:en_core_web_sm)"),
        (not (o.trees and o.build_only), "--build-only builds trees; it cannot take --trees"),
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
    """Requests by tree, each counted once (a NER reply shared by two retrievers is one request)."""

    seen: set = field(default_factory=set)
    by_tree: dict = field(default_factory=lambda: defaultdict(Cost))

    def record(self, tree_id: str, response: Response) -> None:
        if response.key not in self.seen:
            self.seen.add(response.key)
            self.by_tree[tree_id] += Cost.of(response)

    def summary(self, n_trees: int, dataset_size: int, wall_s: float, price_in: float, price_out: float) -> dict:
        return cost_summary(dict(self.by_tree), n_trees, dataset_size, wall_s, price_in, price_out)


def cost_summary(by_tree: dict[str, Cost], n_trees: int, dataset_size: int, wall_s: float, price_in: float,
                 price_out: float) -> dict:
    """Totals, per tree, mean per tree, and the mean scaled to the whole dataset."""
    total = sum(by_tree.values(), Cost())

    def money(c: Cost) -> float:
        return round((c.prompt_tokens * price_in + c.completion_tokens * price_out) / 1e6, 6)

    per = total.share(max(1, n_trees))
    scale = dataset_size / max(1, n_trees)
    return {
        "trees": n_trees, "wall_s": round(wall_s, 2),
        "total": {**total.as_dict(), "tokens": round(total.tokens, 1), "price": money(total)},
        "mean_per_tree": {**per.as_dict(), "tokens": round(per.tokens, 1), "price": money(per),
                          "wall_s": round(wall_s / max(1, n_trees), 3)},
        "extrapolated_to_dataset": {"questions": dataset_size, "requests": round(total.requests * scale),
                                    "tokens": round(total.tokens * scale), "price": round(money(total) * scale, 4),
                                    "wall_s_at_this_rate": round(wall_s * scale, 1)},
        "per_tree": {t: {**c.as_dict(), "tokens": round(c.tokens, 1)} for t, c in by_tree.items()},
    }


# ---------------------------------------------------------------------------------------------
# Building


def build_settings(config, o: Options) -> BuildSettings:
    return BuildSettings(Shape(o.depth, o.paraphrases, o.lexical), Invariants(o.sim_lower, o.sim_upper), o.retries,
                         o.lexical_kinds, o.typo_prob, config.seed)


async def build_trees(ctx: SuiteContext, items: list[QAItem], dataset_size: int, data: str) -> tuple[list[Tree], dict]:
    """Build every item's tree through the engine; returns the trees and the build information
    stored with them (settings, paraphraser, cost)."""
    from robusteval.judges.embedding import load_embedder

    o, config = ctx.options, ctx.config
    settings = build_settings(config, o)
    paraphraser = await ctx.model(o.paraphraser) if o.paraphraser else ctx.models[0]
    encoder = load_embedder(o.embedder)
    para = LLMParaphraser(ctx.engine, paraphraser, temperature=o.paraphrase_temperature, seed=config.seed)
    shape = settings.shape
    ctx.engine.expect(len(items) * sum(shape.paraphrases ** k for k in range(shape.depth)))
    started = time.monotonic()
    trees = await gather_all(build_tree(item, settings, para, encoder) for item in items)
    wall = time.monotonic() - started
    cost = cost_summary({t.item.id: t.cost for t in trees}, len(trees), dataset_size, wall, config.price_in,
                        config.price_out)
    nodes = [n for t in trees for n in t.nodes]
    info = {
        "data": data, "dataset_size": dataset_size, "seed": config.seed,
        "paraphraser": {"label": paraphraser, "fingerprint": ctx.engine.fingerprint(paraphraser),
                        "temperature": o.paraphrase_temperature},
        "embedder": o.embedder,
        "settings": {"shape": asdict(shape), "sim_lower": o.sim_lower, "sim_upper": o.sim_upper, "retries": o.retries,
                     "lexical_kinds": list(o.lexical_kinds), "typo_prob": o.typo_prob},
        "full_tree_nodes": shape.node_count(),
        "nodes": {"total": len(nodes), "ok": sum(n.status == "ok" for n in nodes),
                  "rejected": sum(n.status == "rejected" for n in nodes),
                  "rejection_reasons": dict(Counter(r for n in nodes for r in n.rejections))},
        "build_cost": cost,
    }
    return trees, info


# ---------------------------------------------------------------------------------------------
# Evaluation


@dataclass(frozen=True)
class Sample:
    """One node answered in one mode (closed, rag-bm25, rag-dense); a line of samples.jsonl."""

    model: str
    item_id: str
    node: str
    level: int
    kind: str
    perturbation: str
    mode: str
    prompt: str
    response: str | None
    answer: str | None  # the reply's first line, what is scored
    error: str | None
    status: str  # ok | invalid (empty answer, counted wrong) | failed
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
    cached: bool = False
    key: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


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


def make_sample(model: str, tree: Tree, node: Node, mode: str, response: Response, *, stages: dict | None = None,
                failed_stage: str | None = None) -> Sample:
    """Score one reply; ``failed_stage`` is an error of an earlier stage (NER, search) that leaves no verdict."""
    assert node.text is not None  # only accepted nodes are evaluated, and they have a text
    error = failed_stage or response.error
    answer = None if error else first_line(response.text)
    score = score_answer(answer, tree.item.answers) if answer else None
    status = "failed" if error else ("ok" if answer else "invalid")
    correct = None if error else bool(score and score.correct)
    sample = Sample(
        model=model, item_id=tree.item.id, node=node.id, level=node.level, kind=node.kind,
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
    return Sample(**{**asdict(sample), "failure_stage": stage})


def _score(score, status: str, name: str) -> float | None:
    if status == "failed":
        return None
    return float(getattr(score, name)) if score else 0.0


@dataclass
class Evaluator:
    """Answers every node of every tree with one model, closed-book and through RAG."""

    ctx: SuiteContext
    model: str
    ner_model: str
    kb: object | None
    retrievers: dict
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
        else:
            entities = spacy_entities(node.text, o.ner.split(":", 1)[1])
        found = await search(self.kb, entities, node.text, item.answers, o.search_docs)
        subject = checkable_subject(item.subject, item.question)
        stages = {"ner_response": ner_reply, "entities": tuple(entities),
                  "subject_found": subject_found(entities, subject),
                  "search_queries": found.queries, "search_docs": found.doc_ids,
                  "search_has_answer": found.has_answer}
        out = []
        for name, retriever in self.retrievers.items():
            hits = retriever.rank(node.text, list(found.passages), o.k)
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

    async def run(self, trees: list[Tree]) -> list[Sample]:
        jobs = [(t, n) for t in trees for n in t.evaluated]
        per_node = ("closed" in self.ctx.options.modes) + (
            ("rag" in self.ctx.options.modes) * (len(self.retrievers) + (self.ctx.options.ner == "llm")))
        self.ctx.engine.expect(len(jobs) * per_node)
        return [s for group in await gather_all(self.node(t, n) for t, n in jobs) for s in group]


def make_kb(config, o: Options, data: str):
    from robusteval.rag.corpus import LocalKB, WikipediaKB, load_corpus

    cache = Path(config.cache_dir).expanduser()
    if o.kb == "wikipedia":
        return WikipediaKB(cache)
    source = o.corpus or ("squad" if data == "squad" else None)
    if source is None:
        raise UserError(f"trees of --data {data} have no local corpus: give --corpus FILE or use --kb wikipedia")
    return LocalKB(load_corpus(source), cache)


async def execute(ctx: SuiteContext) -> SuiteResult:
    o, config = ctx.options, ctx.config
    files: dict = {}
    if o.trees:
        trees, info = load_trees(o.trees)
        info = {**info, "source": o.trees}
        data = info.get("data", DEFAULT_DATA)
        read = ctx.audit.source(f"trees {o.trees}")
        read.rows_read = read.rows_used = len(trees)
        read.assume("questions", f"as built into the trees file (from {data})")
    else:
        data = config.data or DEFAULT_DATA
        items, size = load_qa(data, limit=config.limit, seed=config.seed, audit=ctx.audit.source(data))
        trees, info = await build_trees(ctx, items, size, data)
        files["trees.json"] = trees_document(trees, info)
        if o.save_trees:
            save_trees(o.save_trees, trees, info)
    if not trees:
        raise UserError("no trees to evaluate")
    extra = {"trees": dict(info), "tree_shapes": _shape_table(trees)}
    if o.build_only:
        return SuiteResult(metrics={}, samples=[], extra=extra, files=files)

    kb, retrievers = None, {}
    if "rag" in o.modes:
        from robusteval.judges.embedding import load_embedder

        kb = make_kb(config, o, data)
        encoder = load_embedder(o.embedder) if "dense" in o.retrievers else None
        retrievers = {name: make_retriever(name, encoder) for name in o.retrievers}
    ner_model = await ctx.model(o.ner_model) if o.ner_model else None
    samples, metrics_by_model, eval_cost = [], {}, {}
    dataset_size = int(info.get("dataset_size") or len(trees))
    try:
        for model in ctx.models:
            ledger = Ledger()
            started = time.monotonic()
            evaluator = Evaluator(ctx, model, ner_model or model, kb, retrievers, ledger, ctx.params)
            model_samples = await evaluator.run(trees)
            wall = time.monotonic() - started
            samples += model_samples
            metrics_by_model[model] = metrics(model_samples, trees, seed=config.seed)
            eval_cost[model] = ledger.summary(len(trees), dataset_size, wall, config.price_in, config.price_out)
    finally:
        if kb is not None and hasattr(kb, "close"):
            await kb.close()
    extra["cost"] = {"build": info.get("build_cost"), "evaluate": eval_cost}
    return SuiteResult(metrics=metrics_by_model, samples=samples, extra=extra, files=files)


def _shape_table(trees: list[Tree]) -> dict:
    nodes = [n for t in trees for n in t.nodes]
    return {"trees": len(trees), "nodes": len(nodes), "evaluated": sum(n.status == "ok" for n in nodes),
            "by_level": dict(sorted(Counter(str(n.level) for n in nodes if n.status == "ok").items())),
            "by_kind": dict(Counter(n.kind for n in nodes if n.status == "ok"))}


# ---------------------------------------------------------------------------------------------
# Metrics


def _per_item(rows: list[Sample], item_ids: list[str], value) -> np.ndarray:
    """items x [sum, count] of ``value(sample)`` over the answered samples (failed ones left out)."""
    index = {i: n for n, i in enumerate(item_ids)}
    out = np.zeros((len(item_ids), 2))
    for s in rows:
        v = value(s)
        if v is not None:
            out[index[s.item_id]] += (float(v), 1)
    return out


def _ratio(r: np.ndarray) -> float:
    n = r[:, 1].sum()
    return float(r[:, 0].sum() / n) if n else float("nan")


def pooled(rows: list[Sample], item_ids: list[str], value, *, seed: int = 0, n_resamples: int = 1000) -> dict:
    """Mean of ``value`` over samples, with a bootstrap CI resampling questions (a tree's nodes stay
    together), and how many samples it averages."""
    per_item = _per_item(rows, item_ids, value)
    est = bootstrap(per_item, _ratio, seed=seed, n_resamples=n_resamples)
    return {**est.as_dict(), "samples": int(per_item[:, 1].sum())}


def paired_difference(a: list[Sample], b: list[Sample], item_ids: list[str], value, *, seed: int = 0) -> dict:
    """mean(value | a) - mean(value | b) with a bootstrap CI over questions (both on the same trees)."""
    rows = np.column_stack([_per_item(a, item_ids, value), _per_item(b, item_ids, value)])
    return bootstrap(rows, lambda r: _ratio(r[:, :2]) - _ratio(r[:, 2:]), seed=seed).as_dict()


def popularity_bucket(popularity: float | None) -> str | None:
    if popularity is None:
        return None
    return next(label for low, high, label in POPULARITY_BINS if low <= popularity < high)


def _correct(s: Sample):
    return None if s.correct is None else float(s.correct)


TEXT_METRICS = ("f1", "precision", "recall", "bleu", "rouge1", "rougeL")


def mode_metrics(rows: list[Sample], item_ids: list[str], *, seed: int = 0) -> dict:
    """Accuracy and overlap scores of one mode, by level, node kind, perturbation and popularity."""
    def acc(subset):
        return pooled(subset, item_ids, _correct, seed=seed)

    def groups(key):
        out = defaultdict(list)
        for s in rows:
            if (k := key(s)) is not None:
                out[k].append(s)
        return dict(sorted(out.items(), key=lambda kv: str(kv[0])))

    out = {
        "accuracy": acc(rows),
        **{name: pooled(rows, item_ids, lambda s, n=name: getattr(s, n), seed=seed) for name in TEXT_METRICS},
        "by_level": {str(k): {"accuracy": acc(v), "f1": pooled(v, item_ids, lambda s: s.f1, seed=seed)}
                     for k, v in groups(lambda s: s.level).items()},
        "by_kind": {k: {"accuracy": acc(v), "f1": pooled(v, item_ids, lambda s: s.f1, seed=seed)}
                    for k, v in groups(lambda s: s.kind).items()},
        "by_perturbation": {k: acc(v) for k, v in groups(lambda s: s.perturbation).items()},
        "samples": len(rows), "invalid": sum(s.status == "invalid" for s in rows),
        "failed": sum(s.status == "failed" for s in rows),
    }
    root = [s for s in rows if s.level == 0]
    deepest = max((s.level for s in rows), default=0)
    if deepest > 0:
        out["drop_root_to_deepest"] = paired_difference(root, [s for s in rows if s.level == deepest], item_ids,
                                                        _correct, seed=seed)
    if any(s.popularity is not None for s in rows):
        out["by_popularity"] = {k: acc(v) for k, v in groups(lambda s: popularity_bucket(s.popularity)).items()}
    if any(s.mode.startswith("rag") for s in rows):
        out |= {
            "subject_found": pooled(rows, item_ids, lambda s: s.subject_found, seed=seed),
            "search_recall": pooled(rows, item_ids, lambda s: s.search_has_answer, seed=seed),
            "context_recall": pooled(rows, item_ids, lambda s: s.context_has_answer, seed=seed),
            "failure_stages": failure_table(rows),
        }
    return out


def failure_table(rows: list[Sample]) -> dict:
    """How many RAG answers each stage is blamed for, and their share of all answers."""
    counts = Counter(s.failure_stage for s in rows)
    return {stage: {"count": counts.get(stage, 0), "share": counts.get(stage, 0) / len(rows) if rows else None}
            for stage in STAGES}


def metrics(samples: list[Sample], trees: list[Tree], *, seed: int = 0) -> dict:
    """Per mode, and the comparison of each pair of modes (retrievers against each other and
    against closed-book) on the same questions."""
    item_ids = [t.item.id for t in trees]
    by_mode: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_mode[s.mode].append(s)
    out = {"modes": {m: mode_metrics(rows, item_ids, seed=seed) for m, rows in by_mode.items()}}
    names = list(by_mode)
    comparisons = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            key = lambda s: (s.node, s.item_id)  # noqa: E731
            common = {key(s) for s in by_mode[a]} & {key(s) for s in by_mode[b]}
            ra = [s for s in by_mode[a] if key(s) in common]
            rb = [s for s in by_mode[b] if key(s) in common]
            entry = {"accuracy_difference": paired_difference(ra, rb, item_ids, _correct, seed=seed)}
            if a.startswith("rag") and b.startswith("rag"):
                entry["context_recall_difference"] = paired_difference(
                    ra, rb, item_ids, lambda s: s.context_has_answer, seed=seed)
            comparisons[f"{a} - {b}"] = entry
    out["comparisons"] = comparisons
    return out


# ---------------------------------------------------------------------------------------------
# Terminal summary


def print_summary(console, result: SuiteResult) -> None:
    from rich.table import Table

    shapes = result.extra.get("tree_shapes", {})
    trees_info = result.extra.get("trees", {})
    console.print(f"trees: {shapes.get('trees')} ({shapes.get('evaluated')} of {shapes.get('nodes')} nodes evaluable; "
                  f"full tree = {trees_info.get('full_tree_nodes')} nodes)", highlight=False)
    for model, m in result.metrics.items():
        modes = m["modes"]
        levels = sorted({lv for mm in modes.values() for lv in mm["by_level"]}, key=int)
        table = Table(title=f"{model}: accuracy by tree level [95% CI]", title_justify="left")
        for col in ("mode", "all", *[f"level {lv}" for lv in levels], "paraphrase", "lexical", "F1", "ROUGE-L"):
            table.add_column(col)
        for mode, mm in modes.items():
            table.add_row(mode, _fmt(mm["accuracy"]),
                          *[_fmt(mm["by_level"].get(lv, {}).get("accuracy")) for lv in levels],
                          _fmt(mm["by_kind"].get("paraphrase", {}).get("accuracy")),
                          _fmt(mm["by_kind"].get("lexical", {}).get("accuracy")), _fmt(mm["f1"], ci=False),
                          _fmt(mm["rougeL"], ci=False))
        console.print(table)
        rag = {mode: mm for mode, mm in modes.items() if "failure_stages" in mm}
        if rag:
            stages = Table(title=f"{model}: RAG failure stage (share of answers)", title_justify="left")
            for col in ("mode", *STAGES, "context recall@k"):
                stages.add_column(col)
            for mode, mm in rag.items():
                fs = mm["failure_stages"]
                stages.add_row(mode, *[f"{fs[s]['count']} ({fs[s]['share']:.0%})" if fs[s]["share"] is not None else "-"
                                       for s in STAGES], _fmt(mm["context_recall"], ci=False))
            console.print(stages)
    cost = result.extra.get("cost") or {"build": result.extra.get("trees", {}).get("build_cost")}
    if cost.get("build"):
        b = cost["build"]
        console.print(f"build: {b['total']['requests']:.0f} requests, {b['total']['tokens']:.0f} tokens, "
                      f"{b['wall_s']} s; per tree {b['mean_per_tree']['tokens']:.0f} tokens; "
                      f"full dataset ({b['extrapolated_to_dataset']['questions']}): "
                      f"~{b['extrapolated_to_dataset']['tokens']} tokens", highlight=False)
    for model, e in (cost.get("evaluate") or {}).items():
        console.print(f"evaluate {model}: {e['total']['requests']:.0f} requests, {e['total']['tokens']:.0f} tokens, "
                      f"{e['wall_s']} s; full dataset ({e['extrapolated_to_dataset']['questions']}): "
                      f"~{e['extrapolated_to_dataset']['tokens']} tokens", highlight=False)


def _fmt(d: dict | None, *, ci: bool = True) -> str:
    if not d or d.get("value") is None:
        return "n/a"
    if not ci or d.get("ci_low") is None:
        return f"{d['value']:.3f}"
    return f"{d['value']:.3f} [{d['ci_low']:.2f}, {d['ci_high']:.2f}]"


__all__ = ["NAME", "Options", "Sample", "add_arguments", "build_trees", "execute", "metrics",
           "print_summary", "validate"]
