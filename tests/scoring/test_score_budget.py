"""``robusteval score GRID --budget F --seed S``: the cells ``run --budget`` would ask of a known grid,
the estimate from them, and the full grid's own figures beside it, in results.json and the terminal."""

from __future__ import annotations

import json

import numpy as np

from robusteval.cli import main


def _grid(tmp_path, items: int = 200, variants: int = 6):
    rng = np.random.default_rng(5)
    logit = rng.normal(0, 1.5, items)[:, None] + np.linspace(-1, 1, variants)[None, :]
    truth = rng.random(logit.shape) < 1 / (1 + np.exp(-logit))
    path = tmp_path / "grid.csv"
    path.write_text("item,variant,family,correct\n" + "".join(
        f"q{i},t{j},prompt,{str(bool(truth[i, j])).lower()}\n" for i in range(items) for j in range(variants)))
    return path, truth


def _score(tmp_path, capsys, *flags):
    capsys.readouterr()
    code = main(["score", *flags, "--out", str(tmp_path / "runs"), "--model", "m"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_budgeted_score_of_a_grid_records_the_estimate_beside_the_full_grid(tmp_path, capsys):
    path, truth = _grid(tmp_path)
    code, out, err = _score(tmp_path, capsys, str(path), "--budget", "0.25", "--seed", "3", "--run-id", "b")
    assert code == 0, err
    results = json.loads((tmp_path / "runs" / "b" / "results.json").read_text())
    est, full = results["budget"]["m"]["prompt"], results["budget_truth"]["m"]["prompt"]
    assert est["asked"] == 300 and est["cells"] == 1200 and est["budget"] == 0.25  # a budgeted run's keys
    assert sum(est["asked_per_variant"].values()) == 300
    acc = truth.mean(axis=0)
    assert np.allclose([full["variants"][f"t{j}"]["value"] for j in range(6)], acc, atol=1e-9)
    assert abs(full["spread"]["value"] - np.ptp(acc)) < 1e-9
    assert all(abs(est["variants"][f"t{j}"]["value"] - acc[j]) < 0.1 for j in range(6))
    assert "full grid" in out and "from 300 of 1200 cells" in " ".join(out.split())
    # the same seed asks the same cells and gives the same figures
    again = _score(tmp_path, capsys, str(path), "--budget", "0.25", "--seed", "3", "--run-id", "b2")
    assert again[0] == 0
    assert json.loads((tmp_path / "runs" / "b2" / "results.json").read_text())["budget"] == results["budget"]


def test_budget_on_replies_or_out_of_range_is_one_message(tmp_path, capsys):
    path, _ = _grid(tmp_path, items=10, variants=2)
    code, _, err = _score(tmp_path, capsys, str(path), "--budget", "1.5")
    assert code == 2 and "--budget 1.5: out of range; it must be in (0, 1]" in err and "Traceback" not in err
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"item_id": "q0", "variant": "t0", "reply": "A"}) + "\n")
    code, _, err = _score(tmp_path, capsys, str(replies), "--budget", "0.5")
    assert code == 2 and "--budget applies to a correctness grid" in err
