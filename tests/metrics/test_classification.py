import math

import numpy as np
import pytest
from sklearn.metrics import precision_recall_fscore_support

from robusteval.metrics.classification import INVALID, cohen_kappa, fleiss_kappa, majority_vote, matthews, scores


def test_scores_hand_computed():
    # gold  : 0 0 0 1 1 1 ; pred: 0 0 1 1 -1 nan  (one invalid, one missing)
    s = scores([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, INVALID, np.nan])
    # five scored; correct: 3 -> accuracy 0.6
    # class 0: tp 2, fp 0, fn 1 -> P 1, R 2/3, F1 0.8; class 1: tp 1, fp 1, fn 1 -> P .5, R .5, F1 .5
    assert s["accuracy"] == pytest.approx(0.6)
    assert s["precision"] == pytest.approx(0.75)
    assert s["recall"] == pytest.approx((2 / 3 + 0.5) / 2)
    assert s["f1"] == pytest.approx(0.65)


def test_scores_invalid_is_wrong_but_no_class():
    s = scores([0, 1], [INVALID, INVALID])
    assert s == {"accuracy": 0.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert all(math.isnan(v) for v in scores([0], [np.nan]).values())
    # a group whose gold is one class, all answered right: perfect, not halved by the absent class
    assert scores([1, 1, 1], [1, 1, 1])["f1"] == 1.0


def test_scores_match_scikit_learn():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        gold = rng.integers(0, 2, n)
        pred = rng.choice([0, 1, INVALID], n)
        labels = sorted(set(gold) | set(pred[pred != INVALID]))
        p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=labels, average="macro", zero_division=0)
        s = scores(gold, pred)
        assert (s["precision"], s["recall"], s["f1"]) == pytest.approx((p, r, f))
        assert s["accuracy"] == pytest.approx(np.mean(gold == pred))


def test_cohen_kappa_and_mcc_by_hand():
    a = ["hyp1", "hyp1", "hyp2", "hyp2", "hyp1", None]
    b = ["hyp1", "hyp2", "hyp2", "hyp2", "hyp1", "hyp1"]
    # five paired: agreement po = 4/5; a: 3 hyp1 2 hyp2; b: 2 hyp1 3 hyp2; pe = (3*2 + 2*3)/25 = 12/25
    assert cohen_kappa(a, b) == pytest.approx((0.8 - 12 / 25) / (1 - 12 / 25))
    # MCC from the 2x2 table: tp (hyp1,hyp1)=2, fn (hyp1,hyp2)=1, fp=0, tn=2
    assert matthews(a, b) == pytest.approx((2 * 2 - 1 * 0) / math.sqrt(2 * 3 * 3 * 2))
    assert math.isnan(cohen_kappa(["x", "x"], ["x", "x"]))
    assert math.isnan(matthews(["x", "y"], ["x", "x"]))


def test_fleiss_kappa_by_hand():
    # 4 items, 3 raters: [a a a], [a a b], [b b b], [a b b]
    ratings = [["a", "a", "a"], ["a", "a", "b"], ["b", "b", "b"], ["a", "b", "b"]]
    # P_i: 1, 1/3, 1, 1/3 -> P̄ = 2/3; p_a = p_b = 6/12 -> P_e = 0.5; κ = (2/3 - 1/2) / (1/2) = 1/3
    assert fleiss_kappa(ratings) == pytest.approx(1 / 3)
    assert fleiss_kappa([["a", "a"], ["b", "b"]]) == pytest.approx(1.0)
    assert math.isnan(fleiss_kappa([["a", "a"], ["a", "a"]]))
    with pytest.raises(ValueError):
        fleiss_kappa([["a", "b"], ["a"]])


def test_fleiss_kappa_matches_statsmodels():
    inter = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(0)
    ratings = rng.integers(0, 3, (30, 4))
    table, _ = inter.aggregate_raters(ratings)
    assert fleiss_kappa(ratings.tolist()) == pytest.approx(inter.fleiss_kappa(table, method="fleiss"))


def test_majority_vote():
    assert majority_vote(["hyp1", "hyp1", "hyp2"]) == "hyp1"
    assert majority_vote(["hyp1", None]) == "hyp1"  # an invalid vote abstains
    assert majority_vote(["hyp1", "hyp2"]) is None  # tie
    assert majority_vote([None, None]) is None
    assert majority_vote(["hyp2", "hyp1", "hyp2", None]) == "hyp2"


def test_majority_vote_tie_break():
    assert majority_vote(["hyp2", "hyp1"], "invalid") is None
    assert majority_vote(["hyp2", "hyp1"], "hyp1") == "hyp1"
    assert majority_vote(["hyp1", "hyp2"], "hyp2") == "hyp2"
    assert majority_vote([None, "hyp2", "hyp1"], "first") == "hyp2"  # the first valid vote among the tied
    # a tie break only breaks ties: a majority stands, and a label not among the tied is not chosen
    assert majority_vote(["hyp2", "hyp2", "hyp1"], "hyp1") == "hyp2"
    assert majority_vote(["a", "b", "b", "a", "c"], "c") is None
    assert majority_vote([None, None], "hyp1") is None
