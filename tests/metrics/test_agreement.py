import math

import numpy as np
import pytest

from robusteval.metrics.agreement import agreement_report, krippendorff_alpha, spearman, unit_agreement

NAN = float("nan")


def test_krippendorff_interval_alpha_by_hand():
    # values 1,1,2,2,3,4; D_o = 2/6 (only unit 3 disagrees, by 1, counted both ways);
    # D_e = sum over ordered pairs of squared differences / (n(n-1)) = 82/30; alpha = 1 - D_o/D_e = 1 - 10/82
    assert krippendorff_alpha(np.array([[1, 2, 3], [1, 2, 4]], float)) == pytest.approx(1 - 10 / 82)
    assert krippendorff_alpha(np.array([[0, 3, 5], [0, 3, 5]], float)) == pytest.approx(1.0)
    # a missing rating leaves its unit unpairable; the rest agree perfectly
    assert krippendorff_alpha(np.array([[1, 2, NAN], [1, 2, 4]], float)) == pytest.approx(1.0)
    assert krippendorff_alpha(np.array([[3, 3], [3, 3]], float)) is None  # no variation: undefined
    assert krippendorff_alpha(np.array([[1, 2, 3]], float)) is None  # one judge


def test_spearman_and_unit_agreement_by_hand():
    assert spearman(np.array([1, 2, 3, 4.]), np.array([10, 20, 30, 40.])) == pytest.approx(1.0)
    assert spearman(np.array([1, 2, 3, 4.]), np.array([4, 3, 2, 1.])) == pytest.approx(-1.0)
    assert spearman(np.array([1, 2, NAN, 4.]), np.array([1, 2, 3, 4.])) == pytest.approx(1.0)
    assert spearman(np.array([1, 2.]), np.array([1, 2.])) is None  # fewer than 3 units
    assert unit_agreement(np.array([5, 3.])) == pytest.approx(1 - 2 / 5)
    assert unit_agreement(np.array([5, 3, 4.])) == pytest.approx(1 - (4 / 3) / 5)
    assert unit_agreement(np.array([5, NAN])) is None


def test_report_lists_pairs_and_units():
    report = agreement_report({"oracle": np.array([5, 3, NAN, 1.]), "embedding": np.array([4, 3, 2, 0.])},
                              ["a", "b", "c", "d"])
    assert report["judges"] == ["oracle", "embedding"]
    assert report["spearman"]["oracle~embedding"] == pytest.approx(1.0)
    assert report["mean_abs_difference"]["oracle~embedding"] == pytest.approx(2 / 3)
    assert report["per_unit"]["c"] is None and report["per_unit"]["b"] == 1.0
    assert not math.isnan(report["krippendorff_alpha_interval"])
