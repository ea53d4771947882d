"""Every sensitivity measure of an mcq run through the deterministic stub, on three questions whose
answers are listed below, so that each figure can be checked by hand; then the same record in the
terminal, the report and (loglik scoring) POSIX."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from rich.console import Console

from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections
from robusteval.report.table import print_mcq
from robusteval.results.mcq import read_metrics
from robusteval.testing.openai_stub import StubServer

# What the stub answers (a pure function of the request) to --limit 3 of tests/fixtures/mcq_small.jsonl
# under --families order; "ref" is the published order (the unperturbed variant of that question):
#   q4 gold@A 3 right, gold@B 0 wrong, gold@C 3 right, gold@D 0 wrong (ref, answer 0)
#   q5 gold@A 0 right (ref), gold@B invalid, gold@C 1 wrong            (three options: no gold@D)
#   q1 gold@A 1 right, gold@B 1 right (ref), gold@C 3 wrong, gold@D 1 right
EXPECTED_ANSWERS = {
    ("q4", "gold@A"): (3, True), ("q4", "gold@B"): (0, False), ("q4", "gold@C"): (3, True),
    ("q4", "gold@D"): (0, False),
    ("q5", "gold@A"): (0, True), ("q5", "gold@B"): (None, False), ("q5", "gold@C"): (1, False),
    ("q1", "gold@A"): (1, True), ("q1", "gold@B"): (1, True), ("q1", "gold@C"): (3, False), ("q1", "gold@D"): (1, True),
}


def _mcq(stub, mcq_file: Path) -> tuple:
    """``run mcq`` of the first 3 questions of ``mcq_file`` against the stub."""
    return ("run", "mcq", "--quiet", "--model", stub.model(), "--data", mcq_file, "--limit", "3", "--run-id", "r")


@pytest.fixture(scope="module")
def order_run(tmp_path_factory, cli_run_in):
    fixture = Path(__file__).parent.parent / "fixtures" / "mcq_small.jsonl"
    with StubServer() as stub:
        return cli_run_in(tmp_path_factory.mktemp("sens"), *_mcq(stub, fixture), "--families", "order,format").written()


def test_the_stubs_answers_are_the_ones_listed(order_run):
    _, samples = order_run
    got = {(s["item_id"], s["variant"]): (s["answer_option"], s["correct"]) for s in samples if s["family"] == "order"}
    assert got == EXPECTED_ANSWERS


def test_order_family_figures_by_hand(order_run):
    results, _ = order_run
    s = read_metrics(results["metrics"])["openai:stub"]["order"].sensitivity
    assert s is not None and s.reference == "unperturbed (published order)" and s.items == 3
    # agreeing pairs: q4 (3,0,3,0) 2 of 6, q5 (0,invalid,1) 0 of 3, q1 (1,1,3,1) 3 of 6
    assert s.consistency_rate.value == pytest.approx((2 / 6 + 0 + 3 / 6) / 3)  # 5/18
    assert s.consistency_rate_pooled.value == pytest.approx(5 / 15)
    # against each question's published order: q4 (0) A and C flip, B keeps; q5 (0) B, C flip; q1 (1) C flips
    assert s.flip_rate.value == pytest.approx(5 / 8)
    # accuracies: gold@A 3/3, gold@B 1/3, gold@C 1/3, gold@D 1/2 (q5 has no D)
    assert [v.accuracy.value for v in s.per_variant.values()] == pytest.approx([1, 1 / 3, 1 / 3, 1 / 2])
    assert s.spread.value == pytest.approx(2 / 3)
    assert s.max_p.value == pytest.approx(1.0)
    assert s.avg_p.value == pytest.approx(13 / 24)
    assert s.cps.value == pytest.approx(1.0 * (1 - (1.0 - 13 / 24)))
    # every question has a wrong and a right variant
    assert (s.worst_case.value, s.best_case.value) == (0.0, 1.0)
    # per question mean |s_v - s_w| over pairs: q4 4/6, q5 2/3, q1 3/6
    assert s.prompt_sensi_score.value == pytest.approx((4 / 6 + 2 / 3 + 3 / 6) / 3)  # 11/18
    # PDR per variant over the questions where it is not the reference: gold@A 1 - 2/1 (q4, q1),
    # gold@B 1 - 0/1 (q4, q5), gold@C 1 - 1/2 (q4, q5, q1), gold@D 1 - 1/1 (q1)
    assert [v.drop_rate.value for v in s.per_variant.values()] == pytest.approx([-1.0, 1.0, 0.5, 0.0])
    assert s.drop_rate.value == pytest.approx((-1 + 1 + 0.5 + 0) / 4)
    assert [v.flip_rate.value for v in s.per_variant.values()] == pytest.approx([1 / 2, 1 / 2, 1.0, 0.0])
    assert s.posix.value is None  # generated answers: no log-probabilities


def test_format_family_reference_is_the_base_style(order_run):
    results, samples = order_run
    s = read_metrics(results["metrics"])["openai:stub"]["format"].sensitivity
    assert s.reference == "A." and set(s.per_variant) == {"A:", "A)", "A.", "1.", "a:", "I:"}
    assert s.per_variant["A."].flip_rate.value is None  # the reference against itself
    # the flip rate recounted from samples.jsonl: answers that differ from the A. variant's, per question
    answer = {(r["item_id"], r["variant"]): r["answer_option"] for r in samples if r["family"] == "format"}
    items = {i for i, _ in answer}
    flips = sum(answer[i, v] is None or answer[i, v] != answer[i, "A."] for i in items for v in s.per_variant
                if v != "A.")
    assert s.flip_rate.value == pytest.approx(flips / (len(items) * 5))


def test_terminal_and_report_show_the_measures(order_run):
    results, _ = order_run
    console = Console(record=True, width=220)
    for model, families in read_metrics(results["metrics"]).items():
        print_mcq(console, model, families)
    text = console.export_text()
    assert "sensitivity per family" in text and "vs unperturbed (published order)" in text
    row = next(line for line in text.splitlines() if "PromptSensiScore" in line)
    assert "0.611" in row  # order's 11/18
    assert "n/a here: POSIX" in text

    [section] = [s for s in sections(Run(path=None, results=results)) if s.title == "mcq · openai:stub"]
    table = next(t for t in section.tables if "sensitivity per family" in t.title)
    # the stub's replies include unreadable ones: each family as scored and over valid replies only
    assert table.columns == ("measure", "order (as scored) (vs unperturbed (published order))",
                             "order (valid replies only) (vs unperturbed (published order))",
                             "format (as scored) (vs A.)", "format (valid replies only) (vs A.)")
    assert [r[0] for r in table.rows][:3] == ["consistency rate (per item)", "consistency rate (pooled pairs)",
                                              "flip rate vs reference"]
    cps = next(r for r in table.rows if r[0] == "CPS")
    assert cps[1].startswith("0.542")  # 13/24
    per_variant = next(t for t in section.tables if t.title.startswith("openai:stub · order: each variant"))
    assert [r[0] for r in per_variant.rows] == ["gold@A", "gold@B", "gold@C", "gold@D"]
    assert per_variant.rows[2][2].startswith("0.500")  # gold@C's PDR


def test_posix_under_loglik_scoring(cli_run, mcq_file):
    with StubServer() as stub:
        results, samples = cli_run(*_mcq(stub, mcq_file), "--families", "order", "--scoring", "loglik").written()
    s = read_metrics(results["metrics"])["openai:stub"]["order/loglik-label"].sensitivity
    # POSIX by hand from the samples: per question, over ordered pairs of prompts (i, j), i != j,
    # |log P(answer to j | prompt i) - log P(answer to j | prompt j)|, options indexed by original option
    rows = [r for r in samples if r["family"] == "order/loglik-label"]
    psis = []
    for item in dict.fromkeys(r["item_id"] for r in rows):
        prompts = [r for r in rows if r["item_id"] == item]
        ll = [dict(zip(r["order"], r["logliks"])) for r in prompts]
        changes = [abs(ll[i][prompts[j]["answer_option"]] - ll[j][prompts[j]["answer_option"]])
                   for i, j in itertools.permutations(range(len(prompts)), 2)]
        psis.append(sum(changes) / len(changes))
    assert s.posix.value == pytest.approx(sum(psis) / len(psis))
    assert s.posix.value > 0
