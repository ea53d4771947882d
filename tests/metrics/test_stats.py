"""Confidence intervals: Wilson for shares of cells, BCa bootstrap, the spread's pairwise range."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.estimate import Estimate
from robusteval.metrics.stats import bootstrap, bootstrap_sums, proportion, spread_interval, wilson


def mean_stat(rows: np.ndarray) -> float:
    return float(np.mean(rows))


def bernoulli(n: int, p: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def test_value_is_statistic_on_full_data_and_inside_interval():
    rows = bernoulli(100, 0.4, seed=1)
    est = bootstrap(rows, mean_stat, n_resamples=300, seed=0)
    assert est.value == pytest.approx(rows.mean())
    assert est.n == 100
    assert est.low <= est.value <= est.high
    assert est.low < est.high


def test_deterministic_for_a_seed():
    rows = bernoulli(50, 0.5, seed=2)
    a = bootstrap(rows, mean_stat, n_resamples=200, seed=7)
    b = bootstrap(rows, mean_stat, n_resamples=200, seed=7)
    c = bootstrap(rows, mean_stat, n_resamples=200, seed=8)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)


def test_more_items_narrower_interval():
    small = bootstrap(bernoulli(20, 0.5, seed=3), mean_stat, n_resamples=300)
    large = bootstrap(bernoulli(2000, 0.5, seed=3), mean_stat, n_resamples=300)
    assert (large.high - large.low) < (small.high - small.low) / 3


def test_level_widens_interval():
    rows = bernoulli(100, 0.5, seed=4)
    narrow = bootstrap(rows, mean_stat, n_resamples=300, level=0.5)
    wide = bootstrap(rows, mean_stat, n_resamples=300, level=0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high


def test_resamples_rows_as_units():
    # two columns per item that always move together: each resample keeps rows whole
    rows = np.column_stack([np.arange(10.0), np.arange(10.0)])
    seen = []
    bootstrap(rows, lambda r: seen.append(bool(np.all(r[:, 0] == r[:, 1]))) or 0.0, n_resamples=20)
    assert len(seen) == 1 + 20 + 10 and all(seen)  # the value, the resamples, BCa's leave-one-out jackknife


@pytest.mark.parametrize("rows", [np.array([1.0]), np.zeros((0,))])
def test_fewer_than_two_items_gives_no_interval(rows):
    est = bootstrap(rows, lambda r: float(np.mean(r)) if len(r) else float("nan"), n_resamples=50)
    assert est.low is None and est.high is None
    assert est.n == len(rows)


def test_non_finite_statistic_gives_no_value():
    est = bootstrap(np.arange(5.0), lambda r: float("nan"), n_resamples=50)
    assert est == Estimate(None, n=5)


def test_rare_nan_draws_are_dropped_but_frequent_ones_leave_no_interval():
    # NaN only where a resample repeats one item ten times (never, in practice): the rest give the interval
    rows = np.arange(10.0)
    est = bootstrap(rows, lambda r: float(np.mean(r)) if len(set(r)) > 1 else float("nan"), n_resamples=200)
    assert est.value == 4.5 and est.low is not None and 0.0 <= est.low <= est.high <= 9.0
    # NaN whenever item 0 is missing (about a third of the resamples of 4): the defined ones all hold
    # item 0 and are no sample of the uncertainty, so no interval rather than a biased one
    rows = np.arange(4.0)
    est = bootstrap(rows, lambda r: float(np.mean(r)) if 0.0 in r else float("nan"), n_resamples=200)
    assert est.value == 1.5 and est.low is None and est.high is None


def test_coverage_of_a_bernoulli_mean():
    hits = 0
    for k in range(100):
        rows = bernoulli(200, 0.3, seed=1000 + k)
        est = bootstrap(rows, mean_stat, n_resamples=300, seed=k)
        hits += est.low <= 0.3 <= est.high
    assert hits >= 88  # nominal 95%


def test_estimate_formatting_and_dict():
    from robusteval.report.table import fmt_estimate

    assert fmt_estimate(Estimate(None)) == "n/a"
    assert fmt_estimate(Estimate(0.5), 2) == "0.50"
    assert fmt_estimate(Estimate(0.5, 0.25, 0.75, 10), 2) == "0.50 [0.25, 0.75]"
    assert Estimate(0.5, 0.25, 0.75, 10).as_dict() == {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 10}


def test_bootstrap_sums_gives_the_same_interval_as_bootstrap_for_a_ratio_of_sums():
    rng = np.random.default_rng(5)
    per_item = np.column_stack([rng.integers(0, 4, 60), rng.integers(1, 5, 60)]).astype(float)
    reference = bootstrap(per_item, lambda rows: rows[:, 0].sum() / rows[:, 1].sum(), seed=3)
    fast = bootstrap_sums(per_item, lambda sums: sums[:, 0] / sums[:, 1], seed=3)
    assert fast.value == pytest.approx(reference.value)
    assert (fast.low, fast.high) == pytest.approx((reference.low, reference.high))
    assert fast.low < fast.value < fast.high and fast.n == 60


def test_bca_is_scipys_bca_on_the_same_draws():
    # scipy.stats.bootstrap draws its resamples with the same call, so the intervals must match
    from scipy.stats import bootstrap as scipy_bootstrap

    rng = np.random.default_rng(5)
    per_item = np.column_stack([rng.integers(0, 4, 40), rng.integers(4, 6, 40)]).astype(float)
    ours = bootstrap_sums(per_item, lambda sums: sums[:, 0] / sums[:, 1], seed=3)
    theirs = scipy_bootstrap((np.arange(40),),
                             lambda i, axis=-1: per_item[i, 0].sum(axis=-1) / per_item[i, 1].sum(axis=-1),
                             vectorized=True, method="BCa", n_resamples=1000, rng=np.random.default_rng(3))
    assert (ours.low, ours.high) == pytest.approx(tuple(theirs.confidence_interval))
    percentile = bootstrap_sums(per_item, lambda sums: sums[:, 0] / sums[:, 1], seed=3, method="percentile")
    assert (percentile.low, percentile.high) != (ours.low, ours.high)


def test_bca_on_a_constant_statistic_is_a_point_not_nan():
    est = bootstrap(np.ones(20), mean_stat, n_resamples=200)
    assert (est.low, est.value, est.high) == (1.0, 1.0, 1.0)


def test_wilson_is_scipys_wilson():
    from scipy.stats import binomtest

    for k, n in ((0, 10), (3, 10), (17, 20), (20, 20), (41, 100)):
        low, high = wilson(k / n, n)
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert (float(low), float(high)) == pytest.approx((ci.low, ci.high))


def test_a_share_of_independent_cells_is_wilson_and_never_collapses_at_one():
    est = proportion(np.ones(20), np.ones(20))
    assert est.value == 1.0 and est.high == 1.0 and est.n == 20
    assert est.low == pytest.approx(0.8389, abs=1e-4)  # Wilson, 20 of 20 (a bootstrap says [1, 1])
    mixed = proportion(bernoulli(30, 0.6, seed=1), np.ones(30))
    low, high = wilson(mixed.value, 30)
    assert (mixed.low, mixed.high) == pytest.approx((float(low), float(high)))
    # items with no answered cell take no part; a single item gives no interval; none, no value
    assert (proportion(np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0])).low
            == pytest.approx(float(wilson(0.5, 2)[0])))
    assert proportion(np.array([1.0]), np.array([1.0])) == Estimate(1.0, n=1)
    assert proportion(np.zeros(3), np.zeros(3)) == Estimate(None, n=3)


def test_a_share_of_clustered_cells_counts_items_not_cells():
    # 30 items x 4 variants that always agree: 120 cells carry the information of 30
    items = bernoulli(30, 0.6, seed=2)
    clustered = proportion(4 * items, np.full(30, 4.0))
    per_item = proportion(items, np.ones(30))
    naive_low, naive_high = wilson(clustered.value, 120)
    assert clustered.value == per_item.value
    assert clustered.high - clustered.low > per_item.high - per_item.low > naive_high - naive_low
    # variants that vary independently within items: close to the naive 120-cell interval
    independent = np.random.default_rng(3).random((30, 4)) < 0.6
    spread_out = proportion(independent.sum(axis=1), np.full(30, 4.0))
    naive_low, naive_high = wilson(spread_out.value, 120)
    assert spread_out.high - spread_out.low == pytest.approx(naive_high - naive_low, rel=0.25)
    # every item all right: still an interval, one trial per item
    assert proportion(np.full(30, 4.0), np.full(30, 4.0)).low == pytest.approx(float(wilson(1.0, 30)[0]))


def test_a_proportion_covers_at_twenty_items_where_the_percentile_bootstrap_did_not():
    # 20 items, true accuracy 0.9: the percentile bootstrap's 95% interval collapses on samples
    # with 19 or 20 right and covered ~0.87; Wilson's holds its level
    truth, n, reps = 0.9, 20, 400
    wilson_hits = percentile_hits = 0
    for k in range(reps):
        rows = bernoulli(n, truth, seed=5000 + k)
        est = proportion(rows, np.ones(n))
        wilson_hits += est.low <= truth <= est.high
        old = bootstrap_sums(np.column_stack([rows, np.ones(n)]), lambda s: s[:, 0] / s[:, 1], n_resamples=200,
                             method="percentile")
        percentile_hits += old.low <= truth <= old.high
    assert wilson_hits / reps >= 0.93
    assert percentile_hits / reps < 0.9


def test_spread_of_identical_variants_reaches_zero():
    # four variants answered independently at the same 0.6: the sample spread is noise, and the
    # interval must allow a true spread of 0 (a percentile or BCa interval lies above it)
    correct = (np.random.default_rng(7).random((50, 4)) < 0.6).astype(float)
    answered = np.ones_like(correct)
    est = spread_interval(correct, answered, seed=0)
    accuracies = correct.mean(axis=0)
    assert est.value == pytest.approx(accuracies.max() - accuracies.min()) and est.value > 0.05
    assert est.low == 0.0 < est.value < est.high <= 1.0
    old = bootstrap_sums(np.hstack([correct, answered]),
                         lambda s: (s[:, :4] / s[:, 4:]).max(axis=1) - (s[:, :4] / s[:, 4:]).min(axis=1),
                         method="percentile")
    assert old.low > 0.0


def test_spread_of_clearly_different_variants_excludes_zero():
    rng = np.random.default_rng(8)
    correct = (rng.random((200, 3)) < np.array([0.9, 0.6, 0.3])).astype(float)
    est = spread_interval(correct, np.ones_like(correct), seed=0)
    assert 0.3 < est.low < est.value < est.high < 0.9
    assert est == spread_interval(correct, np.ones_like(correct), seed=0)  # deterministic under a seed


def test_spread_leaves_unanswered_variants_and_cells_out():
    correct = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 1, 0]], dtype=float)
    answered = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [1, 1, 0]], dtype=float)
    est = spread_interval(correct, answered, n_resamples=200)
    assert est.value == pytest.approx(0.75 - 2 / 3)  # the third variant was never answered
    assert est.low == 0.0 and est.high > est.value
    assert spread_interval(correct[:, :1], answered[:, :1]) == Estimate(0.0, 0.0, 0.0, 4)
    assert spread_interval(correct[:, 2:], answered[:, 2:]) == Estimate(None, n=4)


def test_spread_of_variants_that_agree_on_every_item_is_not_a_bare_zero():
    # all right in every variant: no bootstrap variance, but 20 items cannot rule out a spread
    correct = np.ones((20, 3))
    est = spread_interval(correct, correct)
    assert (est.value, est.low) == (0.0, 0.0)
    assert est.high == pytest.approx(float(wilson(0.0, 20)[1]))  # none of 20 items differed: <= 0.16


def test_wilson_holds_its_share_exactly_at_the_edges():
    """At p = 0 rounding put the lower end 3e-17 above 0, and the report's error bar (p - low) was
    negative: matplotlib refused it and the run wrote no report."""
    from robusteval.metrics.stats import wilson

    p = np.array([0.0, 1.0, 0.0, 1.0, 0.3])
    n = np.array([13.0, 13.0, 2.7, 5.5, 10.0])
    low, high = wilson(p, n)
    assert np.all(low <= p) and np.all(p <= high)
    assert low[0] == 0.0 and high[1] == 1.0


def test_error_bars_of_an_interval_not_holding_its_value_are_drawn():
    from robusteval.report.plots import bars_with_ci

    png = bars_with_ci(["a", "b"], [{"value": 0.0, "ci_low": 3e-17, "ci_high": 0.2},
                                    {"value": 0.5, "ci_low": 0.55, "ci_high": 0.7}], title="t", ylabel="y")
    assert png.startswith(b"\x89PNG")


def test_a_share_no_resample_can_move_still_gets_an_interval():
    """A macro accuracy of 20 questions all wrong: BCa said [0, 0]; the fallback is Wilson over the items."""
    from robusteval.metrics.consistency import macro_of_sums
    from robusteval.metrics.stats import share_bootstrap, wilson

    per_item = np.zeros((20, 4))  # category sums of 2 categories: correct x 2, then answered x 2
    per_item[:10, 2] = 1
    per_item[10:, 3] = 1
    est = share_bootstrap(per_item, macro_of_sums, n_resamples=200)
    assert est.value == 0.0 and est.low == 0.0
    assert est.high == pytest.approx(float(wilson(0.0, 20)[1])) and est.high > 0.1
    varied = per_item.copy()
    varied[:3, 0] = 1
    est = share_bootstrap(varied, macro_of_sums, n_resamples=200)
    assert est.low < est.value < est.high
