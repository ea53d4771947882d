"""The tree suite's typed metrics (results.json ``metrics``: by model) and cost summary.

Keys that only some runs have (the drop from root to deepest level, popularity buckets, the RAG
stages) are left out when absent, not written as null (`OmitNone`). Fields beyond ``accuracy``
have defaults so that partial results (an older or a hand-trimmed file) still decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robusteval.estimate import Estimate
from robusteval.results.codec import OmitNone
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
    drop_root_to_deepest: OmitNone[Estimate] = None  # accuracy at the root minus at the deepest level
    by_popularity: OmitNone[dict[str, Pooled]] = None
    subject_found: OmitNone[Pooled] = None  # RAG modes only, from here on
    search_recall: OmitNone[Pooled] = None
    context_recall: OmitNone[Pooled] = None
    failure_stages: OmitNone[dict[str, StageCount]] = None
    # the sensitivity measures that apply to open answers (docs/metrics.md), per tree with the node
    # kinds (root, paraphrase, lexical) or the levels (0, 1, ...) as its variants, the root as reference
    sensitivity_by_kind: OmitNone[Sensitivity] = None
    sensitivity_by_level: OmitNone[Sensitivity] = None

    @property
    def levels(self) -> list[str]:
        """The tree levels answered, in order."""
        return sorted(self.by_level, key=lambda lv: int(lv) if lv.isdigit() else 0)

    @property
    def is_rag(self) -> bool:
        return self.failure_stages is not None


@dataclass(frozen=True)
class ModeComparison:
    """Mode ``a`` minus mode ``b`` on the nodes both answered (keyed `comparison_key(a, b)`; a label
    to show, never split: a consumer that needs the modes has them in ``modes``)."""

    accuracy_difference: Estimate
    context_recall_difference: OmitNone[Estimate] = None  # two RAG modes only


def comparison_key(a: str, b: str) -> str:
    """The results.json key of the comparison of modes ``a`` and ``b``."""
    return f"{a} - {b}"


@dataclass(frozen=True)
class TreeModelMetrics:
    """Every mode of one model, and each pair of modes compared on the same questions."""

    modes: dict[str, ModeMetrics] = field(default_factory=dict)
    comparisons: dict[str, ModeComparison] = field(default_factory=dict)


TreeMetrics = dict[str, TreeModelMetrics]  # by model: the type its SuiteSpec names



@dataclass(frozen=True)
class TreeExtra:
    """The tree suite's keys beside its metrics in results.json (its `SuiteSpec.extra`): how the trees
    were built (``trees``: settings, ``full_tree_nodes``, ``build_cost``...), their shapes
    (``tree_shapes``: ``trees``, ``nodes``, ``evaluated``...) and what building and answering cost
    (``cost``: ``build``, ``evaluate`` by model, ``setup``; absent in a build-only run)."""

    trees: dict[str, Any] = field(default_factory=dict)
    tree_shapes: dict[str, Any] = field(default_factory=dict)
    cost: OmitNone[dict[str, Any]] = None

    @property
    def costs(self) -> dict[str, Any]:
        """``cost``, or for a build-only run the build's own cost."""
        return self.cost if self.cost is not None else {"build": self.trees.get("build_cost")}
