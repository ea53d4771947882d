"""`robusteval compare` on two runs written as the suite writes them."""

from __future__ import annotations

import json

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
