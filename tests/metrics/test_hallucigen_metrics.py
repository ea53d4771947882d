import math
from types import SimpleNamespace

import numpy as np
import pytest

from robusteval.metrics.hallucigen import (
    agreement,
    chose_first,
    detection_rows,
    detector_metrics,
    generation_metrics,
    matrix,
    order_consistency,
)


def det(item, order, gold, predicted, *, config="m/incorrect", generator=None, status=None, scenario="paraphrase",
        lang="en", type="date", reason=None):
    """A detection sample; ``predicted`` in the item's order (None = invalid)."""
    status = status or ("ok" if predicted else "invalid")
    position = None
    if predicted:
        position = 1 if (predicted == "hyp1") == (order == "12") else 2
    return SimpleNamespace(item_id=item, order=order, gold=gold, predicted=predicted, predicted_position=position,
                           status=status, config=config, generator=generator, scenario=scenario, lang=lang, type=type,
                           reason=reason if status != "invalid" or reason else "no label")


def test_rows_and_hand_scores():
    samples = [det("a", "12", "hyp1", "hyp1"), det("b", "21", "hyp2", "hyp1"), det("c", "12", "hyp2", None),
               det("d", "12", "hyp1", None, status="failed")]
    ids, rows = detection_rows(samples)
    assert ids == ["a", "b", "c", "d"]
    expected = np.array([[0, 0, np.nan, 1, np.nan], [1, np.nan, 0, np.nan, 2], [1, -1, np.nan, np.nan, np.nan],
                         [0, np.nan, np.nan, np.nan, np.nan]])
    np.testing.assert_array_equal(rows, expected)
    m = detector_metrics(samples, n_resamples=200)
    # scored: a right (hyp1), b wrong (gold hyp2 -> hyp1), c invalid (gold hyp2); d failed is left out
    # accuracy 1/3; class hyp1: tp1 fp1 fn0 -> P .5 R 1 F1 2/3; class hyp2: tp0 fp0 fn2 -> 0
    assert m["accuracy"]["value"] == pytest.approx(1 / 3)
    assert m["f1"]["value"] == pytest.approx(1 / 3)
    assert m["precision"]["value"] == pytest.approx(0.25) and m["recall"]["value"] == pytest.approx(0.5)
    assert (m["samples"], m["items"], m["invalid"], m["failed"]) == (4, 4, 1, 1)
    assert m["invalid_reasons"] == {"no label": 1}
    # a chose position 1, b chose position 2 -> half chose the first; the gold was shown first in
    # a (12, hyp1) and b (21, hyp2), not in c (12, hyp2)
    assert m["position_bias"]["chose_first"]["value"] == pytest.approx(0.5)
    assert m["position_bias"]["gold_first"] == pytest.approx(2 / 3)
    assert "order_consistency" not in m
    assert set(m["by_type"]) == {"date"} and m["by_scenario"]["paraphrase"]["samples"] == 4
    low, high = m["f1"]["ci_low"], m["f1"]["ci_high"]
    assert low <= m["f1"]["value"] <= high


def test_both_orders_position_bias_and_consistency():
    # a model that always answers the first shown position
    samples = []
    for item, gold in (("a", "hyp1"), ("b", "hyp2"), ("c", "hyp1")):
        samples += [det(item, "12", gold, "hyp1"), det(item, "21", gold, "hyp2")]
    _, rows = detection_rows(samples)
    assert chose_first(rows) == 1.0
    assert order_consistency(rows) == 0.0  # it never names the same hypothesis in both orders
    m = detector_metrics(samples, n_resamples=100)
    assert m["accuracy"]["value"] == pytest.approx(0.5)
    assert m["order_consistency"]["value"] == 0.0
    steady = [det("a", "12", "hyp1", "hyp1"), det("a", "21", "hyp1", "hyp1"),
              det("b", "12", "hyp2", "hyp1"), det("b", "21", "hyp2", None)]
    assert order_consistency(detection_rows(steady)[1]) == 0.5  # an invalid reply never agrees


def test_agreement_between_configs():
    gold = ["hyp1", "hyp2", "hyp1", "hyp2"]
    a = ["hyp1", "hyp2", "hyp1", "hyp2"]
    b = ["hyp1", "hyp2", "hyp2", None]  # the last is invalid
    c = ["hyp1", "hyp2", "hyp1", "hyp2"]
    samples = [det(str(i), "12", g, p, config=name) for name, preds in (("A", a), ("B", b), ("C", c))
               for i, (g, p) in enumerate(zip(gold, preds))]
    samples.append(det("9", "12", "hyp1", "hyp1", config="A"))
    samples.append(det("9", "12", "hyp1", None, config="B", status="failed"))
    out = agreement(samples, ["A", "B", "C"])
    assert out["pairwise"]["A ~ C"]["cohen_kappa"] == pytest.approx(1.0)
    assert out["pairwise"]["A ~ C"]["n"] == 4
    ab = out["pairwise"]["A ~ B"]
    assert ab["n"] == 4 and ab["agreement"] == pytest.approx(0.5)  # item 9 failed for B: left out
    # A: hyp1 hyp2 hyp1 hyp2 vs B: hyp1 hyp2 hyp2 invalid -> po .5, pe = (2*1 + 2*2 + 0*1)/16 = 6/16
    assert ab["cohen_kappa"] == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16))
    assert out["fleiss_n"] == 4 and out["fleiss_kappa"] is not None
    assert agreement(samples, ["A"])["fleiss_kappa"] is None


def test_matrix_cells():
    samples = [det("a", "12", "hyp1", "hyp1", generator="g1", config="d"),
               det("b", "12", "hyp2", "hyp1", generator="g1", config="d"),
               det("a", "12", "hyp2", "hyp2", generator="g2", config="d"),
               det("a", "12", "hyp2", None, generator="g2", config="e")]
    m = matrix(samples, ["d", "e"], n_resamples=50)
    assert m["g1"]["d"]["accuracy"]["value"] == 0.5 and "e" not in m["g1"]
    assert m["g2"]["d"]["f1"]["value"] == 1.0 and m["g2"]["e"]["invalid"] == 1


def test_generation_shares():
    generated = [SimpleNamespace(model="g", item_id=i, type=t, status=s, reason=r)
                 for i, t, s, r in (("a", "date", "ok", None), ("b", "number", "ok", None),
                                    ("c", "date", "invalid", "no hyp-"), ("d", None, "failed", None))]
    judged = [SimpleNamespace(judge="j", generator="g", item_id=i, hypothesis=h, success=v)
              for i, h, v in (("a", "hyp+", 1.0), ("a", "hyp-", 0.0), ("b", "hyp+", 1.0), ("b", "hyp-", None))]
    m = generation_metrics(generated, judged, n_resamples=50)["g"]
    assert m["valid"]["value"] == pytest.approx(2 / 3)  # failed left out
    assert (m["items"], m["invalid"], m["failed"], m["invalid_reasons"]) == (4, 1, 1, {"no hyp-": 1})
    j = m["judges"]["j"]
    assert j["hyp+_faithful"]["value"] == 1.0 and j["hyp-_hallucinated"]["value"] == 0.0
    assert j["unjudged"] == 1
    assert j["hyp+_faithful_by_type"]["number"]["value"] == 1.0
    assert j["hyp-_hallucinated_by_type"]["number"]["value"] is None
    assert set(j["hyp+_faithful_by_type"]) == {"date", "number", "any"}
    assert not math.isnan(j["hyp+_faithful"]["n"])
