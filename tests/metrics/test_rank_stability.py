"""`metrics.rank_stability`: pairwise shares of variants won, Kendall's W and the leave-one-variant-out
probability that the top model changes, on small matrices whose answers are known by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import friedmanchisquare

from robusteval.metrics.rank_stability import kendall_w, pair_share, rank_stability, top_change
from robusteval.metrics.stats import wilson


def test_pair_share_counts_ties_half_with_a_wilson_interval_over_variants():
    p = pair_share(np.array([0.5, 0.6, 0.4, 0.7]), np.array([0.4, 0.6, 0.5, 0.6]), "A", "B")
    assert (p.wins, p.variants, p.share) == (2.5, 4, 0.625)
    assert p.low < 0.625 < p.high and not p.holds
    ten = pair_share(np.full(10, 0.6), np.full(10, 0.5))
    assert ten.share == 1.0 and ten.holds and ten.low == pytest.approx(0.722, abs=1e-3)  # Wilson, 10 of 10


def test_kendall_w_is_one_for_agreeing_variants_and_matches_friedman_with_ties():
    agree = np.array([[0.9, 0.8, 0.7], [0.5, 0.4, 0.3], [0.1, 0.2, 0.0]])
    assert kendall_w(agree) == pytest.approx(1.0)
    opposed = np.array([[0.9, 0.1], [0.1, 0.9]])
    assert kendall_w(opposed) == pytest.approx(0.0)
    rng = np.random.default_rng(0)
    s = rng.integers(0, 4, (4, 9)) / 4  # many ties
    chi2 = friedmanchisquare(*s).statistic  # models as treatments, variants as blocks
    assert kendall_w(s) == pytest.approx(chi2 / (9 * 3))
    assert kendall_w(np.full((3, 4), 0.5)) is None  # nothing to rank
    assert kendall_w(agree[:, :1]) is None


def test_top_change_leaves_each_variant_out():
    # A is top overall; on variant 3 B beats A, and A stays top on the other variants: 1 of 4
    s = np.array([[0.8, 0.8, 0.8, 0.5], [0.6, 0.6, 0.6, 0.7]])
    assert top_change(s) == (1, 4)
    # A is top by one large win, B wins the other three: held out v0, B is top and A beats it there;
    # held out v1 (or v2, v3), A is top on the rest (1.7 against 1.1) and B beats it there: 4 of 4,
    # where the plug-in share (variants the overall top A loses) would say 3 of 4
    s = np.array([[0.9, 0.4, 0.4, 0.4], [0.1, 0.5, 0.5, 0.5]])
    assert top_change(s) == (4, 4)
    assert top_change(s[:, :2]) is None


def test_rank_stability_drops_variants_some_model_lacks_and_gives_every_pair():
    s = np.array([[0.7, 0.6, np.nan, 0.8], [0.5, 0.65, 0.9, 0.6], [0.2, 0.3, 0.1, 0.4]])
    r = rank_stability(s, ["a", "b", "c"], ["t1", "t2", "t3", "t4"])
    assert r.variants == ("t1", "t2", "t4") and r.top == "a"
    assert [(p.a, p.b) for p in r.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    ab = r.pair("a", "b")
    ba = r.pair("b", "a")
    assert ab is not None and ba is not None
    assert (ab.wins, ba.wins) == (2.0, 1.0) and ba.low == pytest.approx(1 - ab.high)
    assert r.kendall_w is not None and 0 < r.kendall_w < 1
    assert r.top_change == pytest.approx(1 / 3)  # held out t2: a (top on t1, t4) loses to b
    # Wilson's interval at half the held-out variants: their outcomes are not independent (TOP_DESIGN_EFFECT)
    low, high = wilson(1 / 3, 3 / 2)
    assert (r.top_change_low, r.top_change_high) == (pytest.approx(float(low)), pytest.approx(float(high)))
