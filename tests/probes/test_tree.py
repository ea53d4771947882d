"""The perturbation tree: LexEval's node counts, the invariants applied, retries, rejected slots,
seeded lexical leaves, and the trees file."""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest

from robusteval.data.qa import QAItem
from robusteval.errors import UserError
from robusteval.probes.paraphrase import Candidate, Cost, Invariants
from robusteval.probes.tree import BuildSettings, Shape, Tree, build_tree, lexical_plan, load_trees, save_trees

ITEM = QAItem("q1", "Which river flows through the old capital?", ("Vell",), subject="Vell")
STEP = 0.5  # radians per paraphrase: cos 0.5 = 0.878, inside [0.80, 0.96]; further from the root each level


class AngleEncoder:
    """Each 'plus' in a text turns its vector STEP further from the root, plus a small text-specific
    wobble, so paraphrases pass the invariants and lexical edits stay near their parent."""

    def encode(self, texts):
        rows = []
        for t in texts:
            angle = STEP * t.count("plus")
            wobble = np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) / 255.0
            v = np.concatenate([[np.cos(angle), np.sin(angle)], 0.01 * wobble])
            rows.append(v / np.linalg.norm(v))
        return np.array(rows)


class Scripted:
    """A paraphraser that answers from scripts: ``batch_fn(text, n)`` and ``single_fn(text, slot, attempt)``."""

    def __init__(self, batch_fn=None, single_fn=None):
        self.n_batch = self.n_single = 0
        self.batch_fn = batch_fn or (lambda text, n: [f"{text} plus{i}" for i in range(n)])
        self.single_fn = single_fn or (lambda text, slot, attempt: f"{text} pluss{slot}a{attempt}")

    async def batch(self, text, n):
        self.n_batch += 1
        return self.batch_fn(text, n), Cost(1, 10 * n, 5 * n, 0.1), None

    async def single(self, text, slot, attempt):
        self.n_single += 1
        return Candidate(self.single_fn(text, slot, attempt), Cost(1, 10, 5, 0.05))


def build(shape=Shape(), paraphraser=None, **kw):
    settings = BuildSettings(shape=shape, **kw)
    return asyncio.run(build_tree(ITEM, settings, paraphraser or Scripted(), AngleEncoder()))


@pytest.mark.parametrize("shape, nodes", [((2, 2, 2), 13), ((2, 2, 3), 16), ((2, 3, 3), 25), ((3, 2, 2), 29),
                                          ((3, 2, 3), 36), ((3, 3, 3), 79)])
def test_node_counts_match_lexeval(shape, nodes):
    assert Shape(*shape).node_count() == nodes
    tree = build(Shape(*shape))
    assert len(tree.nodes) == nodes and all(n.status == "ok" for n in tree.nodes)
    depth, p, lex = shape
    assert sum(n.kind == "lexical" for n in tree.nodes) == lex * sum(p ** k for k in range(depth))
    children = {n.id: [c for c in tree.nodes if c.parent == n.id] for n in tree.nodes}
    for n in tree.nodes:  # only paraphrase nodes (and the root) above the last level have children
        has = n.kind in ("root", "paraphrase") and n.level < depth
        assert len(children[n.id]) == ((p + lex) if has else 0)
    assert len({n.id for n in tree.nodes}) == nodes


def test_nodes_record_similarities_edit_distance_and_cost():
    p = Scripted()
    tree = build(Shape(2, 2, 2), p)
    by_id = {n.id: n for n in tree.nodes}
    child = by_id["r.p1"]
    assert child.sim_parent == pytest.approx(np.cos(STEP), abs=0.01)
    assert by_id["r.p1.p2"].sim_root < child.sim_root < 1.0
    assert child.edit_distance == len(" plus0")
    assert child.cost == Cost(1, 20, 10, 0.1).share(2)  # the batch request split over its two children
    assert p.n_batch == 3 and p.n_single == 0  # root and the two level-1 paraphrases
    assert tree.cost == Cost(3, 60, 30, 0.30000000000000004)
    lexical = [n for n in tree.nodes if n.kind == "lexical"]
    assert all(n.text != by_id[n.parent].text for n in lexical)


def test_failed_candidates_are_re_requested_alone():
    # the batch repeats the question (a duplicate) for slot 0 and drifts too far for slot 1
    batch = lambda text, n: [text, f"{text} plus plus plus"]  # noqa: E731
    p = Scripted(batch_fn=batch)
    tree = build(Shape(1, 2, 0), p)
    a, b = tree.nodes[1], tree.nodes[2]
    assert a.rejections == ("duplicate",) and a.attempts == 1 and a.text.endswith("pluss0a1")
    assert b.rejections == ("too_far_from_parent",) and b.attempts == 1
    assert p.n_single == 2
    assert a.cost == Cost(1, 20, 10, 0.1).share(2) + Cost(1, 10, 5, 0.05)


def test_a_slot_that_never_passes_is_rejected_and_gets_no_children():
    p = Scripted(batch_fn=lambda text, n: [f"{text} plus0", text],
                 single_fn=lambda text, slot, attempt: text + " plus plus plus")  # always too far
    tree = build(Shape(2, 2, 1), p, retries=3)
    rejected = [n for n in tree.nodes if n.status == "rejected"]
    assert [n.id for n in rejected] == ["r.p2", "r.p1.p2"]
    assert rejected[0].attempts == 3
    assert rejected[0].rejections == ("duplicate", "too_far_from_parent", "too_far_from_parent", "too_far_from_parent")
    assert not [n for n in tree.nodes if n.parent == "r.p2"]
    assert len(tree.nodes) == 1 + 3 + 3  # root's 3 children, r.p1's 3 children; r.p2's subtree missing
    assert len(tree.evaluated) == 5


def test_missing_candidates_and_not_moving_away_from_the_root():
    # an empty batch: the slot is asked for alone
    p = Scripted(batch_fn=lambda text, n: [])
    tree = build(Shape(1, 1, 0), p)
    assert tree.nodes[1].rejections == ("no_candidate",) and tree.nodes[1].status == "ok"
    # at level 2, a candidate that turns back to the root (no 'plus': sim_root ~ 1 >= parent's 0.88)
    back = Scripted(batch_fn=lambda text, n: [ITEM.question + " again"] if "plus" in text else [f"{text} plus0"])
    tree2 = build(Shape(2, 1, 0), back, retries=0, bounds=Invariants(0.5, 1.0))
    assert tree2.nodes[2].status == "rejected" and tree2.nodes[2].rejections == ("not_further_from_root",)
    assert tree2.nodes[2].sim_root > tree2.nodes[1].sim_root


def test_lexical_leaves_are_seeded():
    one = build(Shape(2, 2, 2), seed=1)
    again = build(Shape(2, 2, 2), seed=1)
    other = build(Shape(2, 2, 2), seed=2)
    lex = lambda t: [(n.id, n.perturbation, n.text) for n in t.nodes if n.kind == "lexical"]  # noqa: E731
    assert lex(one) == lex(again) and lex(one) != lex(other)
    settings = BuildSettings(Shape(1, 0, 8), lexical_kinds=("visual", "swap_chars"))
    assert sorted(lexical_plan("r", settings)) == ["swap_chars"] * 4 + ["visual"] * 4
    plan = lexical_plan("r", BuildSettings(Shape(1, 0, 3)))
    assert len(set(plan)) == 3  # without replacement while there are kinds left


def test_trees_file_round_trip_and_errors(tmp_path):
    tree = build(Shape(2, 2, 2))
    path = tmp_path / "trees.json"
    save_trees(path, [tree], {"data": "x", "dataset_size": 7})
    loaded, info = load_trees(path)
    assert info["dataset_size"] == 7 and info["version"] == 1 and isinstance(loaded[0], Tree)
    assert loaded[0].item == tree.item and loaded[0].shape == tree.shape
    strip = lambda t: [replace(n, cost=None) for n in t.nodes]  # noqa: E731
    assert strip(loaded[0]) == strip(tree)
    assert loaded[0].cost.latency_s == pytest.approx(tree.cost.latency_s) and loaded[0].cost.tokens == tree.cost.tokens
    with pytest.raises(UserError, match="no such file"):
        load_trees(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UserError, match=r"bad\.json: not valid JSON"):
        load_trees(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text(json.dumps({"version": 0, "trees": []}))
    with pytest.raises(UserError, match="version 1"):
        load_trees(tmp_path / "old.json")


MARLA = QAItem("m1", "What is Marla Quenby's occupation?", ("historian", "historian of science"))


def _grow(item, paraphraser, shape=Shape(1, 1, 0), **kw):
    return asyncio.run(build_tree(item, BuildSettings(shape=shape, **kw), paraphraser, AngleEncoder()))


def test_an_answer_is_no_paraphrase_and_is_asked_for_again():
    """The reply that was accepted before: a statement that answers the question. It is rejected
    (not a question), the slot is asked again, and the question that comes back is kept."""
    p = Scripted(batch_fn=lambda text, n: ["Marla Quenby is a historian who writes about plus lighthouses."],
                 single_fn=lambda text, slot, attempt: "What does Marla Quenby do for a living, plus?")
    tree = _grow(MARLA, p)
    node = tree.nodes[1]
    assert node.status == "ok" and node.rejections == ("not_a_question",) and node.attempts == 1
    assert node.text == "What does Marla Quenby do for a living, plus?" and p.n_single == 1


def test_a_question_that_gives_the_answer_away_is_rejected_never_accepted():
    """Every candidate names the gold answer: each is re-requested, none is accepted, and the
    slot ends rejected with no children."""
    p = Scripted(batch_fn=lambda text, n: ["Is Marla Quenby a historian by plus occupation?"],
                 single_fn=lambda text, slot, attempt: f"Is Marla Quenby a Historian of Science plus {attempt}?")
    tree = _grow(MARLA, p, shape=Shape(2, 1, 1), retries=3)
    slot = tree.nodes[1]
    assert slot.status == "rejected" and slot.rejections == ("contains_answer",) * 4 and p.n_single == 3
    assert not [n for n in tree.nodes if n.parent == slot.id]
    assert [n.kind for n in tree.evaluated] == ["root", "lexical"]
    # an alias the root question itself contains is no leak
    named = QAItem("q2", "Which river, the Vell or the Arn, flows through the old capital?", ("Vell",))
    kept = _grow(named, Scripted(batch_fn=lambda text, n: ["Through the old capital flows which river, plus the Vell "
                                                           "or the Arn?"]))
    assert kept.nodes[1].status == "ok" and kept.nodes[1].rejections == ()


def test_registry_leaves_are_todays_lexical_texts_at_any_rate():
    """The six LexEval kinds through the registry give exactly `lexical.redraw`'s seeded texts
    (the builder used it directly before), at the default rate and at another ``typo_prob``."""
    import random

    from robusteval.probes import lexical
    from robusteval.probes.registry import lexeval_defaults

    fns = {"butter_fingers": lexical.lexeval_typos, "shuffle_words": lexical.shuffle_words,
           "random_upper": lexical.random_upper, "swap_chars": lexical.swap_chars, "whitespace": lexical.whitespace,
           "visual": lexical.visual}
    for prob in (0.1, 0.3):
        kinds = lexeval_defaults()  # the builder takes any rate (the suite's validate refuses one for a shuffle)
        tree = build(Shape(2, 2, len(kinds)), seed=3, typo_prob=prob)
        parents = {n.id: n for n in tree.nodes}
        leaves = [n for n in tree.nodes if n.kind == "lexical"]
        assert {n.perturbation for n in leaves} == set(kinds) and len(leaves) == 3 * len(kinds)
        for n in leaves:  # the first draw (no leaf here landed on an existing prompt)
            rng = random.Random(f"3:{ITEM.id}:{n.id}")
            assert n.text == lexical.redraw(fns[n.perturbation], parents[n.parent].text, rng, prob)


def test_typo_prob_is_refused_for_a_kind_without_a_rate():
    from robusteval.probes.tree import check_rate

    check_rate(("shuffle_words", "butter_fingers"), 0.1)  # the default: nothing given, nothing refused
    check_rate(("butter_fingers", "helm:typos", "invisible"), 0.3)
    with pytest.raises(UserError, match=r"--typo-prob 0.3: shuffle_words, helm:lowercase has no rate"):
        check_rate(("shuffle_words", "butter_fingers", "helm:lowercase"), 0.3)


def test_an_ocr_leaf_and_an_unknown_or_rewrite_kind():
    import random

    from robusteval.probes.ocr import ocr_noise
    from robusteval.probes.tree import lexical_fn, validate_kinds

    tree = build(Shape(1, 0, 1), lexical_kinds=("ocr",), typo_prob=1.0)
    leaf = tree.nodes[1]
    assert leaf.perturbation == "ocr" and leaf.status == "ok"
    # at rate 1.0 every confusable spot is misread on the first draw: the rate reached ocr_noise
    assert leaf.text == ocr_noise(ITEM.question, random.Random(f"0:{ITEM.id}:r.l1"), 1.0)
    assert lexical_fn("ocr", 0.1)("Which river?", random.Random(0)) != "Which river?"
    with pytest.raises(UserError, match="unknown --lexical-kinds tyop"):
        validate_kinds(("tyop",))
    with pytest.raises(UserError, match="--lexical-kinds formality: written by a model"):
        validate_kinds(("formality",))
    with pytest.raises(UserError, match="a rewrite by a model"):
        lexical_fn("dialect", 0.1)


def test_the_encoder_runs_off_the_event_loop_and_is_timed():
    """While the encoder works, the event loop keeps running: an encoder that waits for a flag only
    a coroutine on the loop sets finishes (on the loop itself it would wait forever: the wait's
    timeout turns that into a failure). Its calls are counted by `LocalWork`."""
    import threading

    from robusteval.engine.local import LocalWork

    flag = threading.Event()
    order: list[str] = []

    class Waiting(AngleEncoder):
        def encode(self, texts):
            if not flag.is_set():
                order.append("encoder waiting")
                assert flag.wait(timeout=30), "the event loop did not run while the encoder worked"
            return super().encode(texts)

    async def go():
        local = LocalWork()

        async def setter():
            while not order:
                await asyncio.sleep(0.001)
            order.append("loop ran")
            flag.set()

        tree, _ = await asyncio.gather(build_tree(ITEM, BuildSettings(shape=Shape(1, 1, 1)), Scripted(), Waiting(),
                                                  local), setter())
        return tree, local

    tree, local = asyncio.run(go())
    assert order == ["encoder waiting", "loop ran"]
    assert len(tree.nodes) == 3
    assert local.summary()["embedding"]["calls"] == 3  # root, paraphrase, lexical leaf


def test_helm_and_unseen_attack_leaves():
    """Any registered text perturbation is a leaf: HELM's typos at --typo-prob (seeded by node, not
    redrawn), an invisible-character leaf that reads as its parent does."""
    import random

    from robusteval.probes import helm
    from robusteval.probes.unicode_attacks import reads_same

    tree = build(Shape(1, 0, 2), lexical_kinds=("helm:typos", "invisible"), typo_prob=0.3)
    leaves = {n.perturbation: n for n in tree.nodes if n.kind == "lexical"}
    typos = leaves["helm:typos"]
    assert typos.text == helm.typos(ITEM.question, random.Random(f"0:{ITEM.id}:{typos.id}"), 0.3)
    assert typos.status == "ok" and typos.text != ITEM.question
    assert leaves["invisible"].status == "ok" and reads_same(leaves["invisible"].text, ITEM.question)
