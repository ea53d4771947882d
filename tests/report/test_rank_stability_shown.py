"""Ranking stability across variants where it is shown: the leaderboard's "across variants" column
(a tie group never split), the report's section for a run of several models, and ``compare`` of two
runs on a prompt family (`report.rankings`, `pilot.ranking_across_runs`, `report.rank_stability`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robusteval.cli import main
from robusteval.pilot import ranking_across_runs as from_runs
from robusteval.report.leaderboard import boards
from robusteval.report.rankings import from_metrics
from robusteval.results.mcq import read_metrics

TEMPLATES = [f"t{v}" for v in range(10)]


def _family(per_variant: list[float], overall: float, half: float = 0.02) -> dict:
    est = {"value": overall, "ci_low": overall - half, "ci_high": overall + half, "n": 200}
    return {"accuracy": est, "consistency_rate": est,
            "variants": {t: {"accuracy": {"value": a, "ci_low": a - 0.05, "ci_high": a + 0.05, "n": 200},
                             "answered": 200, "invalid": 0, "invalid_rate": {"value": 0.0}, "failed": 0}
                         for t, a in zip(TEMPLATES, per_variant)}}


def _results(run_id: str, per_variant: list[float], family: str = "prompt") -> dict:
    return {"run_id": run_id, "suite": "mcq", "started": "2026-11-28T10:00:00", "models": {"m": {}},
            "config": {"limit": 200}, "data": {"sources": [{"source": "mmlu (offline)"}]},
            "metrics": {"m": {family: _family(per_variant, float(np.mean(per_variant)))}}}


def _write(root, run_id, results):
    (root / run_id).mkdir()
    (root / run_id / "results.json").write_text(json.dumps(results))


def test_the_leaderboard_says_whether_a_rank_holds_across_the_variants(tmp_path):
    # best beats mid under 9 of 10 templates; mid beats weak under only 6 of 10, though their means
    # differ enough (intervals apart) for separate ranks: that rank holds on these templates only
    best = [0.80] * 9 + [0.50]
    mid = [0.60] * 10
    weak = [0.70] * 6 + [0.20] * 4
    for run_id, scores in (("best", best), ("mid", mid), ("weak", weak)):
        _write(tmp_path, run_id, _results(run_id, scores))
    (board,) = boards(tmp_path)
    rows = {r.run_id: r for r in board.rows}
    assert [(r.run_id, r.rank) for r in board.ranked_rows] == [("best", 1), ("mid", 2), ("weak", 3)]
    assert rows["best"].across_variants.startswith("holds: wins 9/10 variants [0.60,")
    assert rows["mid"].across_variants.startswith("variants disagree: wins 4/10 variants")
    assert rows["weak"].across_variants == ""  # the last group: nobody below
    from robusteval.report.render import environment

    page = environment().get_template("leaderboard.html.j2").render(boards=[board], runs_dir=str(tmp_path))
    assert ">across variants</th>" in page and "variants disagree: wins 4/10" in page


def test_a_tie_group_stays_a_tie_group_and_fixed_designs_get_no_column(tmp_path):
    a = [0.70, 0.50] * 5
    b = [0.50, 0.70] * 5  # the same mean: tied, and each wins half the templates
    _write(tmp_path, "a", _results("a", a))
    _write(tmp_path, "b", _results("b", b))
    (board,) = boards(tmp_path)
    assert [(r.rank, r.tied, r.across_variants) for r in board.rows] == [(1, True, ""), (1, True, "")]
    other = tmp_path / "order"
    other.mkdir()
    _write(other, "x", _results("x", [0.9] * 10, family="order"))
    _write(other, "y", _results("y", [0.1] * 10, family="order"))
    (board,) = boards(other)
    assert [r.across_variants for r in board.rows] == ["", ""]  # option orders are no sample of prompts


def test_the_report_section_of_a_run_of_several_models():
    from robusteval.report.model import Run
    from robusteval.report.sections.mcq import ranking_section

    metrics = read_metrics({"a": {"prompt": _family([0.8, 0.7, 0.6], 0.7), "order": _family([0.5, 0.6], 0.55)},
                            "b": {"prompt": _family([0.6, 0.75, 0.5], 0.6), "order": _family([0.4, 0.7], 0.55)}})
    found = from_metrics(metrics)
    assert list(found) == ["prompt"]  # order is a fixed design
    rs = found["prompt"]
    assert rs.models == ("a", "b") and rs.variants == ("t0", "t1", "t2") and rs.top == "a"
    assert rs.pairs[0].wins == 2.0
    section = ranking_section(metrics)
    assert section is not None and section.title == "mcq · ranking across variants"
    (table,) = section.tables
    assert table.rows[0][:4] == ("a", "b", "3", "2/3 = 0.67 [0.21, 0.94]")
    assert ranking_section(read_metrics({"a": {"prompt": _family([0.8, 0.7], 0.75)}})) is None
    assert Run  # the section reads the typed metrics a Run holds


def _samples(model: str, right: dict[str, set[int]], items: int = 6) -> str:
    return "".join(json.dumps({"model": model, "item_id": f"q{i}", "family": "prompt", "variant": v, "sample": 0,
                               "correct": i in right[v], "answer_option": 0, "status": "ok"}) + "\n"
                   for v in right for i in range(items))


def test_from_runs_uses_the_items_and_variants_every_run_answered(tmp_path):
    for name, model, right in (("r1", "a", {"t0": {0, 1, 2}, "t1": {0, 1}, "t2": {0}}),
                               ("r2", "b", {"t0": {0}, "t1": {0, 1, 2}, "t2": {0, 1}, "t9": {0}})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "samples.jsonl").write_text(_samples(model, right))
    rs = from_runs([str(tmp_path / "r1"), str(tmp_path / "r2")])["prompt"]
    assert rs.models == ("a", "b") and rs.variants == ("t0", "t1", "t2")  # t9: only r2 asked it
    assert rs.pair("a", "b") is not None and rs.pair("a", "b").wins == pytest.approx(1.0)  # a wins t0 only


def test_compare_two_runs_on_a_prompt_family_prints_the_share_of_templates_won(stub, tmp_path, capsys):
    for name in ("a", "b"):
        assert main(["run", "mcq", "--model", stub.model(name), "--families", "prompt", "--limit", "4", "--out",
                     str(tmp_path), "--run-id", name, "--quiet", "--cache-dir", str(tmp_path / "cache")]) == 0
    capsys.readouterr()
    runs = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert main(["compare", *runs, "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "prompt: variants won: 2 models on 10 variants: Kendall's W" in out
    assert "share A wins [95% CI]" in out
    assert "## prompt: variants won" in (tmp_path / "cmp" / "compare.md").read_text()
    assert main(["compare", *runs, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rs = doc["rank_stability"]["prompt"]
    (pair,) = rs["pairs"]
    assert (pair["a"], pair["b"], pair["variants"]) == ("openai:a", "openai:b", 10)
    expected = from_runs(runs)["prompt"]
    assert rs["kendall_w"] == pytest.approx(expected.kendall_w)
    # the shares come from each template's accuracy on the shared questions
    results = {n: json.loads((tmp_path / n / "results.json").read_text()) for n in ("a", "b")}
    acc = {n: [results[n]["metrics"][f"openai:{n}"]["prompt"]["variants"][v]["accuracy"]["value"]
               for v in expected.variants] for n in ("a", "b")}
    wins = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x, y in zip(acc["a"], acc["b"]))
    assert pair["wins"] == pytest.approx(wins)
