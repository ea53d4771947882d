"""The LexEval perturbation tree: one question, paraphrases of paraphrases, typos at the leaves.

Shape ⟨depth, num_paraphrased, num_lexical⟩ as LexEval's second version: every paraphrase node
above the last level (and the root) has ``num_paraphrased`` paraphrase children and
``num_lexical`` lexical children; lexical nodes are leaves. So a full tree has
``1 + (p + l) * (1 + p + ... + p^(depth-1))`` nodes: ⟨2,2,2⟩ → 13, ⟨3,3,3⟩ → 79.

A paraphrase must still be a question and must not contain a gold answer (probes/paraphrase.py).
A paraphrase slot whose candidates never pass the invariants is kept as a ``rejected`` node (with
its last candidate and the reasons) and gets no children: it is recorded, never evaluated.

Both kinds of children come from the perturbation registry (probes/registry.py): lexical leaves
are any `TextPerturbation` (the six LexEval ones by default, ``ocr`` or any added one by name),
and the paraphrase children may be written under any same-language `Rewrite` (``paraphrase`` by
default; ``formality`` grows a tree of formal rewrites). The similarity model runs off the event
loop (engine/local.py), its time accounted.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from robusteval.data.qa import QAItem
from robusteval.engine.local import LocalWork
from robusteval.engine.runner import is_stand_in
from robusteval.errors import UserError
from robusteval.files import parse_json, read_text
from robusteval.probes import registry
from robusteval.probes.paraphrase import Candidate, Cost, Invariants, check_candidate, norm_text

TREES_VERSION = 1


@dataclass(frozen=True)
class Shape:
    depth: int = 2
    paraphrases: int = 2
    lexical: int = 2

    def node_count(self) -> int:
        """Nodes of a full tree, root included."""
        return 1 + (self.paraphrases + self.lexical) * sum(self.paraphrases ** k for k in range(self.depth))


@dataclass(frozen=True)
class Node:
    """One prompt of the tree. ``kind``: root | paraphrase | lexical; ``perturbation``: root,
    paraphrase or the lexical function's name; ``status``: ok | rejected."""

    id: str
    parent: str | None
    level: int
    kind: str
    perturbation: str
    text: str | None
    status: str = "ok"
    sim_parent: float | None = None
    sim_root: float | None = None
    edit_distance: int = 0  # characters, to the root's text
    attempts: int = 0  # paraphrase requests beyond the batch one
    rejections: tuple[str, ...] = ()  # why earlier candidates failed
    cost: Cost = field(default_factory=Cost)

    def as_dict(self) -> dict:
        return {**asdict(self), "rejections": list(self.rejections), "cost": self.cost.as_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> Node:
        return cls(**{**d, "rejections": tuple(d.get("rejections", ())), "cost": Cost(**d.get("cost", {}))})


@dataclass(frozen=True)
class Tree:
    item: QAItem
    shape: Shape
    nodes: tuple[Node, ...]
    cost: Cost = field(default_factory=Cost)  # every request made to build it

    @property
    def evaluated(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.status == "ok")

    def as_dict(self) -> dict:
        return {"item": asdict(self.item), "shape": asdict(self.shape), "cost": self.cost.as_dict(),
                "nodes": [n.as_dict() for n in self.nodes]}

    @classmethod
    def from_dict(cls, d: dict) -> Tree:
        return cls(QAItem.from_dict(d["item"]), Shape(**d["shape"]), tuple(Node.from_dict(n) for n in d["nodes"]),
                   Cost(**d.get("cost", {})))


class Paraphraser(Protocol):
    async def batch(self, text: str, n: int) -> tuple[list[str], Cost, str | None]: ...

    async def single(self, text: str, slot: int, attempt: int) -> Candidate: ...


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class BuildSettings:
    shape: Shape = Shape()
    bounds: Invariants = Invariants()
    retries: int = 5
    lexical_kinds: tuple[str, ...] = registry.lexeval_defaults()
    typo_prob: float = 0.1
    seed: int = 0
    paraphrase_kind: str = "paraphrase"  # the registry rewrite the paraphrase children are written under


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance in characters."""
    from nltk.metrics.distance import edit_distance as levenshtein

    return int(levenshtein(a, b))


def lexical_plan(node_id: str, settings: BuildSettings) -> list[str]:
    """Which perturbations a node's lexical children get: a seeded draw without replacement (with
    replacement once the children outnumber the kinds), different from node to node."""
    rng = random.Random(f"{settings.seed}:{node_id}:plan")
    kinds = list(settings.lexical_kinds)
    plan: list[str] = []
    while len(plan) < settings.shape.lexical:
        plan += rng.sample(kinds, min(len(kinds), settings.shape.lexical - len(plan)))
    return plan


class _Builder:
    """Grows one tree level by level; keeps the embeddings and texts the invariants need."""

    def __init__(self, item: QAItem, settings: BuildSettings, paraphraser: Paraphraser, encoder: Encoder,
                 local: LocalWork):
        self.item, self.settings, self.paraphraser, self.encoder = item, settings, paraphraser, encoder
        self.local = local
        self.root_vec = np.zeros(0, dtype=np.float32)  # set by `build` (the encoder runs off the event loop)
        self.vecs: dict[str, np.ndarray] = {}
        self.perturb = {kind: lexical_fn(kind, settings.typo_prob) for kind in settings.lexical_kinds}
        self.nodes = [Node("r", None, 0, "root", "root", item.question, sim_parent=1.0, sim_root=1.0)]
        self.seen = {norm_text(item.question)}  # paraphrases must differ beyond case and punctuation
        self.texts = {item.question}  # lexical leaves must differ at all
        self.cost = Cost()

    async def _vec(self, text: str) -> np.ndarray:
        vecs = await self.local.run("embedding", self.encoder.encode, [text])
        return np.asarray(vecs, dtype=np.float32)[0]

    async def build(self) -> Tree:
        self.root_vec = self.vecs["r"] = await self._vec(self.item.question)
        frontier = [self.nodes[0]]
        for level in range(1, self.settings.shape.depth + 1):
            next_frontier = []
            for parent in frontier:  # one parent at a time: the duplicate check sees every earlier node
                next_frontier += [n for n in await self._paraphrases(parent, level) if n.status == "ok"]
                await self._lexical(parent, level)
            frontier = next_frontier
        return Tree(self.item, self.settings.shape, tuple(self.nodes), self.cost)

    async def _paraphrases(self, parent: Node, level: int) -> list[Node]:
        n = self.settings.shape.paraphrases
        if n == 0:
            return []
        assert parent.text is not None  # a parent is the root or an accepted node: it has a text
        found, batch_cost, error = await self.paraphraser.batch(parent.text, n)
        self.cost += batch_cost
        children = []
        for slot in range(n):
            candidate = Candidate(found[slot] if slot < len(found) else None, Cost(), error)
            children.append(await self._slot(parent, level, slot, candidate, batch_cost.share(n)))
        return children

    async def _slot(self, parent: Node, level: int, slot: int, candidate: Candidate, cost: Cost) -> Node:
        node_id = f"{parent.id}.p{slot + 1}"
        assert parent.text is not None and parent.sim_root is not None  # the root or an accepted node
        parent_vec = self.vecs[parent.id]
        rejections: list[str] = []
        attempt = 0
        last: Node | None = None
        while True:
            if candidate.text is None:
                rejections.append("request_failed" if candidate.error else "no_candidate")
            elif is_stand_in(candidate.text):  # an estimate: planned as accepted, its subtree counted
                node = Node(node_id, parent.id, level, "paraphrase", self.settings.paraphrase_kind, candidate.text,
                            sim_parent=1.0, sim_root=1.0, attempts=attempt, cost=cost)
                self.vecs[node_id] = parent_vec
                self.seen.add(norm_text(candidate.text))
                self.texts.add(candidate.text)
                self.nodes.append(node)
                return node
            else:
                vec = await self._vec(candidate.text)
                sim_parent, sim_root = float(vec @ parent_vec), float(vec @ self.root_vec)
                last = Node(node_id, parent.id, level, "paraphrase", self.settings.paraphrase_kind, candidate.text,
                            sim_parent=sim_parent, sim_root=sim_root,
                            edit_distance=edit_distance(candidate.text, self.item.question))
                reason = check_candidate(sim_parent=sim_parent, sim_root=sim_root, parent_sim_root=parent.sim_root,
                                         duplicate=norm_text(candidate.text) in self.seen, bounds=self.settings.bounds,
                                         text=candidate.text, answers=self.item.answers, root=self.item.question)
                if reason is None:
                    node = replace(last, attempts=attempt, rejections=tuple(rejections), cost=cost)
                    self.vecs[node_id] = vec
                    self.seen.add(norm_text(candidate.text))
                    self.texts.add(candidate.text)
                    self.nodes.append(node)
                    return node
                rejections.append(reason)
            if attempt >= self.settings.retries:
                rejected = last or Node(node_id, parent.id, level, "paraphrase", self.settings.paraphrase_kind, None)
                node = replace(rejected, status="rejected", attempts=attempt, rejections=tuple(rejections), cost=cost)
                self.nodes.append(node)
                return node
            attempt += 1
            candidate = await self.paraphraser.single(parent.text, slot, attempt)
            self.cost += candidate.cost
            cost += candidate.cost

    async def _lexical(self, parent: Node, level: int) -> None:
        assert parent.text is not None  # the root or an accepted node
        for slot, kind in enumerate(lexical_plan(parent.id, self.settings)):
            node_id = f"{parent.id}.l{slot + 1}"
            rng = random.Random(f"{self.settings.seed}:{self.item.id}:{node_id}")
            perturb = self.perturb[kind]
            text = perturb(parent.text, rng)
            for _ in range(3):  # a perturbation that lands on an existing prompt draws again
                if text not in self.texts or text == parent.text:
                    break
                text = perturb(parent.text, rng)
            vec = await self._vec(text)
            reason = "unchanged" if text == parent.text else ("duplicate" if text in self.texts else None)
            if perturb is _unchanged:
                reason = registry.UNAVAILABLE_DATA
            self.nodes.append(Node(node_id, parent.id, level, "lexical", kind, text,
                                   status="ok" if reason is None else "rejected",
                                   sim_parent=float(vec @ self.vecs[parent.id]), sim_root=float(vec @ self.root_vec),
                                   edit_distance=edit_distance(text, self.item.question),
                                   rejections=() if reason is None else (reason,)))
            self.seen.add(norm_text(text))
            self.texts.add(text)


async def build_tree(item: QAItem, settings: BuildSettings, paraphraser: Paraphraser, encoder: Encoder,
                     local: LocalWork | None = None) -> Tree:
    """The perturbation tree of one question; the encoder's calls run (and are timed) in ``local``."""
    return await _Builder(item, settings, paraphraser, encoder, local or LocalWork()).build()


def lexical_fn(kind: str, prob: float) -> registry.TextFn:
    """The registered text perturbation ``kind`` at ``prob`` per spot (``--typo-prob``). For the six
    LexEval kinds this redraws with the rate doubled while nothing changed (`lexical.redraw`), so
    seeded leaves are as before. A kind without a rate ignores ``prob`` (`check_rate` refuses a
    ``--typo-prob`` given with one)."""
    p = registry.get(kind)
    if not isinstance(p, registry.TextPerturbation):
        raise UserError(f"--lexical-kinds {kind}: a rewrite by a model, not a lexical perturbation; "
                        f"give it as --paraphrase-kind {kind}")
    if p.missing:  # its data is unavailable offline (`registry.get` warned): every leaf of it is rejected
        return _unchanged
    return p.at_rate(prob)


def _unchanged(text: str, rng: random.Random) -> str:
    return text


def check_rate(kinds: tuple[str, ...], prob: float, default: float = 0.1) -> None:
    """``--typo-prob`` other than the default is refused when a lexical kind has no rate (a shuffle,
    lowercasing): it would be silently ignored for that kind."""
    if prob == default:
        return
    rateless = [k for k in kinds if isinstance(p := registry.get(k), registry.TextPerturbation) and p.rate is None]
    if rateless:
        raise UserError(f"--typo-prob {prob:g}: {', '.join(rateless)} has no rate (all or nothing); leave "
                        f"{'it' if len(rateless) == 1 else 'them'} out of --lexical-kinds, or leave --typo-prob out")


def save_trees(path: Path | str, trees: list[Tree], info: dict) -> None:
    from robusteval.files import atomic_write

    atomic_write(Path(path), json.dumps(trees_document(trees, info), indent=1, ensure_ascii=False))


def trees_document(trees: list[Tree], info: dict) -> dict:
    """The JSON of a trees file: version, how they were built, and every tree."""
    return {"version": TREES_VERSION, **info, "trees": [t.as_dict() for t in trees]}


def load_trees(path: Path | str) -> tuple[list[Tree], dict]:
    """Trees saved by `save_trees`, and the build information stored beside them."""
    p = Path(path).expanduser()
    doc = parse_json(read_text(p, f"--trees {path}"), f"--trees {path}", finite=False)  # ours: as written
    if not isinstance(doc, dict) or doc.get("version") != TREES_VERSION or not isinstance(doc.get("trees"), list):
        raise UserError(f"--trees {path}: not a trees file of version {TREES_VERSION} "
                        "(build one with `robusteval tree build`)")
    try:
        trees = [Tree.from_dict(t) for t in doc["trees"]]
    except (KeyError, TypeError) as exc:
        raise UserError(f"--trees {path}: malformed tree ({exc})") from None
    return trees, {k: v for k, v in doc.items() if k != "trees"}


def text_kinds() -> list[str]:
    """Every registered pure perturbation: what ``--lexical-kinds`` accepts."""
    return [name for name, p in registry.REGISTRY.items() if isinstance(p, registry.TextPerturbation)]


def rewrite_kinds() -> list[str]:
    """Every registered same-language rewrite: what ``--paraphrase-kind`` accepts."""
    return [name for name, p in registry.REGISTRY.items() if isinstance(p, registry.Rewrite) and p.same_language
            and not p.options_only]


def validate_kinds(kinds: tuple[str, ...], paraphrase_kind: str = "paraphrase") -> None:
    """``--lexical-kinds`` are registered text perturbations, ``--paraphrase-kind`` a registered
    rewrite that keeps the language (the similarity invariants compare texts in one language)."""
    rewrites = [k for k in kinds if isinstance(registry.REGISTRY.get(k), registry.Rewrite)]
    if rewrites:
        raise UserError(f"--lexical-kinds {','.join(rewrites)}: written by a model, not lexical perturbations; "
                        f"give one as --paraphrase-kind (lexical kinds: {', '.join(text_kinds())})")
    if unknown := [k for k in kinds if k not in text_kinds() and not (
            registry.is_perturbation(k) and isinstance(registry.get(k), registry.TextPerturbation))]:
        raise UserError(f"unknown --lexical-kinds {','.join(unknown)}; available: {', '.join(text_kinds())}")
    for k in kinds:
        registry.get(k)  # loads what it needs (HELM's word lists): a missing one ends here
    if not kinds:
        raise UserError("--lexical-kinds needs at least one perturbation")
    if paraphrase_kind not in rewrite_kinds():
        why = ("a translation: the similarity invariants cannot compare texts across languages"
               if paraphrase_kind.startswith("language:") else
               "a lexical perturbation; give it in --lexical-kinds" if paraphrase_kind in text_kinds() else
               "not a registered rewrite")
        raise UserError(f"--paraphrase-kind {paraphrase_kind}: {why}; available: {', '.join(rewrite_kinds())}")
