"""The typed metrics record of a hallucination run (``results.json["metrics"]``).

results.json leaves out what a run did not measure (steps that did not run, an order consistency
that was not measured and a cross step's absent matrix: `OmitNone`), and holds two fields per
detector configuration: ``detector`` (the model label that detected) and ``prompt`` (its prompt
variant). Consumers read those fields; none splits the configuration's name ``"model/prompt"`` (a
model label may itself hold "/": ``openai:meta-llama/Llama-3.1-8B``). Runs written before the
fields existed get them on decoding, from the one place that knows how the name was built (`_legacy_parts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Annotated

from pydantic import Field

from robusteval.estimate import Estimate
from robusteval.results.codec import OmitNone

NA = Estimate(None)
NLI_CONFIG = "nli"  # the NLI baseline's configuration name
VOTE_PREFIX = "vote("  # a majority vote's configuration name: vote(a+b+...)


@dataclass(frozen=True)
class GroupScores:
    """Scores of one detector on one scenario, language or hallucination type."""

    f1: Estimate = NA
    accuracy: Estimate = NA
    samples: int = 0


@dataclass(frozen=True)
class PositionBias:
    chose_first: Estimate = NA  # share of valid replies that picked the hypothesis shown first
    gold_first: float | None = None  # share of answered pairs whose hallucinated one was shown first


@dataclass(frozen=True)
class DetectorMetrics:
    """One detector configuration (a model under a prompt variant, the NLI baseline, or a vote)."""

    accuracy: Estimate = NA
    precision: Estimate = NA
    recall: Estimate = NA
    f1: Estimate = NA
    samples: int = 0
    items: int = 0
    invalid: int = 0
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    position_bias: PositionBias = PositionBias()
    order_consistency: OmitNone[Estimate] = None  # None: each pair was shown in one order only
    by_scenario: dict[str, GroupScores] = field(default_factory=dict)
    by_lang: dict[str, GroupScores] = field(default_factory=dict)
    by_type: dict[str, GroupScores] = field(default_factory=dict)
    detector: str | None = None  # the model label that detected; None for the NLI baseline and votes
    prompt: str | None = None  # its detection prompt variant

    def breakdowns(self) -> dict[str, dict[str, GroupScores]]:
        return {"scenario": self.by_scenario, "lang": self.by_lang, "type": self.by_type}


@dataclass(frozen=True)
class PairAgreement:
    cohen_kappa: float | None = None
    mcc: float | None = None
    agreement: float | None = None
    n: int = 0


@dataclass(frozen=True)
class Agreement:
    """Agreement between the detector configurations on the same shown pairs."""

    pairwise: dict[str, PairAgreement] = field(default_factory=dict)  # "a ~ b" (a label, never split)
    fleiss_kappa: float | None = None
    fleiss_n: int = 0
    configs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MatrixCell:
    """One detector configuration on one generator's pairs."""

    f1: Estimate = NA
    accuracy: Estimate = NA
    samples: int = 0
    invalid: int = 0


@dataclass(frozen=True)
class StepMetrics:
    """The detection step, or the cross step (which adds the generator × detector matrix)."""

    detectors: dict[str, DetectorMetrics] = field(default_factory=dict)
    agreement: Agreement = Agreement()
    matrix: OmitNone[dict[str, dict[str, MatrixCell]]] = None  # generator -> configuration -> cell (cross only)

    def __post_init__(self) -> None:
        if any(d.detector is None and d.prompt is None for d in self.detectors.values()):
            detectors = {name: d if d.detector is not None or d.prompt is not None
                         else replace(d, detector=_legacy_parts(name)[0], prompt=_legacy_parts(name)[1])
                         for name, d in self.detectors.items()}
            object.__setattr__(self, "detectors", detectors)

    def matrix_configs(self) -> list[str]:
        """The configurations in the matrix, in order of first appearance."""
        return list(dict.fromkeys(c for row in (self.matrix or {}).values() for c in row))


ONE_SIDED = 0.95  # a detector that picks the same position this often answers the layout, not the pair
ONE_SIDED_MIN = 4  # valid replies below which one position every time may be chance


def one_sided(step: str, m: StepMetrics) -> list[str]:
    """A warning per detector that (nearly) always chose the hypothesis shown first, or second: its
    F1 says how often the hallucinated one happened to be in that place, not that it was detected."""
    out = []
    for name, d in m.detectors.items():
        share, valid = d.position_bias.chose_first.value, d.samples - d.invalid - d.failed
        if share is None or valid < ONE_SIDED_MIN or ONE_SIDED > share > 1 - ONE_SIDED:
            continue
        which = "first" if share >= ONE_SIDED else "second"
        chose = share if share >= ONE_SIDED else 1 - share
        out.append(f"{step}: {name} chose the hypothesis shown {which} in {chose:.0%} of its {valid} valid replies: "
                   f"its F1 {_number(d.f1.value)} measures where the hallucination was shown, not detection")
    return out


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _legacy_parts(name: str) -> tuple[str | None, str | None]:
    """(detector, prompt) of a configuration written before they were stored: the suite named a
    model's configuration ``f"{label}/{prompt}"`` and no prompt variant holds "/", so the prompt is
    after the last "/" (the label keeps any "/" of its own)."""
    if name == NLI_CONFIG or name.startswith(VOTE_PREFIX) or "/" not in name:
        return None, None
    detector, _, prompt = name.rpartition("/")
    return detector, prompt


@dataclass(frozen=True)
class JudgeVerdicts:
    """How one judge saw one generator's hypotheses."""

    hyp_plus_faithful: Annotated[Estimate, Field(alias="hyp+_faithful")] = NA
    hyp_plus_faithful_by_type: Annotated[dict[str, Estimate], Field(alias="hyp+_faithful_by_type")] = \
        field(default_factory=dict)
    hyp_minus_hallucinated: Annotated[Estimate, Field(alias="hyp-_hallucinated")] = NA
    hyp_minus_hallucinated_by_type: Annotated[dict[str, Estimate], Field(alias="hyp-_hallucinated_by_type")] = \
        field(default_factory=dict)
    unjudged: int = 0


@dataclass(frozen=True)
class GeneratorMetrics:
    """What one generator wrote: how many outputs parsed, and per judge how they were seen."""

    items: int = 0
    valid: Estimate = NA
    invalid: int = 0
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    judges: dict[str, JudgeVerdicts] = field(default_factory=dict)


@dataclass(frozen=True)
class HallucinationMetrics:
    """The steps that ran: generation (by generator), detection, cross."""

    generation: OmitNone[dict[str, GeneratorMetrics]] = None
    detection: OmitNone[StepMetrics] = None
    cross: OmitNone[StepMetrics] = None

    def steps(self) -> dict[str, StepMetrics]:
        """The detection-like steps that ran, in order."""
        return {name: step for name, step in (("detection", self.detection), ("cross", self.cross))
                if step is not None}



@dataclass(frozen=True)
class RunInfo:
    """How a hallucination run was set up (results.json ``hallucination``)."""

    steps: list[str] = field(default_factory=list)
    items: int = 0
    detector_configs: list[str] = field(default_factory=list)
    ensembles: list[str] = field(default_factory=list)
    tie_break: str | None = None
    judge: str | None = None
    nli_model: str | None = None
    unlabelled: OmitNone[bool] = None  # True: detection on unlabelled items (the scores are n/a)


@dataclass(frozen=True)
class HallucinationExtra:
    """The hallucination suite's keys beside its metrics in results.json (its `SuiteSpec.extra`)."""

    hallucination: RunInfo = field(default_factory=RunInfo)


__all__ = ["Agreement", "DetectorMetrics", "GeneratorMetrics", "GroupScores", "HallucinationExtra",
           "HallucinationMetrics",
           "JudgeVerdicts", "MatrixCell", "PairAgreement", "PositionBias", "RunInfo", "StepMetrics", "one_sided"]
