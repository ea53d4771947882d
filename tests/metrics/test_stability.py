"""Rank-order stability, win rate, Kendall's W and max rank change on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.metrics.stability import (
    cardinal_scores,
    kendalls_w,
    max_rank_change,
    mean_pairwise,
    mean_stability,
    rank_order_stability,
    ranking,
    spearman,
    stability_matrix,
    tie_safe,
    win_rate_table,
    win_rates,
)

NAN = np.nan


def test_spearman_by_hand():
    # ranks differ by (0, 1, 1, 0): rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # rows with a missing side are dropped: what remains is a perfect order
    assert spearman([1, 2, NAN, 3, 4], [1, 2, 9, 3, 4]) == pytest.approx(1.0)
    assert spearman([1, 1, 1, 1], [1, 2, 3, 4]) is None  # constant: undefined (one rule with agreement's)
    assert spearman([1, 2], [1, 2]) is None  # fewer than 3 personas


def test_rank_order_stability_averages_values():
    a = np.array([[1, 4], [2, 3], [3, 2], [4, 1]], dtype=float)
    b = np.array([[1, 1], [3, 2], [2, 3], [4, 4]], dtype=float)
    # value 0: rho 0.8; value 1: rho -1 -> mean -0.1
    assert rank_order_stability(a, b) == pytest.approx(-0.1)
    # a value that is constant in one context is left out of the mean
    c = b.copy()
    c[:, 1] = 5
    assert rank_order_stability(a, c) == pytest.approx(0.8)
    assert np.isnan(rank_order_stability(a[:, :1], np.ones((4, 1))))


def test_stability_matrix_and_mean_over_pairs():
    a = np.array([[1.0], [2.0], [3.0], [4.0]])
    b = np.array([[1.0], [3.0], [2.0], [4.0]])
    c = np.array([[4.0], [3.0], [2.0], [1.0]])
    m = stability_matrix([a, b, c])
    assert np.allclose(np.diag(m), 1)
    assert m[0, 1] == pytest.approx(0.8) and m[1, 0] == pytest.approx(0.8)
    assert m[0, 2] == pytest.approx(-1.0)
    assert m[1, 2] == pytest.approx(-0.8)
    assert mean_pairwise(m) == pytest.approx((0.8 - 1.0 - 0.8) / 3)
    # the bootstrap's form: contexts side by side
    assert mean_stability(np.hstack([a, b, c]), 3) == pytest.approx(mean_pairwise(m))


def test_win_rate_by_hand():
    table = np.array([[0.9, 0.2], [0.5, 0.8], [0.1, 0.2]])
    wr = win_rate_table(table)
    # game 0: beats 2, 1, 0 of the 2 others; game 1: a tie is no win
    assert wr[:, 0].tolist() == [1.0, 0.5, 0.0]
    assert wr[:, 1].tolist() == [0.0, 1.0, 0.0]
    assert win_rates(table).tolist() == [0.5, 0.75, 0.0]
    assert cardinal_scores(table) == pytest.approx([0.55, 0.65, 0.15])


def test_win_rate_skips_missing_values():
    table = np.array([[1.0, NAN], [0.0, 0.3], [0.5, 0.9]])
    wr = win_rate_table(table)
    assert np.isnan(wr[0, 1])
    assert wr[1, 1] == 0.0 and wr[2, 1] == 1.0  # game 1 is played by two models only
    assert win_rates(table).tolist() == [1.0, 0.0, 0.75]


def test_kendalls_w_by_hand():
    # three games rank three models 1,2,3 / 1,3,2 / 2,1,3: totals 4,6,8, S = 8, W = 12*8/(9*24)
    table = np.array([[1, 1, 2], [2, 3, 1], [3, 2, 3]], dtype=float)
    assert kendalls_w(table) == pytest.approx(96 / 216)
    assert kendalls_w(np.array([[1, 1], [2, 2], [3, 3]], dtype=float)) == pytest.approx(1.0)
    assert kendalls_w(np.array([[3, 1], [2, 2], [1, 3]], dtype=float)) == pytest.approx(0.0)


def test_kendalls_w_tie_correction_by_hand():
    # game 0 ties two models (ranks 1.5, 1.5, 3); totals 2.5, 3.5, 6 -> S = 6.5
    # denominator m^2 (n^3 - n) - m * sum(t^3 - t) = 4 * 24 - 2 * 6 = 84
    table = np.array([[1, 1], [1, 2], [2, 3]], dtype=float)
    assert kendalls_w(table) == pytest.approx(12 * 6.5 / 84)
    assert np.isnan(kendalls_w(np.array([[1.0, 2.0]])))  # one model


def test_ranking_and_max_rank_change_by_hand():
    assert ranking([0.2, 0.9, 0.5]).tolist() == [3, 1, 2]
    assert ranking([0.5, 0.5, NAN]).tolist() == [1, 1, 3]
    table = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.5]])
    # win rates 2/3, 1/3, 1/2 -> ranks 1, 3, 2; without game 0 all tie at 1/2 -> ranks 1, 1, 1:
    # model 1 moves 3 -> 1 (change 2); without game 2 the ranking is unchanged
    assert max_rank_change(table, [[0], [1], [2]]) == 2
    assert max_rank_change(table, [[2]]) is None  # one group: nothing to compare
    assert max_rank_change(table[:1], [[0], [1]]) is None  # one model
    # cardinal: means 2/3, 1/3, 1/2; without game 0 all are 1/2 (change 2), without game 2 none moves
    assert max_rank_change(table, [[2]] * 2, cardinal_scores) == 0
    assert max_rank_change(table, [[0], [2]], cardinal_scores) == 2


# Two personas whose centred scores on the first value are both exactly -14/15 (value_scores of
# these integer answers); in floating point they come out as -0.9333333333333335 and
# -0.933333333333333, which ranked as they are would break the tie by rounding noise.
TIED_ANSWERS = np.array([[3, 1, 1, 1, 1, 5, 4, 4, 2, 4], [5, 3, 3, 6, 5, 6, 3, 5, 6, 4]], dtype=float)
TIED_ITEMS = ("a", "a", "a", "b", "b", "c", "c", "c", "d", "d")


def test_scores_tied_in_exact_arithmetic_share_a_rank():
    from scipy.stats import spearmanr

    from robusteval.metrics.psychometrics import value_scores

    tied = value_scores(TIED_ANSWERS, TIED_ITEMS, ("a", "b", "c", "d"))[:, 0]
    assert tied[0] != tied[1]  # the noise the rounding must absorb
    a = np.array([tied[0], tied[1], 0.5, 1.0])
    b = np.array([2.0, 1.0, 3.0, 4.0])
    exact = spearmanr([-14 / 15, -14 / 15, 0.5, 1.0], b).statistic  # ranks 1.5, 1.5, 3, 4
    assert spearman(a, b) == pytest.approx(exact)
    assert spearman(a[[1, 0, 2, 3]], b) == pytest.approx(exact)  # the same whichever persona comes first
    assert rank_order_stability(a[:, None], b[:, None]) == pytest.approx(exact)


def test_model_scores_tied_in_exact_arithmetic_tie_in_the_leaderboard():
    # means of the same three numbers summed in different orders: 0.20000000000000004 and 0.19999999999999998
    up, down = np.mean([0.1, 0.2, 0.3]), np.mean([0.3, 0.2, 0.1])
    assert up != down
    table = np.array([[up, 0.1 + 0.2], [down, 0.3], [0.9, 0.9]])
    assert win_rate_table(table).tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    assert ranking(np.array([up, down, 0.1])).tolist() == [1, 1, 3]
    # the same rankings in both games, with the tie in each: perfect concordance
    assert kendalls_w(table) == pytest.approx(1.0)


def test_tie_safe_rounds_to_significant_digits_and_keeps_the_rest():
    x = np.array([0.1 + 0.2, 0.3, 3e-12 + 6e-12, 9e-12, -1.1, -1.0999999999999996, 0.0, NAN, np.inf, 123456.78912345])
    out = tie_safe(x)
    assert out[0] == out[1] and out[2] == out[3] and out[4] == out[5]
    assert out[6] == 0.0 and np.isnan(out[7]) and out[8] == np.inf
    assert out[9] == pytest.approx(123456.7891, abs=1e-9)  # 10 significant digits, whatever the magnitude
