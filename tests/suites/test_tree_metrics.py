"""tree suite: scoring a node's reply, metrics by level/kind/popularity with CIs, the failure table,
mode comparisons, cost summaries and validation."""

from __future__ import annotations

import argparse

import pytest

from robusteval.configure import build_config
from robusteval.data.qa import QAItem
from robusteval.errors import UserError
from robusteval.metrics import tree as tree_metrics
from robusteval.probes.paraphrase import Cost
from robusteval.probes.tree import Node, Shape, Tree
from robusteval.results.codec import encode
from robusteval.suites import tree as suite
from robusteval.types import Response


def _tree(item_id: str, popularity=None) -> Tree:
    item = QAItem(item_id, "Where is Hesk?", ("north sea", "Hesk Sound"), subject="Hesk", popularity=popularity)
    nodes = (Node("r", None, 0, "root", "root", "Where is Hesk?", sim_root=1.0),
             Node("r.p1", "r", 1, "paraphrase", "paraphrase", "In which place is Hesk?", sim_root=0.9, edit_distance=9),
             Node("r.l1", "r", 1, "lexical", "butter_fingers", "Whera is Hesk?", sim_root=0.8, edit_distance=1))
    return Tree(item, Shape(1, 1, 1), nodes)


def _reply(text=None, error=None):
    return Response(key="k", text=text, error=error, prompt_tokens=10, completion_tokens=2)


def test_first_line():
    assert suite.first_line("\n  Answer: The North Sea.\nBecause...") == "The North Sea."
    assert suite.first_line("The answer is Hesk Sound") == "Hesk Sound"
    assert suite.first_line("   \n ") == "" and suite.first_line(None) == ""


def test_make_sample_scores_and_attributes():
    t = _tree("a")
    ok = suite.make_sample("m", t, t.nodes[0], "closed", _reply("It lies in the North Sea.\nMore text"))
    assert ok.correct and ok.status == "ok" and ok.best_alias == "north sea" and ok.failure_stage is None
    assert ok.answer == "It lies in the North Sea." and ok.recall == 1.0
    wrong = suite.make_sample("m", t, t.nodes[1], "closed", _reply("Far away"))
    assert wrong.correct is False and wrong.f1 == 0.0 and wrong.level == 1 and wrong.kind == "paraphrase"
    empty = suite.make_sample("m", t, t.nodes[0], "closed", _reply("  "))
    assert empty.status == "invalid" and empty.correct is False and empty.f1 == 0.0
    failed = suite.make_sample("m", t, t.nodes[0], "closed", _reply(error="timeout"))
    assert failed.status == "failed" and failed.correct is None and failed.f1 is None
    stages = {"entities": ("Hesk",), "subject_found": True, "search_has_answer": True, "context_has_answer": False}
    rag = suite.make_sample("m", t, t.nodes[0], "rag-bm25", _reply("Norway"), stages=stages)
    assert rag.failure_stage == "retrieval"
    ner_failed = suite.make_sample("m", t, t.nodes[0], "rag-bm25", Response(key="", text=None, error="x"),
                                   stages=stages, failed_stage="entity extraction: x")
    assert ner_failed.failure_stage == "api" and ner_failed.error == "entity extraction: x"


def _samples():
    """Two trees. closed: tree a right at the root only; tree b right everywhere but one failure.
    rag-bm25: a wrong everywhere (search missed), b right at the root."""
    a, b = _tree("a", popularity=50), _tree("b", popularity=5000)
    S = suite.make_sample
    rag = lambda has: {"entities": ("Hesk",), "subject_found": True, "search_has_answer": has,  # noqa: E731
                       "context_has_answer": has}
    return [a, b], [
        S("m", a, a.nodes[0], "closed", _reply("north sea")),
        S("m", a, a.nodes[1], "closed", _reply("no idea")),
        S("m", a, a.nodes[2], "closed", _reply("no idea")),
        S("m", b, b.nodes[0], "closed", _reply("north sea")),
        S("m", b, b.nodes[1], "closed", _reply("Hesk Sound")),
        S("m", b, b.nodes[2], "closed", _reply(error="boom")),
        S("m", a, a.nodes[0], "rag-bm25", _reply("x"), stages=rag(False)),
        S("m", a, a.nodes[1], "rag-bm25", _reply("x"), stages=rag(False)),
        S("m", a, a.nodes[2], "rag-bm25", _reply("x"), stages=rag(False)),
        S("m", b, b.nodes[0], "rag-bm25", _reply("north sea"), stages=rag(True)),
        S("m", b, b.nodes[1], "rag-bm25", _reply("x"), stages=rag(True)),
        S("m", b, b.nodes[2], "rag-bm25", _reply("x"), stages=rag(True)),
    ]


def test_metrics_by_level_kind_popularity():
    trees, samples = _samples()
    m = encode(tree_metrics.metrics(samples, trees, seed=0))
    closed = m["modes"]["closed"]
    assert closed["accuracy"]["value"] == pytest.approx(3 / 5)  # the failed reply is left out
    assert closed["accuracy"]["samples"] == 5 and closed["failed"] == 1
    assert closed["by_level"]["0"]["accuracy"]["value"] == 1.0
    assert closed["by_level"]["1"]["accuracy"]["value"] == pytest.approx(1 / 3)
    assert closed["by_kind"]["lexical"]["accuracy"]["value"] == 0.0
    assert closed["by_kind"]["paraphrase"]["accuracy"]["value"] == 0.5
    assert closed["by_perturbation"]["butter_fingers"]["value"] == 0.0
    assert set(closed["by_popularity"]) == {"<100", "1k-10k"}
    assert closed["by_popularity"]["<100"]["value"] == pytest.approx(1 / 3)
    assert closed["by_popularity"]["1k-10k"]["value"] == 1.0
    # drop from root to level 1, per question paired: 1 - 1/3
    assert closed["drop_root_to_deepest"]["value"] == pytest.approx(2 / 3)
    lo, hi = closed["accuracy"]["ci_low"], closed["accuracy"]["ci_high"]
    assert lo <= 3 / 5 <= hi and lo >= 1 / 3 - 1e-9 and hi <= 1.0  # resampling the two trees
    assert "failure_stages" not in closed


def test_rag_failure_table_recalls_and_comparison():
    trees, samples = _samples()
    m = encode(tree_metrics.metrics(samples, trees, seed=0))
    rag = m["modes"]["rag-bm25"]
    table = rag["failure_stages"]
    assert table["correct"] == {"count": 1, "share": pytest.approx(1 / 6)}
    assert table["search"]["count"] == 3 and table["generator"]["count"] == 2
    assert table["retrieval"]["count"] == 0 and table["api"]["count"] == 0
    assert rag["search_recall"]["value"] == 0.5 and rag["context_recall"]["value"] == 0.5
    assert rag["subject_found"]["value"] == 1.0
    diff = m["comparisons"]["closed - rag-bm25"]["accuracy_difference"]
    # on the nodes both modes answered (b's lexical failed closed-book): closed 3/5, rag 1/6 over the same 5 + 1
    assert diff["value"] == pytest.approx(3 / 5 - 1 / 6)


def test_sensitivity_of_node_kinds_and_levels_against_the_root():
    trees, samples = _samples()
    closed = tree_metrics.metrics(samples, trees, seed=0).modes["closed"]
    # per tree, accuracy by kind (root first): a (1, lexical 0, paraphrase 0); b (1, lexical failed, paraphrase 1)
    k = closed.sensitivity_by_kind
    assert k.reference == "root" and list(k.per_variant) == ["root", "lexical", "paraphrase"]
    assert [v.accuracy.value for v in k.per_variant.values()] == pytest.approx([1.0, 0.0, 0.5])
    # PDR: lexical 1 - 0/1 (tree a only), paraphrase 1 - 1/2; flips of correctness: lexical 1/1, paraphrase 1/2
    assert [v.drop_rate.value for v in k.per_variant.values()][1:] == pytest.approx([1.0, 0.5])
    assert k.drop_rate.value == pytest.approx(0.75)
    assert k.flip_rate.value == pytest.approx(2 / 3)
    assert (k.worst_case.value, k.best_case.value) == (0.5, 1.0)  # a's worst 0, b's 1
    assert k.spread.value == 1.0 and k.avg_p.value == pytest.approx(0.5) and k.max_p.value == 1.0
    assert k.cps.value == pytest.approx(1.0 * (1 - (1.0 - 0.5)))
    assert k.prompt_sensi_score.value == pytest.approx((2 / 3 + 0) / 2)  # a: |1-0|,|1-0|,|0-0|; b: |1-1|
    assert k.consistency_rate.value is None and k.posix.value is None  # open answers: no option to agree on
    # by level: a (1, 0), b (1, 1)
    lv = closed.sensitivity_by_level
    assert lv.reference == "0" and [v.accuracy.value for v in lv.per_variant.values()] == pytest.approx([1.0, 0.5])
    assert lv.per_variant["1"].drop_rate.value == pytest.approx(0.5) and lv.flip_rate.value == pytest.approx(0.5)
    encoded = encode(closed)
    assert encoded["sensitivity_by_kind"]["worst_case"]["value"] == 0.5


def test_pooled_and_paired_by_hand():
    trees, samples = _samples()
    ids = [t.item.id for t in trees]
    closed = [s for s in samples if s.mode == "closed"]
    est = tree_metrics.pooled(closed, ids, lambda s: s.f1, seed=1).as_dict()
    assert est["value"] == pytest.approx(sum(s.f1 for s in closed if s.f1 is not None) / 5)
    same = tree_metrics.pooled_difference(closed, closed, ids, tree_metrics.correct).as_dict()
    assert same["value"] == 0 and same["ci_low"] == 0 and same["ci_high"] == 0


def test_popularity_buckets():
    assert tree_metrics.popularity_bucket(None) is None
    assert tree_metrics.popularity_bucket(0) == "<100" and tree_metrics.popularity_bucket(99.9) == "<100"
    assert tree_metrics.popularity_bucket(100) == "100-1k" and tree_metrics.popularity_bucket(2e5) == ">=100k"


def test_cost_summary_extrapolates():
    c = tree_metrics.cost_summary({"a": Cost(10, 1000, 100, 5.0), "b": Cost(20, 3000, 300, 15.0)}, 2, 100, 40.0,
                           price_in=1.0, price_out=2.0)
    assert c["total"]["requests"] == 30 and c["total"]["tokens"] == 4400
    assert c["total"]["price"] == pytest.approx((4000 * 1 + 400 * 2) / 1e6)
    assert c["mean_per_tree"]["tokens"] == 2200 and c["mean_per_tree"]["wall_s"] == 20
    assert c["extrapolated_to_dataset"] == {"questions": 100, "requests": 1500, "tokens": 220000,
                                            "price": pytest.approx(0.24), "wall_s_at_this_rate": 2000.0}
    assert c["per_tree"]["b"]["tokens"] == 3300


def test_ledger_counts_each_request_once():
    ledger = suite.Ledger()
    r = Response(key="k1", text="x", prompt_tokens=7, completion_tokens=3, latency_s=1.0)
    ledger.record("a", r)
    ledger.record("a", r)  # a NER reply shared by two retrievers
    ledger.record("b", Response(key="k2", text="y", prompt_tokens=1, completion_tokens=1))
    assert ledger.by_tree["a"] == Cost(1, 7, 3, 1.0) and ledger.by_tree["b"].tokens == 2


def _config(**flags):
    return build_config({}, {"suite": "tree", **flags})


def test_validation_messages(tmp_path):
    assert _config().options == suite.Options()
    for flags, message in [
        ({"modes": ("closed", "open")}, "unknown --modes open"),
        ({"retrievers": ("tfidf",)}, "unknown --retrievers tfidf"),
        ({"lexical_kinds": ("typos",)}, "unknown --lexical-kinds typos; available: .*ocr"),
        ({"lexical_kinds": ("paraphrase",)}, "written by a model, not lexical perturbations; give one as "
                                             "--paraphrase-kind"),
        ({"paraphrase_kind": "ocr"}, "--paraphrase-kind ocr: a lexical perturbation; give it in --lexical-kinds"),
        ({"paraphrase_kind": "language:sv"}, "--paraphrase-kind language:sv: a translation"),
        ({"paraphrase_kind": "pirate"}, "--paraphrase-kind pirate: not a registered rewrite; available: .*formality"),
        ({"trees": "t.json", "data": "squad"}, "--trees t.json holds its own questions; --data cannot change them"),
        ({"depth": 0}, r"--depth 0: out of range; it must be in \[1, 10\]"),
        ({"paraphrases": 0, "lexical": 0}, "are both 0: a tree needs children"),
        ({"sim_lower": 0.97}, "--sim-lower must be <= --sim-upper"),
        ({"ner": "stanza"}, "--ner must be llm or spacy:MODEL"),
        ({"data": "triviaqa"}, "has no local corpus"),
        ({"data": str(tmp_path / "none.jsonl")}, "no such file"),
        ({"trees": "t.json", "build_only": True}, "cannot take --trees"),
    ]:
        with pytest.raises(UserError, match=message):
            _config(**flags)
    assert _config(data="triviaqa", modes=("closed",)).options.modes == ("closed",)
    assert _config(data="triviaqa", kb="wikipedia").options.kb == "wikipedia"
    # any registered text perturbation is a lexical kind (``typo`` is the registry's name for butter_fingers)
    assert _config(lexical_kinds=("ocr", "typo")).options.lexical_kinds == ("ocr", "typo")
    assert _config(paraphrase_kind="formality").options.paraphrase_kind == "formality"


def test_flags_parse_into_options():
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    args = p.parse_args(["--depth", "3", "--modes", "closed", "--retrievers", "bm25,dense", "--k", "5",
                         "--lexical-kinds", "visual,swap_chars", "--build-only"])
    assert (args.depth, args.modes, args.k, args.lexical_kinds, args.build_only) == \
        (3, ("closed",), 5, ("visual", "swap_chars"), True)
    assert p.parse_args([]).depth is None and p.parse_args([]).build_only is None
