"""The tree suite's typed metrics (results.json ``metrics``: by model) and cost summary.

`TreeModelMetrics.encode()` gives exactly the JSON the suite wrote before these records existed, so
old runs decode and existing readers keep working: keys that only some runs have (the drop from
root to deepest level, popularity buckets, the RAG stages) are left out when absent, not written
as null. Fields beyond ``accuracy`` have defaults so that partial results (an older or a
hand-trimmed file) still decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robusteval.estimate import Estimate
from robusteval.results.codec import decode, encode
from robusteval.results.sensitivity import Sensitivity

# Where a tree node's answer went wrong, as results name it (`rag.pipeline.attribute` picks one;
# `ModeMetrics.failure_stages` counts them): read by the metrics, the terminal and the report.
STAGES = ("correct", "entity_extraction", "search", "retrieval", "generator", "api")


@dataclass(frozen=True)
class Pooled(Estimate):
    """A mean over samples with a bootstrap CI over questions, and how many samples it averages."""

    samples: int = 0


@dataclass(frozen=True)
class GroupMetrics:
    """Accuracy and token F1 of one tree level or node kind."""

    accuracy: Pooled
    f1: Pooled | None = None


@dataclass(frozen=True)
class StageCount:
    """RAG answers blamed on one stage, and their share of all answers."""

    count: int = 0
    share: float | None = None


# ModeMetrics fields written only when the run has them (see `ModeMetrics.encode`)
_OPTIONAL = ("drop_root_to_deepest", "by_popularity", "subject_found", "search_recall", "context_recall",
             "failure_stages", "sensitivity_by_kind", "sensitivity_by_level")


@dataclass(frozen=True)
class ModeMetrics:
    """One answering mode (``closed``, ``rag-bm25``, ``rag-dense``) of one model."""

    accuracy: Pooled
    f1: Pooled | None = None
    precision: Pooled | None = None
    recall: Pooled | None = None
    bleu: Pooled | None = None
    rouge1: Pooled | None = None
    rougeL: Pooled | None = None
    by_level: dict[str, GroupMetrics] = field(default_factory=dict)  # "0", "1", ...
    by_kind: dict[str, GroupMetrics] = field(default_factory=dict)  # root, paraphrase, lexical
    by_perturbation: dict[str, Pooled] = field(default_factory=dict)
    samples: int = 0
    invalid: int = 0
    failed: int = 0
    drop_root_to_deepest: Estimate | None = None  # accuracy at the root minus at the deepest level
    by_popularity: dict[str, Pooled] | None = None
    subject_found: Pooled | None = None  # RAG modes only, from here on
    search_recall: Pooled | None = None
    context_recall: Pooled | None = None
    failure_stages: dict[str, StageCount] | None = None
    # the sensitivity measures that apply to open answers (docs/metrics.md), per tree with the node
    # kinds (root, paraphrase, lexical) or the levels (0, 1, ...) as its variants, the root as reference
    sensitivity_by_kind: Sensitivity | None = None
    sensitivity_by_level: Sensitivity | None = None

    @property
    def levels(self) -> list[str]:
        """The tree levels answered, in order."""
        return sorted(self.by_level, key=lambda lv: int(lv) if lv.isdigit() else 0)

    @property
    def is_rag(self) -> bool:
        return self.failure_stages is not None

    def encode(self) -> dict[str, Any]:
        data = encode(self)
        return {k: v for k, v in data.items() if not (k in _OPTIONAL and v is None)}


@dataclass(frozen=True)
class ModeComparison:
    """Mode ``a`` minus mode ``b`` on the nodes both answered (keyed `comparison_key(a, b)`; a label
    to show, never split: a consumer that needs the modes has them in ``modes``)."""

    accuracy_difference: Estimate
    context_recall_difference: Estimate | None = None  # two RAG modes only

    def encode(self) -> dict[str, Any]:
        return {k: v for k, v in encode(self).items() if v is not None or k != "context_recall_difference"}


def comparison_key(a: str, b: str) -> str:
    """The results.json key of the comparison of modes ``a`` and ``b``."""
    return f"{a} - {b}"


@dataclass(frozen=True)
class TreeModelMetrics:
    """Every mode of one model, and each pair of modes compared on the same questions."""

    modes: dict[str, ModeMetrics] = field(default_factory=dict)
    comparisons: dict[str, ModeComparison] = field(default_factory=dict)

    def encode(self) -> dict[str, Any]:
        return {"modes": {m: mm.encode() for m, mm in self.modes.items()},
                "comparisons": {k: c.encode() for k, c in self.comparisons.items()}}


TreeMetrics = dict[str, TreeModelMetrics]  # by model: the type its SuiteSpec names


def encode_metrics(metrics: TreeMetrics) -> dict[str, Any]:
    return {model: m.encode() for model, m in metrics.items()}


def decode_metrics(data: Any) -> TreeMetrics:
    return decode(TreeMetrics, data)
