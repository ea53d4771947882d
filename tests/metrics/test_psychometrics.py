"""Questionnaire scoring by hand; MDS and CFA on data generated from a known structure (good fit)
and on shuffled data (worse fit)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from robusteval.data.persona import VALUES
from robusteval.metrics.psychometrics import (
    HIGHER_ORDER,
    cfa_fit,
    magnifying_glass,
    mds_structure,
    mean_fit,
    pairwise_correlations,
    reverse_items,
    srmr,
    stress1,
    value_angles,
    value_scores,
)

NAN = np.nan
ITEM_VALUES = tuple(v for v in VALUES for _ in range(3))  # three items per value


def test_value_scores_centre_on_each_respondent_by_hand():
    answers = np.array([[6, 4, 2, NAN], [1, 1, 1, 1], [5, 3, 4, 6]], dtype=float)
    scores = value_scores(answers, ("a", "a", "b", "b"), ("a", "b"))
    # row 0: mean of valid answers 4 -> centred 2, 0, -2 -> a = 1, b = -2 (the invalid answer is left out)
    # row 1: all the same -> 0, 0;  row 2: mean 4.5 -> a = mean(0.5, -1.5) = -0.5, b = mean(-0.5, 1.5) = 0.5
    assert scores.tolist() == [[1.0, -2.0], [0.0, 0.0], [-0.5, 0.5]]
    raw = value_scores(answers, ("a", "a", "b", "b"), ("a", "b"), centre=False)
    assert raw.tolist() == [[5.0, 2.0], [1.0, 1.0], [4.0, 5.0]]


def test_value_scores_reverse_and_invalid_answers():
    answers = np.array([[6, 4, 2, NAN]], dtype=float)
    reverse = np.array([False, False, True, False])
    assert reverse_items(answers, reverse, 6)[0, 2] == 5  # 6 + 1 - 2
    # after reversing: 6, 4, 5 -> mean 5 -> centred 1, -1, 0 -> a = 0, b = 0
    assert value_scores(answers, ("a", "a", "b", "b"), ("a", "b"), reverse=reverse, n_points=6).tolist() == [[0.0, 0.0]]
    # a value with no valid answer is missing, not zero; a respondent with none is all missing
    none_b = np.array([[6, 4, NAN, NAN], [NAN, NAN, NAN, NAN]])
    s = value_scores(none_b, ("a", "a", "b", "b"), ("a", "b"))
    assert s[0, 0] == 0.0 and math.isnan(s[0, 1]) and np.isnan(s[1]).all()


def test_pairwise_correlations_use_complete_pairs():
    x = np.array([[1, 2, 5], [2, 4, 5], [3, 6, 5], [4, NAN, 5], [NAN, 10, 5]], dtype=float)
    r = pairwise_correlations(x)
    assert r[0, 1] == pytest.approx(1.0)
    assert math.isnan(r[0, 2])  # constant column


def test_stress1_is_zero_for_an_exact_configuration_and_scale_free():
    coords = np.array([[0, 0], [3, 0], [0, 4], [1, 1]], dtype=float)
    d = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    assert stress1(d, coords) == pytest.approx(0.0, abs=1e-12)
    assert stress1(10 * d, coords) == pytest.approx(0.0, abs=1e-12)
    bad = coords.copy()
    bad[3] = [5, 5]
    assert stress1(d, bad) > 0.2


def circumplex(n: int, seed: int, noise: float = 0.5) -> np.ndarray:
    """Answers generated from the theoretical circle: each respondent a 2-d value orientation, each
    item at its value's angle, plus a general scale-use factor and noise; 1..6 after rounding."""
    rng = np.random.default_rng(seed)
    angles = value_angles()
    theta = np.array([angles[v] for v in ITEM_VALUES])
    z = rng.normal(size=(n, 2)) * 1.2
    general = rng.normal(size=(n, 1)) * 0.3
    x = 3.5 + z[:, :1] * np.cos(theta) + z[:, 1:] * np.sin(theta) + general + rng.normal(size=(n, len(theta))) * noise
    return np.clip(np.round(x), 1, 6)


def shuffled_within_items(x: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.permutation(col) for col in x.T])


def test_mds_recovers_the_circle_and_shuffled_data_fit_worse():
    data = circumplex(400, seed=1)
    good = mds_structure(data, ITEM_VALUES)
    assert good.error is None and good.stress1 < 0.15
    # the items come out in the theoretical order around the circle
    angles = np.arctan2(good.coords[:, 1], good.coords[:, 0])
    by_value = [np.angle(np.mean(np.exp(1j * angles[[i for i, v in enumerate(ITEM_VALUES) if v == value]])))
                for value in VALUES]
    steps = np.angle(np.exp(1j * np.diff(np.unwrap(by_value))))
    assert (np.sign(steps) == np.sign(steps[0])).all()
    shuffled = mds_structure(shuffled_within_items(data, 2), ITEM_VALUES)
    assert shuffled.stress1 > good.stress1 + 0.1


def test_mds_reports_items_without_variance():
    data = circumplex(60, seed=3)
    data[:, 0] = 4
    result = mds_structure(data, ITEM_VALUES)
    assert result.dropped == (0,) and result.stress1 is not None
    assert mds_structure(np.full((10, 5), 3.0), ITEM_VALUES[:5]).error


def test_spearman_correlations_rank_each_complete_pair():
    x = np.array([[1, 1], [2, 8], [3, 27], [4, 64], [5, NAN], [NAN, 2]], dtype=float)
    assert pairwise_correlations(x, spearman=True)[0, 1] == pytest.approx(1.0)  # monotone: rho 1
    assert pairwise_correlations(x)[0, 1] < 0.99  # Pearson sees the curve


def test_leaderboard_mds_is_nonmetric_mds_of_distances_between_spearman_rows():
    from scipy.spatial.distance import pdist, squareform
    from scipy.stats import spearmanr
    from sklearn.manifold import MDS

    data = circumplex(200, seed=4)
    ours = mds_structure(data, ITEM_VALUES, seed=3, method="leaderboard")
    # the same computation written out: rows of the Spearman matrix, Euclidean distances between
    # them, scikit-learn's non-metric MDS with the defaults of the leaderboard's time, its Stress-1
    rows = spearmanr(data).statistic
    reference = MDS(n_components=2, metric_mds=False, metric="precomputed", n_init=4, init="random", max_iter=300,
                    eps=1e-3, random_state=3, normalized_stress=True).fit(squareform(pdist(rows)))
    assert ours.method == "leaderboard" and ours.error is None
    assert ours.stress1 == pytest.approx(reference.stress_, rel=1e-9)
    assert ours == ours  # frozen result
    again = mds_structure(data, ITEM_VALUES, seed=3, method="leaderboard")
    assert again.stress1 == ours.stress1  # deterministic under a seed


def test_the_two_mds_methods_differ_and_both_see_structure():
    data = circumplex(300, seed=5)
    classic = mds_structure(data, ITEM_VALUES)
    leaderboard = mds_structure(data, ITEM_VALUES, method="leaderboard")
    assert classic.method == "classic" and classic.as_dict()["method"] == "classic"
    assert leaderboard.as_dict()["method"] == "leaderboard"
    assert classic.stress1 != pytest.approx(leaderboard.stress1, abs=0.01)
    noise = mds_structure(shuffled_within_items(data, 6), ITEM_VALUES, method="leaderboard")
    assert noise.stress1 > leaderboard.stress1
    with pytest.raises(ValueError, match="one of leaderboard, classic"):
        mds_structure(data, ITEM_VALUES, method="metric")


def value_factor_data(n: int, seed: int) -> np.ndarray:
    """Answers from a known CFA model: ten correlated value factors (neighbours on the circle
    correlate more), three items per value with loadings 0.8 and unique noise."""
    rng = np.random.default_rng(seed)
    angles = np.array(list(value_angles().values()))
    phi = 0.1 + 0.5 * np.cos(angles[:, None] - angles[None, :])  # factor correlations
    np.fill_diagonal(phi, 1.0)
    factors = rng.multivariate_normal(np.zeros(10), phi, size=n)
    cols = [VALUES.index(v) for v in ITEM_VALUES]
    return 0.8 * factors[:, cols] + rng.normal(size=(n, len(cols))) * 0.6


def test_cfa_magnifying_glass_fits_the_true_structure():
    data = value_factor_data(500, seed=4)
    fits = magnifying_glass(data, ITEM_VALUES)
    assert set(fits) == set(HIGHER_ORDER)
    for fit in fits.values():
        assert fit.error is None and fit.n == 500
        assert fit.cfi > 0.95 and fit.srmr < 0.06 and fit.rmsea < 0.08
    # mislabelled items (the item-to-value key shuffled): every model fits worse
    rng = np.random.default_rng(5)
    wrong = tuple(np.array(ITEM_VALUES)[rng.permutation(len(ITEM_VALUES))])
    bad = magnifying_glass(data, wrong)
    good_mean, bad_mean = mean_fit(fits), mean_fit(bad)
    assert bad_mean["cfi"] < good_mean["cfi"] - 0.1
    assert bad_mean["srmr"] > good_mean["srmr"] + 0.02
    assert bad_mean["rmsea"] > good_mean["rmsea"]


def test_cfa_reports_unfittable_data_instead_of_failing():
    data = value_factor_data(5, seed=6)
    fit = cfa_fit(data, ITEM_VALUES, HIGHER_ORDER["conservation"], "conservation")
    assert fit.cfi is None and "too few" in fit.error
    constant = value_factor_data(200, seed=7)
    constant[:, ITEM_VALUES.index("security")] = 1.0
    fit = cfa_fit(constant, ITEM_VALUES, HIGHER_ORDER["conservation"], "conservation")
    assert fit.cfi is None and "same answer" in fit.error
    assert mean_fit({"x": fit}) == {"cfi": None, "srmr": None, "rmsea": None}


def test_cfa_is_scale_free_and_fits_answers_that_vary_by_hundredths():
    """Expected-value answers of a tiny model vary by a few hundredths around 2; unscaled, SLSQP
    failed on them in some processes ("Singular matrix E"). Fit indices must not depend on scale."""
    data = value_factor_data(300, seed=8)
    tiny = 2 + data * 0.01
    for name, group in HIGHER_ORDER.items():
        a, b = cfa_fit(data, ITEM_VALUES, group, name), cfa_fit(tiny, ITEM_VALUES, group, name)
        assert a.error is None and b.error is None, (a, b)
        assert b.cfi == pytest.approx(a.cfi, abs=1e-3) and b.srmr == pytest.approx(a.srmr, abs=1e-3)
        assert b.rmsea == pytest.approx(a.rmsea, abs=1e-3)


def test_cfa_reports_a_solver_that_did_not_converge(monkeypatch):
    import semopy

    def no_convergence(self, *args, **kwargs):
        return SimpleNamespace(success=False, message="Singular matrix E in LSQ subproblem")

    monkeypatch.setattr(semopy.Model, "fit", no_convergence)
    fit = cfa_fit(value_factor_data(200, seed=9), ITEM_VALUES, HIGHER_ORDER["conservation"], "conservation")
    assert fit.cfi is None and fit.srmr is None and "did not converge (Singular matrix E" in fit.error


def test_mean_item_correlation_by_hand_and_under_a_general_factor():
    from robusteval.metrics.psychometrics import mean_item_correlation

    x = np.array([[1, 2, 6], [2, 4, 5], [3, 6, 4], [4, 8, 3.0]])  # r(0,1) = 1, r(0,2) = r(1,2) = -1
    assert mean_item_correlation(x) == pytest.approx(-1 / 3)
    rng = np.random.default_rng(10)
    general = rng.normal(size=(200, 1)) + 0.2 * rng.normal(size=(200, 20))
    assert mean_item_correlation(general) > 0.9
    assert mean_item_correlation(value_factor_data(200, seed=11)) < 0.6  # ten distinct values
    assert mean_item_correlation(np.ones((5, 3))) is None


def test_srmr_by_hand():
    s = np.array([[4.0, 2.0], [2.0, 9.0]])
    sigma = np.array([[4.0, 1.0], [1.0, 9.0]])
    # only the covariance differs: residual (2 - 1) / (2 * 3) over 3 lower-triangle cells
    assert srmr(s, sigma) == pytest.approx(math.sqrt((1 / 6) ** 2 / 3))
