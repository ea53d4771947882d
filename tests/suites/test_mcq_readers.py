"""mcq with a chosen reader, end to end through the deterministic stub: the template check before any
request, the reader recorded, --templates score, the invalid-reply warning and the valid-only view."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import pytest

from robusteval.report.model import Run
from robusteval.report.sections import headlines
from robusteval.report.sections.mcq import sections
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
ANSWER_IS_X = ("templates:\n  - name: mmlu-pro-cot\n    template: 'Think step by step and then output the answer "
               "in the format of \"The answer is (X)\" at the end.\\n\\n{question}\\n{options}'\n")


def _mcq(stub, run_id: str, *, data: Path = FIXTURES / "mcq_small.jsonl", quiet: bool = True) -> tuple:
    """``run mcq`` of ``data`` against the stub, as run ``run_id``."""
    return ("run", "mcq", *(["--quiet"] if quiet else []), "--data", data, "--model", stub.model(),
            "--run-id", run_id)


def test_a_template_the_reader_cannot_read_stops_before_any_request(tmp_path, cli_run):
    """Before: exit 0, accuracy 0.000, every reply invalid with a real model. Now: one message, exit 2."""
    templates = tmp_path / "t.yaml"
    templates.write_text(ANSWER_IS_X, encoding="utf-8")
    with StubServer() as stub:
        code, _, _, err = cli_run(*_mcq(stub, "x"), "--families", "prompt", "--templates", templates)
        asked = stub.counters()["total"]
    assert code == 2 and asked == 0 and not (tmp_path / "runs" / "x").exists()
    assert "template 'mmlu-pro-cot'" in err and "--reader robusteval" in err and "Traceback" not in err
    assert "--reader mmlu-pro" in err  # what would read it


def test_the_reader_is_chosen_and_recorded(tmp_path, cli_run):
    templates = tmp_path / "t.yaml"
    templates.write_text(ANSWER_IS_X, encoding="utf-8")
    with StubServer() as stub:
        results, samples = cli_run(*_mcq(stub, "m"), "--families", "order,prompt", "--templates", templates,
                                   "--reader", "mmlu-pro").written()
        base_results, base_samples = cli_run(*_mcq(stub, "r"), "--families", "order").written()
    assert results["design"]["reader"] == "mmlu-pro" and base_results["design"]["reader"] == "robusteval"
    assert results["config"]["options"]["reader"] == "mmlu-pro"
    # the stub writes "The best answer is X": the mmlu-pro chain's "answer is X" reads it the same,
    # but for a D to a 3-option question: invalid to robusteval, a read and wrong answer to MMLU-Pro's authors
    theirs = {(s["item_id"], s["variant"]): s for s in samples if s["family"] == "order"}
    ours = {(s["item_id"], s["variant"]): s for s in base_samples}
    assert theirs.keys() == ours.keys()
    past = [k for k, s in ours.items() if s["status"] == "invalid"]
    assert past and all(ours[k]["response"].endswith("is D.") and len(ours[k]["labels"]) == 3 for k in past)
    for key, s in theirs.items():
        if key in past:
            assert (s["status"], s["answer_label"], s["answer_option"], s["correct"]) == ("ok", "D", 3, False)
        else:
            assert (s["status"], s["answer_option"]) == (ours[key]["status"], ours[key]["answer_option"])


def test_templates_score(cli_run):
    with StubServer() as stub:
        results, samples = cli_run(*_mcq(stub, "s"), "--families", "order,prompt", "--templates", "score").written()
    assert results["design"]["template_set"] == "score-mmlu-pro"
    assert results["design"]["base_template"] == "score-order"
    assert results["design"]["templates"] == [f"p{i}" for i in range(10)]
    q1 = next(s for s in samples if s["item_id"] == "q1" and s["variant"] == "p0")
    assert q1["prompt"].startswith("Which planet in our solar system is closest to the Sun?\nA: Venus\nB: Mercury")
    assert q1["labels"] == ["A", "B", "C", "D"]
    gold = next(s for s in samples if s["item_id"] == "q1" and s["variant"] == "gold@A")
    assert gold["prompt"].startswith("For the multiple-choice question related to astronomy, which option (A-J)")


def _two_option_items(path: Path) -> Path:
    """Items with two options: the stub answers A-D, so about half its replies name no option."""
    rows = [{"id": f"t{n}", "question": f"Is {n} even?", "choices": ["yes", "no"], "answer": n % 2} for n in range(8)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_mostly_invalid_replies_warn_and_the_valid_only_view(tmp_path, cli_run):
    with StubServer() as stub:
        run = cli_run(*_mcq(stub, "v", data=_two_option_items(tmp_path / "two.jsonl"), quiet=False),
                      "--families", "order,format")
    folder, out = run.folder, run.out
    results, samples = run.written()
    invalid = [s for s in samples if s["status"] == "invalid"]
    share = len(invalid) / len(samples)
    assert share > 0.1
    counts = results["invalid_replies"]["openai:stub"]
    assert (counts["replies"], counts["invalid"]) == (len(samples), len(invalid))
    assert counts["examples"] == [s["response"] for s in invalid[:3]]
    assert "are invalid: reader 'robusteval' found no answer" in out
    assert out.count("invalid reply ") == 3 and "valid replies only" in out

    for family in ("order", "format"):
        fm = results["metrics"]["openai:stub"][family]
        rows = [s for s in samples if s["family"] == family]
        # as scored: an invalid reply is wrong and never agrees; valid only: it is left out
        assert fm["sensitivity"]["consistency_rate"]["value"] == pytest.approx(_consistency(rows, valid_only=False))
        assert fm["sensitivity_valid"]["consistency_rate"]["value"] == pytest.approx(_consistency(rows, True))
        valid = [s for s in rows if s["status"] == "ok"]
        best = max(_accuracy([s for s in valid if s["variant"] == v]) for v in {s["variant"] for s in valid})
        assert fm["sensitivity_valid"]["max_p"]["value"] == pytest.approx(best)
        # the headline pair: as scored (invalid counted wrong) and over valid replies only
        right = sum(s["correct"] for s in rows)
        assert fm["accuracy"]["value"] == pytest.approx(right / len(rows))
        assert fm["accuracy_valid"]["value"] == pytest.approx(right / len(valid))
        assert fm["accuracy_valid"]["value"] > fm["accuracy"]["value"]

    assert out.count("all, valid replies only") == 2  # one row per family table, after "all"
    metrics = [h.metric for h in headlines(results)]
    for family in ("order", "format"):
        assert metrics[metrics.index(f"{family} accuracy") + 1] == f"{family} accuracy (valid replies only)"

    report = sections(Run(path=folder, results=results))
    text = json.dumps([[t.title, t.columns, t.rows] for s in report for t in s.tables] + [s.notes for s in report])
    assert "Warning: openai:stub:" in text and "valid replies only" in text and invalid[0]["response"] in text


def _consistency(rows, valid_only):
    by_item = {}
    for s in rows:
        if valid_only and s["status"] != "ok":
            continue
        by_item.setdefault(s["item_id"], []).append(s["answer_option"] if s["status"] == "ok" else None)
    rates = []
    for answers in by_item.values():
        pairs = list(combinations(answers, 2))
        if pairs:
            rates.append(sum(a is not None and a == b for a, b in pairs) / len(pairs))
    return sum(rates) / len(rates)


def _accuracy(rows):
    return sum(s["correct"] for s in rows) / len(rows)


@pytest.mark.parametrize("flags, message", [
    (["--reader", "scores"], "invalid choice: 'scores'"),
    (["--reader", "score", "--scoring", "loglik"], "--reader reads written replies: use it with --scoring generate"),
    (["--reader", "lenient", "--data", "gsm8k"], "--reader reads option labels; open-answer math is read by its own"),
])
def test_reader_refusals_are_one_message(tmp_path, capsys, cli_run, flags, message):
    with StubServer() as stub:
        try:
            code, _, _, err = cli_run(*_mcq(stub, "bad"), *flags)
        except SystemExit as exc:  # argparse's own refusal of an unknown choice, its message still captured
            code, err = exc.code, capsys.readouterr().err
        asked = stub.counters()["total"]
    assert code == 2 and message in err and "Traceback" not in err
    assert asked == 0 and not (tmp_path / "runs" / "bad").exists()
