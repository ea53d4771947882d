"""`robusteval compare` on two runs written as the suite writes them."""

from __future__ import annotations

import json

import pytest

from robusteval.cli import main
from robusteval.probes.design import expand
from robusteval.suites.mcq import _sample
from robusteval.types import Item, Response

ITEMS = [Item(f"q{n}", f"Q{n}?", ("p", "q", "r", "s"), answer=n % 4) for n in range(30)]


def _write_run(folder, model, reply):
    folder.mkdir()
    with open(folder / "samples.jsonl", "w") as f:
        for item in ITEMS:
            for v in expand(item, ["order"]):
                f.write(json.dumps(_sample(model, item, v, 0, Response("k", reply(item, v))).as_dict()) + "\n")


def test_compare_two_runs(tmp_path, capsys):
    # A always says "A" (right only for gold@A); B always finds the gold
    _write_run(tmp_path / "a", "m1", lambda item, v: "The best answer is A")
    _write_run(tmp_path / "b", "m2", lambda item, v: f"The best answer is {v.labels[v.order.index(item.answer)]}")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())["order"]
    assert result["questions"] == 30
    assert result["accuracy"]["a"] == 0.25 and result["accuracy"]["b"] == 1.0
    assert result["accuracy"]["p_value"] < 0.01 and result["accuracy"]["ci_low"] > 0.5
    assert result["consistency_rate"]["b"] == 1.0
    assert "order" in capsys.readouterr().out


def test_compare_errors(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "none"), str(tmp_path / "none")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_compare_headlines_across_runs_writes_table_and_plots(tmp_path, capsys):
    for run_id, acc in (("r1", 0.25), ("r2", 0.75)):
        (tmp_path / run_id).mkdir()
        est = {"value": acc, "ci_low": acc - 0.1, "ci_high": acc + 0.1, "n": 30}
        (tmp_path / run_id / "results.json").write_text(json.dumps({
            "run_id": run_id, "suite": "consistency", "models": {"m": {}},
            "metrics": {"judges": {"oracle": {"models": {"m": {"mean": est}}}}}}))
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "r1"), str(tmp_path / "r2"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "oracle mean similarity" in printed and "0.250 [0.150, 0.350]" in printed and "0.750" in printed
    md = (out / "compare.md").read_text()
    assert "| r2 | m | 0.750 [0.650, 0.850] |" in md
    assert (out / "compare-1.png").read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "r2" / "results.json").write_text(json.dumps({"run_id": "r2", "suite": "mcq", "models": {},
                                                              "metrics": {}}))
    assert main(["compare", str(tmp_path / "r1"), str(tmp_path / "r2")]) == 2
    assert "different suites" in capsys.readouterr().err


def test_compare_shows_every_sensitivity_measure_paired_where_it_exists(tmp_path, capsys):
    # A always says "A": right only on gold@A. B always finds the gold. 30 questions, 4 orders each.
    _write_run(tmp_path / "a", "m1", lambda item, v: "The best answer is A")
    _write_run(tmp_path / "b", "m2", lambda item, v: f"The best answer is {v.labels[v.order.index(item.answer)]}")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(out)]) == 0
    s = json.loads(out.read_text())["order"]["sensitivity"]
    # worst case: A is wrong somewhere on every question (0), B never (1); paired difference +1
    assert (s["worst_case"]["a"]["value"], s["worst_case"]["b"]["value"]) == (0.0, 1.0)
    assert s["worst_case"]["difference"]["diff"] == 1.0 and s["worst_case"]["difference"]["n"] == 30
    # PSS: A's (1, 0, 0, 0) per question gives 3 differing pairs of 6; B's none
    assert s["prompt_sensi_score"]["a"]["value"] == 0.5 and s["prompt_sensi_score"]["difference"]["diff"] == -0.5
    # flips against the published order (whose A shows option 0): where the gold is not option 0 (22
    # questions) only gold@A moves A's answer (1 of 3); where it is (8 questions) every swap does (3 of 3)
    assert s["flip_rate"]["a"]["value"] == pytest.approx((22 * 1 + 8 * 3) / 90)
    assert s["flip_rate"]["difference"]["diff"] == pytest.approx(-(22 / 3 + 8) / 30)
    assert s["flip_rate"]["b"]["value"] == 0.0
    # MaxP / CPS are statistics of the whole matrix: side by side, no paired difference
    assert s["max_p"]["a"]["value"] == 1.0 and s["max_p"]["b"]["value"] == 1.0 and s["max_p"]["difference"] is None
    assert s["cps"]["a"]["value"] == 1.0 * (1 - (1.0 - 0.25))
    printed = capsys.readouterr().out
    assert "sensitivity: B =" in printed and "worst-case accuracy" in printed and "+1.000" in printed
    assert "n/a (not a per-question mean)" in printed
