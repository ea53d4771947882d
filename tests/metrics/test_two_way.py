"""`metrics.two_way`: the population mean over items and variants together (issue 46), on small
simulated crossed grids (items x variants, logit-normal, seeded), and its place in results.json and
in `score GRID`'s output and report. Coverage is measured by benchmarks/two_way.py, not here."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit

from robusteval.cli import main
from robusteval.metrics.stats import proportion
from robusteval.metrics.two_way import is_sampled, two_way


def grid(sigma_variants: float, *, n: int = 60, k: int = 8, seed: int = 3) -> np.ndarray:
    """A 0/1 grid whose items and variants share their draws across ``sigma_variants``, so only the
    variant spread differs between two grids of the same seed."""
    rng = np.random.default_rng(seed)
    items, variants, noise = rng.normal(0, 1.5, (n, 1)), rng.normal(0, 1, (1, k)), rng.random((n, k))
    return (noise < expit(0.3 + items + sigma_variants * variants)).astype(float)


def test_the_interval_holds_the_mean_of_the_grid():
    y = grid(0.5)
    tw = two_way(y)
    assert tw.value == pytest.approx(y.mean(), abs=1e-12)
    assert tw.low is not None and tw.high is not None
    assert tw.low < tw.value < tw.high
    assert (tw.items, tw.variants) == y.shape
    shares = tw.shares
    assert shares is not None
    assert shares.variants + shares.items + shares.interaction == pytest.approx(1, abs=1e-9)


def test_it_widens_as_the_variants_spread():
    widths = []
    for sigma in (0.0, 0.5, 1.0, 2.0):
        tw = two_way(grid(sigma))
        assert tw.low is not None and tw.high is not None
        widths.append(tw.high - tw.low)
    assert widths == sorted(widths) and widths[-1] > 1.5 * widths[0]
    shares = [two_way(grid(s)).shares for s in (0.5, 2.0)]
    assert shares[0] is not None and shares[1] is not None and shares[1].variants > shares[0].variants


def test_identical_variants_give_the_item_only_interval():
    y = np.repeat(grid(0.0)[:, :1], 6, axis=1)
    tw = two_way(y)
    assert (tw.low, tw.high) == (tw.item_low, tw.item_high)
    assert tw.shares is not None and tw.shares.variants == 0 and tw.shares.interaction == 0
    # and it is about the interval robusteval prints for the accuracy (Wilson at the items)
    printed = proportion(y.sum(axis=1), np.full(len(y), 6))
    assert tw.low == pytest.approx(printed.low, abs=0.02) and tw.high == pytest.approx(printed.high, abs=0.02)


def test_items_missing_a_variant_are_left_out_and_tiny_grids_get_no_interval():
    y = grid(0.5)
    y[0, 2] = np.nan
    assert two_way(y).items == len(y) - 1
    y[:, 5] = np.nan  # a template whose every request failed: left out, not every item with it
    assert (two_way(y).items, two_way(y).variants) == (len(y) - 1, y.shape[1] - 1)
    assert two_way(y[:, :1]).low is None and two_way(y[:1]).low is None
    assert two_way(np.ones((10, 4))).low == pytest.approx(0.7225, abs=1e-3)  # Wilson 10 of 10, not [1, 1]


@pytest.mark.parametrize(("family", "sampled"), [
    ("prompt", True), ("fewshot", True), ("seeds", True), ("paraphrase", True), ("grid", True),
    ("prompt/loglik-label", True), ("format", False), ("order", False), ("format×order", False),
    ("prompt×order", False), ("typo", False), ("", False)])
def test_which_families_are_a_sample(family, sampled):
    assert is_sampled(family) is sampled


def test_score_grid_stores_and_prints_the_population_mean(tmp_path, capsys):
    y = grid(1.0, n=12, k=5)
    path = tmp_path / "templates.csv"
    path.write_text("item,variant,correct\n" + "".join(
        f"q{i},t{v},{int(y[i, v])}\n" for i in range(len(y)) for v in range(y.shape[1])))
    assert main(["score", str(path), "--out", str(tmp_path / "runs"), "--run-id", "tw"]) == 0
    out = capsys.readouterr().out
    family = json.loads((tmp_path / "runs" / "tw" / "results.json").read_text())["metrics"]["templates"]["grid"]
    pop = family["population"]
    tw = two_way(y)
    assert pop["value"] == pytest.approx(tw.value, abs=1e-12) and pop["ci_low"] == pytest.approx(tw.low, abs=1e-12)
    assert (pop["items"], pop["variants"]) == (12, 5) and set(pop["variance_shares"]) == {
        "variants", "items", "interaction"}
    assert family["accuracy"]["value"] == pytest.approx(y.mean(), abs=1e-12)  # the item-clustered figure stays
    assert "population mean, items × variants" in out and f"{tw.value:.3f} [{tw.low:.3f}, {tw.high:.3f}]" in out
    report = (tmp_path / "runs" / "tw" / "report.md").read_text()
    assert "population mean over questions and variants" in report
    assert f"| grid | {family['accuracy']['value']:.3f} [" in report
    assert f"{tw.low:.3f}, {tw.high:.3f}] | 12 | 5 |" in report
