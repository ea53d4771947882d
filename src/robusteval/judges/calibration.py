"""Map an embedder's cosine to the 0-5 similarity scale.

Cosines are not comparable across embedders: MiniLM gives unrelated sentences about 0.05, the
multilingual E5 about 0.7. So each embedder is calibrated on anchor pairs we wrote
(``data/similarity_calibration.yaml``), with three anchors:

- answers to different questions (``unrelated``): their mean cosine maps to 0;
- answers to the same question that disagree on the substance (``same_topic``): mapped to 2,
  "partly similar" — without this anchor, any two answers on one topic would look near-identical
  to an embedder and score close to 5;
- the same content in other words (``same``): mapped to 5.

The score is piecewise linear between the anchors' mean cosines and clipped to [0, 5]
(``numpy.interp``).

When the answers being compared are in several languages, the cross-lingual anchor pairs (same
content in two languages; unrelated content in two languages) are added to each side.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np
import yaml

from robusteval.judges.base import SCALE_MAX

if TYPE_CHECKING:
    from robusteval.judges.embedding import Embedder

SAME_TOPIC_SCORE = 2.0
KINDS = ("unrelated", "same_topic", "same")


@dataclass(frozen=True)
class Calibration:
    embedder: str
    crosslingual: bool
    unrelated: float  # mean cosine that maps to 0
    same_topic: float  # mean cosine that maps to SAME_TOPIC_SCORE
    same: float  # mean cosine that maps to 5
    pairs: int = 0

    def to_scale(self, cosine: float) -> float:
        if not np.isfinite(cosine) or not self.unrelated < self.same_topic < self.same:
            return float("nan")  # an embedder that cannot tell the anchors apart gives no score
        return float(np.interp(cosine, [self.unrelated, self.same_topic, self.same],
                               [0.0, SAME_TOPIC_SCORE, SCALE_MAX]))

    def as_dict(self) -> dict:
        return {"embedder": self.embedder, "crosslingual": self.crosslingual,
                "unrelated_cosine": round(self.unrelated, 4), "same_topic_cosine": round(self.same_topic, 4),
                "same_cosine": round(self.same, 4), "anchor_pairs": self.pairs}


def anchor_pairs(crosslingual: bool = False) -> dict[str, list[tuple[str, str]]]:
    text = resources.files("robusteval.data").joinpath("similarity_calibration.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    return {kind: [tuple(p) for p in data[kind] + (data.get(f"{kind}_crosslingual", []) if crosslingual else [])]
            for kind in KINDS}


@functools.lru_cache(maxsize=8)
def calibrate(embedder: Embedder, crosslingual: bool = False) -> Calibration:
    """The calibration of an embedder (`judges.embedding.load_embedder`) on the bundled anchors
    (computed once per process). The embedder is given, not loaded here: the embedding judge
    calibrates, so loading would be an import cycle."""
    means = {}
    pairs = anchor_pairs(crosslingual)
    for kind, kind_pairs in pairs.items():
        a = embedder.encode([p[0] for p in kind_pairs])
        b = embedder.encode([p[1] for p in kind_pairs])
        means[kind] = float(np.mean(np.sum(a * b, axis=1)))
    return Calibration(embedder.name, crosslingual, means["unrelated"], means["same_topic"], means["same"],
                       sum(len(p) for p in pairs.values()))
