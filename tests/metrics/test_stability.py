"""Rank-order stability, win rate, Kendall's W and max rank change on hand-computed cases."""

from __future__ import annotations

import math

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


def test_tie_safe_rounds_to_fixed_decimals_and_keeps_the_rest():
    x = np.array([0.1 + 0.2, 0.3, 3e-12 + 6e-12, 9e-12, -1.1, -1.0999999999999996, 0.0, NAN, np.inf, 123456.78912345,
                  -1.8e-16, -0.0, 2e-10])
    out = tie_safe(x)
    assert out[0] == out[1] and out[2] == out[3] and out[4] == out[5]
    assert out[6] == 0.0 and np.isnan(out[7]) and out[8] == np.inf
    assert out[9] == pytest.approx(123456.7891234500, abs=1e-9)  # 10 decimals, whatever the magnitude
    # a value that is 0 in exact arithmetic but -1.8e-16 in floating point ties with 0.0 (significant
    # digits kept it apart); a real difference of 2e-10 is kept
    assert out[10] == out[11] == out[6] == 0.0 and not np.signbit(out[11])
    assert out[12] == 2e-10 and ranking(out[[6, 10, 12]]).tolist() == [2, 2, 1]




def _exact_value_scores(answers: np.ndarray, item_values: tuple[str, ...], values: tuple[str, ...]) -> list[list]:
    """`psychometrics.value_scores` (centred, no invalid answer) in exact rational arithmetic."""
    from fractions import Fraction

    out = []
    for row in answers:
        centred = [Fraction(int(a)) - Fraction(int(sum(row)), len(row)) for a in row]
        out.append([sum((c for c, v in zip(centred, item_values) if v == value), Fraction(0))
                    / sum(v == value for v in item_values) for value in values])
    return out


def _exact_spearman(x: list, y: list) -> float | None:
    """Spearman's rho with ties averaged, every rank and sum exact (only the final square root is not)."""
    from fractions import Fraction

    def ranks(xs):
        return [Fraction(2 * sum(o < v for o in xs) + sum(o == v for o in xs) + 1, 2) for v in xs]

    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx, vy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return math.copysign(math.sqrt(cov * cov / (vx * vy)), cov)


def _significant_digits(x, digits: int = 10):
    """The rounding `tie_safe` used before: to significant digits, which keeps -1.8e-16 apart from 0."""
    x = np.asarray(x, dtype=float)
    finite = np.isfinite(x) & (x != 0)
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.abs(np.where(finite, x, 1.0)))))
    return np.where(finite, np.round(x * scale) / scale, x)


def test_rank_order_stability_on_the_leaderboards_questionnaire_equals_exact_arithmetic(realdata, monkeypatch):
    """The leaderboard's own PVQ-40 (both gendered files) and its 50 people, answered as the stub answers
    (a letter picked by a hash of context, persona and item; 2 or 3 points used, where centred
    value scores that are 0 in exact arithmetic come out as +-1e-16): every context pair's rank-order
    stability equals the one computed with exact rational scores and ranks, within 1e-12. The old
    significant-digit rounding split those zeros from the exact ones and missed by up to 4e-4."""
    import hashlib

    from robusteval.data.persona import load_population, load_questionnaire
    from robusteval.metrics import stability
    from robusteval.metrics.psychometrics import value_scores

    vs = realdata / "value-stability"
    q = load_questionnaire(f"pvq40:{vs / 'data_pvq'}")
    people = load_population(str(vs / "personas" / "real_world_people.json"))
    assert len(q.items) == 40 and len(people) == 50 and not any(item.reverse for item in q.items)

    def answers(context: str, points: int) -> np.ndarray:
        return np.array([[1 + int(hashlib.sha256(f"{context}|{p.id}|{item.id}".encode()).hexdigest(), 16) % points
                          for item in q.items] for p in people], dtype=float)

    misses_before = []
    for points, salt in [(2, 0), (2, 2), (2, 4), (3, 0), (3, 3)]:
        grids = [answers(f"{salt}c{n}", points) for n in range(3)]
        scores = [value_scores(g, q.item_values, q.values, n_points=len(q.scale)) for g in grids]
        exact = [_exact_value_scores(g, q.item_values, q.values) for g in grids]
        for i, j in [(0, 1), (0, 2), (1, 2)]:
            rhos = [r for v in range(len(q.values)) if (r := _exact_spearman([row[v] for row in exact[i]],
                                                                             [row[v] for row in exact[j]])) is not None]
            want = sum(rhos) / len(rhos)
            assert rank_order_stability(scores[i], scores[j]) == pytest.approx(want, abs=1e-12), (points, salt, i, j)
            with monkeypatch.context() as m:
                m.setattr(stability, "tie_safe", _significant_digits)
                misses_before.append(abs(rank_order_stability(scores[i], scores[j]) - want))
    assert max(misses_before) > 1e-4  # the case the test is for: without fixed decimals it fails
