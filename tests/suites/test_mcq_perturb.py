"""mcq with perturbation families of the question (typo, ocr, paraphrase...), end to end through
the deterministic stub: exact metrics, the copies' counts, crossing with order, --estimate, the report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from robusteval.configure import build_config
from robusteval.data.mcq import load_items
from robusteval.errors import UserError
from robusteval.probes.apply import perturb_text
from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections
from robusteval.suites.mcq.copies import gold_aliases
from robusteval.testing.openai_stub import StubServer
from robusteval.types import Item

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _mcq(stub) -> tuple[str | Path, ...]:
    """``run mcq`` on the small fixture, the stub as the model under test and the rewriter."""
    return ("run", "mcq", "--quiet", "--data", FIXTURES / "mcq_small.jsonl", "--model", stub.model(),
            "--rewriter", stub.model())


def test_typo_ocr_and_paraphrase_families_through_the_stub(cli_run, mcq_file):
    with StubServer() as stub:
        run = cli_run(*_mcq(stub), "--run-id", "p", "--families", "typo,ocr,paraphrase")
        results, samples = run.written()
        report_md = (run.folder / "report.md").read_text()
    metrics = results["metrics"]["openai:stub"]
    assert list(metrics) == ["typo", "ocr", "paraphrase"]
    typo = metrics["typo"]
    # each question's group: the original and two typo copies, all kept (pure perturbations change text)
    assert list(typo["variants"]) == ["original", "typo#1", "typo#2"] and typo["samples"] == 15
    # the stub's replies are a hash of the request: these numbers are the same on every run
    for family, (accuracy, consistency, per_variant) in EXPECTED.items():
        fm = metrics[family]
        assert fm["accuracy"]["value"] == pytest.approx(accuracy)
        assert fm["consistency_rate"]["value"] == pytest.approx(consistency)
        assert {name: v["accuracy"]["value"] for name, v in fm["variants"].items()} == pytest.approx(per_variant)
    for family in ("typo", "ocr"):
        rows = [s for s in samples if s["family"] == family]
        assert metrics[family]["accuracy"]["value"] == pytest.approx(sum(s["correct"] for s in rows) / len(rows))
    # copy k of item i is the registry's perturbation seeded from (seed, item, family, k), options untouched
    items = {item.id: item for item in load_items(str(mcq_file))}
    q1 = next(s for s in samples if s["family"] == "typo" and s["variant"] == "typo#2" and s["item_id"] == "q1")
    copy = asyncio.run(perturb_text("typo", items["q1"].question, seed="0:q1:typo#2"))
    assert copy.text in q1["prompt"] and items["q1"].question not in q1["prompt"]
    assert all(option in q1["prompt"] for option in items["q1"].options)
    # the stub's "rewrite" ("Let me think. The best answer is B.") is no question: every copy refused
    # after 4 attempts, counted, and the paraphrase group holds the originals only
    assert list(metrics["paraphrase"]["variants"]) == ["original"] and metrics["paraphrase"]["samples"] == 5
    counts = results["perturbations"]
    assert counts["paraphrase"] == {"family": "paraphrase", "kind": "rewrite", "asked": 10, "kept": 0, "rejected": 10,
                                    "failed": 0, "estimated": 0, "reasons": {"not_a_question": 40},
                                    "rewriter": "openai:stub"}
    assert counts["typo"]["kept"] == counts["ocr"]["kept"] == 10 and counts["typo"]["kind"] == "text"
    audit = {s["source"]: s for s in results["data"]["sources"]}
    assert audit["paraphrase copies (written by openai:stub)"]["left_out"] == {"failed its checks": 10}
    usage = results["models"]["openai:stub"]["usage"]
    assert usage["requests"] == 40 + 15 + 15 + 5  # rewrite attempts, then typo, ocr and paraphrase groups
    assert usage["cached"] == 10  # the originals, asked once for all three families
    # the report, read from this run's results: the copies table and one row per family
    rendered = sections(Run(path=run.folder, results=results))
    copies = next(s for s in rendered if "perturbed copies" in s.title)
    row = next(r for r in copies.tables[0].rows if r[0] == "paraphrase")
    assert row[3:] == ("10", "0", "10", "0", "not_a_question 40")
    family_table = next(s for s in rendered if s.title == "mcq · openai:stub").tables[0]
    assert [r[0] for r in family_table.rows] == ["typo", "ocr", "paraphrase"]
    assert "perturbed copies" in report_md and "not_a_question 40" in report_md


# accuracy, consistency rate, accuracy per variant: pinned from the stub's hashed replies
EXPECTED = {"typo": (4 / 15, 2 / 15, {"original": 0.6, "typo#1": 0.0, "typo#2": 0.2}),
            "ocr": (8 / 15, 4 / 15, {"original": 0.6, "ocr#1": 0.4, "ocr#2": 0.6}),
            "paraphrase": (0.6, None, {"original": 0.6})}  # one variant per group: no consistency


def test_typo_crossed_with_order(cli_run):
    with StubServer() as stub:
        results, samples = cli_run(*_mcq(stub), "--run-id", "x", "--families", "typo", "--cross",
                                   "typo,order").written()
    crossed = [s for s in samples if s["family"] == "typo×order"]
    assert len(crossed) == 4 * 3 * 4 + 3 * 3  # four 4-option questions, one with 3; 3 texts each
    assert {s["base_family"] for s in crossed} == {"typo×order"} and all(s["rule"] is None for s in crossed)
    names = {s["variant"] for s in crossed if s["item_id"] == "q1"}
    assert names == {f"{t}|gold@{p}" for t in ("original", "typo#1", "typo#2") for p in "ABCD"}
    assert set(results["metrics"]["openai:stub"]) == {"typo", "typo×order"}
    assert results["metrics"]["openai:stub"]["typo×order"]["samples"] == len(crossed)


def test_estimate_counts_rewrites_and_the_questions_they_make(tmp_path, mcq_file):
    from robusteval.run import estimate_suite

    with StubServer() as stub:
        config = build_config({}, {"suite": "mcq", "data": str(mcq_file), "families": ("paraphrase",),
                                   "models": (f"openai:stub?base_url={stub.base_url}",),
                                   "rewriter": f"openai:rw?base_url={stub.base_url}",
                                   "cache_dir": str(tmp_path)})
        estimates = asyncio.run(estimate_suite(config))
        assert stub.state.total == 0  # nothing was asked
    by_model = {e.model: e for e in estimates}
    assert by_model["openai:rw"].to_send == 5 * 2  # one rewrite per copy
    assert by_model["openai:stub"].to_send == 5 * 3  # each question, and its two copies, asked once


def test_unknown_or_doubled_perturbations_are_refused(tmp_path):
    with pytest.raises(UserError, match=r"unknown --families typpo.*paraphrase"):
        build_config({}, {"suite": "mcq", "families": ("typpo",)})
    with pytest.raises(UserError, match="at most one perturbation"):
        build_config({}, {"suite": "mcq", "cross": ("typo", "paraphrase")})
    with pytest.raises(UserError, match=r"--perturbations-per-family 0: out of range; it must be in \[1, 100\]"):
        build_config({}, {"suite": "mcq", "families": ("typo",), "perturbations_per_family": 0})
    config = build_config({"perturbations_per_family": "3", "families": "typo,language:de"}, {"suite": "mcq"})
    assert config.options.perturbations_per_family == 3 and config.options.families == ("typo", "language:de")


def test_gold_text_is_checked_against_a_rewrite_unless_it_is_a_letter_or_number():
    item = Item("q", "Which planet is closest to the Sun?", ("Venus", "Mercury", "42", "B"), 1)
    assert gold_aliases(item) == ("Mercury",)
    assert gold_aliases(Item("q", "7 x 6?", ("42", "36"), 0)) == ()
    assert gold_aliases(Item("q", "Pick one?", ("B", "C"), 0)) == ()


def test_metrics_keep_families_by_their_fields_not_by_parsing_names():
    from dataclasses import replace

    from robusteval.metrics.mcq import metrics
    from robusteval.probes.design import expand
    from robusteval.suites.mcq.ask import _sample
    from robusteval.types import Response

    items = [Item("q1", "Which is red?", ("sky", "blood", "grass"), 1)]
    variants = expand(items[0], ["order"], cross=("format", "order"))
    samples = [_sample("m", items[0], v, 0, Response("k", "The best answer is A")) for v in variants]
    # a loglik rule's family keeps its design family and rule as fields
    samples += [replace(s, family=f"{s.family}/loglik-label", base_family=s.family, rule="label")
                for s in samples if s.family == "order"]
    assert set(metrics(samples, items, ("order",))) == {"order", "order/loglik-label"}
    assert set(metrics(samples, items, ("order",), cross=("format", "order"))) == {
        "order", "format×order", "order/loglik-label"}
    assert set(metrics(samples, items, ("format",))) == set()  # neither order nor a design that was not asked
