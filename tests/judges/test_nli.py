import math

import pytest

from robusteval.errors import UserError
from robusteval.judges.nli import NLIModel, entailment_index, mean_bidirectional


def test_entailment_label_is_found_by_name():
    assert entailment_index({0: "ENTAILMENT", 1: "neutral", 2: "contradiction"}) == 0
    assert entailment_index({0: "not_entailment", 1: "entailment"}) == 1
    assert entailment_index({0: "contradiction", 1: "neutral", 2: "entailment"}) == 2
    with pytest.raises(UserError, match="no entailment label"):
        entailment_index({0: "positive", 1: "negative"})


def test_tiny_model_scores_pairs(tiny_nli_model):
    model = NLIModel(str(tiny_nli_model), batch_size=2)
    results = model.predict([("the cat sat", "the dog ran"), ("a red mat", "a blue mat"), ("the cat", "the cat")])
    assert len(results) == 3
    for r in results:
        assert set(r.labels) == {"entailment", "neutral", "contradiction"}
        assert math.isclose(sum(r.labels.values()), 1.0, rel_tol=1e-5)
        assert r.entailment == r.labels["entailment"]
    # bidirectional is the mean of both directions, and batching does not change a score
    single = NLIModel(str(tiny_nli_model), batch_size=1)
    ab, ba = single.predict([("the cat sat", "the dog ran"), ("the dog ran", "the cat sat")])
    assert model.bidirectional("the cat sat", "the dog ran") == pytest.approx((ab.entailment + ba.entailment) / 2,
                                                                              abs=1e-5)
    assert ab.entailment == pytest.approx(results[0].entailment, abs=1e-5)
    assert mean_bidirectional(model, ["the cat sat", "the dog ran"]) == pytest.approx(
        model.bidirectional("the cat sat", "the dog ran"), abs=1e-5)
    assert math.isnan(mean_bidirectional(model, ["alone"]))


def test_missing_model_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot load NLI model"):
        NLIModel(str(tmp_path / "nope"))


def test_nli_judge_scales_bidirectional_entailment(tiny_nli_model):
    import asyncio

    from robusteval.judges.nli import NLIJudge, load_nli

    judge = NLIJudge(str(tiny_nli_model))
    answers = ["the cat sat", "the dog ran", "a red mat"]
    rating = asyncio.run(judge.rate(answers, None, ("en",) * 3))
    assert rating.score == pytest.approx(5 * mean_bidirectional(load_nli(str(tiny_nli_model)), answers))
    assert 0 <= rating.score <= 5
    assert asyncio.run(judge.rate(["alone"], None, ("en",))).score is None
