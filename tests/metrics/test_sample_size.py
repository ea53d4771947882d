"""`metrics.sample_size`: the planner's items and variants for a target width, checked against the
width `two_way` achieves on simulated crossed grids (0/1 replies, logit-normal) at the planned size;
and ``robusteval plan`` on a run folder and on a grid file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit

from robusteval.cli import main
from robusteval.metrics.sample_size import (
    fewest_variants,
    floor,
    item_only_width,
    plan,
    planned_width,
    simulate_widths,
    with_upper_variance,
)
from robusteval.metrics.two_way import components, two_way


def crossed(rng: np.random.Generator, n: int, k: int, sd_variants: float) -> np.ndarray:
    logit = 0.3 + rng.normal(0, 1.5, (n, 1)) + rng.normal(0, sd_variants, (1, k)) + rng.normal(0, 0.5, (n, k))
    return (rng.random((n, k)) < expit(logit)).astype(float)


@pytest.mark.parametrize("sd_variants,target,k,within", [
    (0.5, 0.10, 20, (0.95, 1.05)), (0.25, 0.08, 10, (0.95, 1.05)),
    # no variant effect: the interval switches to its two-way form whenever the variants spread a
    # little by chance (about half the grids), wider at 4 df: the mean width overshoots (docs/statistics.md)
    (0.0, 0.10, 5, (1.0, 1.15))])
def test_the_planned_size_achieves_the_target_width_on_simulated_grids(sd_variants, target, k, within):
    rng = np.random.default_rng(7)
    c = components(crossed(rng, 2000, 100, sd_variants))  # the population's components, from a large pilot
    (row,) = plan(c, target, [k])
    assert row.items is not None and row.width is not None and row.width <= target
    assert planned_width(c, row.items - 1, k) > target  # the fewest items: one fewer misses
    achieved = []
    for _ in range(150):
        tw = two_way(crossed(rng, row.items, k, sd_variants))
        assert tw.low is not None and tw.high is not None
        achieved.append(tw.high - tw.low)
    assert within[0] * target <= np.mean(achieved) <= within[1] * target


def test_the_planned_width_is_the_intervals_at_the_expected_mean_squares():
    rng = np.random.default_rng(1)
    c = components(crossed(rng, 400, 30, 0.5))
    widths = simulate_widths(c, 150, 10, 300, rng)  # normal grids with exactly these components
    assert np.nanmean(widths) == pytest.approx(planned_width(c, 150, 10), rel=0.05)


def test_variants_bound_the_width_whatever_the_items():
    rng = np.random.default_rng(2)
    c = components(crossed(rng, 1000, 50, 1.0))
    assert c.var_variants > 0
    k = fewest_variants(c, 0.10)
    assert k is not None and floor(c, k) <= 0.10 < floor(c, k - 1)
    few, enough = plan(c, 0.10, [k - 1, k])
    assert few.items is None and enough.items is not None
    assert few.item_only_items is not None  # the item-only interval ignores the variants' spread
    assert item_only_width(c, few.item_only_items, k - 1) <= 0.10
    # more variants never need more items
    sizes = [r.items for r in plan(c, 0.10, [k, 2 * k, 4 * k])]
    assert sizes == sorted(sizes, reverse=True)


def test_identical_variants_plan_the_item_only_size():
    rng = np.random.default_rng(3)
    y = np.repeat(crossed(rng, 300, 1, 0.0), 5, axis=1)
    c = components(y)
    assert c.var_variants == 0
    (row,) = plan(c, 0.1, [5])
    assert row.items == row.item_only_items


def test_the_upper_bound_of_the_template_variance_holds_it_about_as_often_as_asked():
    rng = np.random.default_rng(5)
    truth = 0.01  # sigma_b^2 of normal grids: the chi-square bound is exact there
    held, reps = 0, 400
    for _ in range(reps):
        y = 0.5 + rng.normal(0, 0.15, (100, 1)) + rng.normal(0, np.sqrt(truth), (1, 8)) + rng.normal(0, 0.4, (100, 8))
        c = components(y)
        up = with_upper_variance(c, 0.8)
        assert up.var_variants >= c.var_variants and up.var_items == c.var_items
        held += up.var_variants >= truth
    assert 0.74 <= held / reps <= 0.86  # 0.8 within 3 standard errors of 400 repeats
    (plain,), (sure,) = plan(c, 0.1, [8]), plan(up, 0.1, [8])
    assert sure.items is None or (plain.items is not None and sure.items >= plain.items)
    with pytest.raises(ValueError):
        with_upper_variance(c, 1.0)


def write_grid(path, models=("m1",), n=120, k=8, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        f.write("model,item,variant,correct\n")
        for model in models:
            y = crossed(rng, n, k, 0.6)
            for i in range(n):
                for v in range(k):
                    f.write(f"{model},q{i},t{v},{int(y[i, v])}\n")


def test_plan_command_on_a_grid_file(tmp_path, capsys):
    path = tmp_path / "grid.csv"
    write_grid(path)
    assert main(["plan", str(path), "--target-ci", "0.1", "--variants", "5,20", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (p,) = doc["plans"]
    assert (p["model"], p["family"], p["pilot_items"], p["pilot_variants"]) == ("m1", "grid", 120, 8)
    by_k = {s["variants"]: s for s in p["sizes"]}
    assert set(by_k) == {5, 20}
    for s in by_k.values():
        if s["items"] is not None:
            assert s["requests"] == s["items"] * s["variants"] and s["tokens"] is None and s["width"] <= 0.1
    assert main(["plan", str(path), "--target-ci", "0.1", "--variants", "20", "--tokens-per-request", "150",
                 "--format", "json"]) == 0
    (s,) = json.loads(capsys.readouterr().out)["plans"][0]["sizes"]
    assert s["tokens"] == s["requests"] * 150
    assert main(["plan", str(path), "--target-ci", "0.1", "--variants", "20", "--assurance", "0.9",
                 "--format", "json"]) == 0
    ((sure,),) = [p["sizes"] for p in json.loads(capsys.readouterr().out)["plans"]]
    assert sure["items"] is None or sure["items"] >= by_k[20]["items"]
    assert main(["plan", str(path), "--target-ci", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "m1 · grid: items needed for a 95% interval 0.1 wide" in out and "pilot: 120 complete items x 8" in out


@pytest.mark.parametrize("flags,message", [
    (["--target-ci", "0"], "--target-ci 0.0: a width between 0 and 1"),
    (["--target-ci", "0.1", "--variants", "1,5"], "at least 2 variants"),
    (["--target-ci", "0.1", "--variants", "five"], "give whole numbers"),
    (["--target-ci", "0.1", "--model", "nobody"], "no model nobody"),
    (["--target-ci", "0.1", "--tokens-per-request", "-3"], "a positive number of tokens"),
    (["--target-ci", "0.1", "--assurance", "1"], "--assurance 1.0: a probability between 0 and 1"),
])
def test_plan_refuses_bad_flags_in_one_line(tmp_path, capsys, flags, message):
    path = tmp_path / "grid.csv"
    write_grid(path, n=10, k=3)
    assert main(["plan", str(path), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_plan_of_a_fixed_design_says_there_is_nothing_to_plan(tmp_path, capsys):
    path = tmp_path / "order.csv"
    path.write_text("item,variant,correct,family\n" + "".join(f"q{i},o{v},{(i + v) % 2},order\n"
                                                          for i in range(5) for v in range(3)))
    assert main(["plan", str(path), "--target-ci", "0.1"]) == 2
    assert "fixed design" in capsys.readouterr().err


def test_plan_command_on_a_run_folder_costs_tokens(stub, tmp_path, capsys):
    assert main(["run", "mcq", "--model", stub.model("a"), "--families", "prompt", "--limit", "6", "--out",
                 str(tmp_path), "--run-id", "pilot", "--quiet", "--cache-dir", str(tmp_path / "cache")]) == 0
    results = json.loads((tmp_path / "pilot" / "results.json").read_text())
    usage = results["models"]["openai:a"]["usage"]
    per_request = (usage["prompt_tokens"] + usage["completion_tokens"]) / usage["requests"]
    capsys.readouterr()
    assert main(["plan", str(tmp_path / "pilot"), "--target-ci", "0.2", "--variants", "10", "--format", "json"]) == 0
    (p,) = json.loads(capsys.readouterr().out)["plans"]
    assert (p["pilot_items"], p["pilot_variants"]) == (6, 10)
    assert p["tokens_per_request"] == pytest.approx(per_request)
    (s,) = p["sizes"]
    assert s["requests"] == s["items"] * 10
    assert s["tokens"] == round(s["requests"] * per_request)
