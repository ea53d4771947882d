"""The typed records of a persona run: its metrics by model (``results.json["metrics"]``,
`PersonaMetrics`) and the leaderboard's aggregation (``results.json["leaderboard"]``, and what
``robusteval compare`` computes across runs: `PersonaBoard`).

Keys that only a run with lost answers has (``lost_contexts``, ``na_reason``), and an MDS's
``dropped_items``/``method`` where it had none, are left out rather than written as null
(`OmitNone`). A game is a `Game` (its metric and the contexts it involves as fields); its name
(``stability:a|b``) is a label for people, never parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robusteval.estimate import Estimate
from robusteval.results.codec import OmitNone, decode

NA = Estimate(None)


@dataclass(frozen=True)
class Game:
    """One column of the leaderboard's models x games table: a context pair's stability, or one
    validity metric in one context (oriented so that higher is better)."""

    metric: str  # stability | cfi | srmr | rmsea | stress1
    contexts: tuple[str, ...]  # the two contexts of a stability game, the one context of a validity game

    @property
    def name(self) -> str:
        return f"{self.metric}:{'|'.join(self.contexts)}"


@dataclass(frozen=True)
class StabilityMatrix:
    contexts: list[str] = field(default_factory=list)
    values: list[list[float | None]] = field(default_factory=list)  # None: a context lost answers

    def cell(self, a: str, b: str) -> float | None:
        return self.values[self.contexts.index(a)][self.contexts.index(b)]


@dataclass(frozen=True)
class MDSFit:
    stress1: float | None = None
    method: OmitNone[str] = None  # leaderboard | classic; None where no MDS was run (a lost context)
    error: str | None = None
    dropped_items: OmitNone[list[str | int]] = None  # items left out (constant or unanswered)


@dataclass(frozen=True)
class CFAResult:
    cfi: float | None = None
    srmr: float | None = None
    rmsea: float | None = None
    n: int = 0
    error: str | None = None


@dataclass(frozen=True)
class MeanFit:
    cfi: float | None = None
    srmr: float | None = None
    rmsea: float | None = None


@dataclass(frozen=True)
class ContextValidity:
    """Answers and the value structure they show, in one context."""

    answers: int = 0
    invalid: int = 0
    failed: int = 0
    invalid_rate: float | None = None
    letter_mass: float | None = None  # mean probability on scale letters (logprob scorings)
    mds: MDSFit = MDSFit()
    cfa: dict[str, CFAResult] = field(default_factory=dict)
    cfa_mean: MeanFit = MeanFit()
    mean_item_r: float | None = None
    na_reason: OmitNone[str] = None  # the context lost answers: why its figures are n/a


@dataclass(frozen=True)
class LostContext:
    failed: int = 0
    answers: int = 0
    error: str = ""


@dataclass(frozen=True)
class ModelStability:
    """One model: rank-order stability across contexts, and validity per context."""

    rank_order_stability: Estimate = NA
    stability_matrix: StabilityMatrix = StabilityMatrix()
    stability_per_value: dict[str, float | None] = field(default_factory=dict)
    # how many of the context pair x value Spearman correlations behind the figure are defined, of
    # how many (None in runs from before they were counted): "0.500" from 1 of 10 says so
    stability_correlations: OmitNone[int] = None
    stability_defined: OmitNone[int] = None
    validity: dict[str, ContextValidity] = field(default_factory=dict)
    answers: int = 0
    invalid: int = 0
    failed: int = 0
    invalid_rate: float | None = None
    lost_contexts: OmitNone[dict[str, LostContext]] = None
    na_reason: OmitNone[str] = None


PersonaMetrics = dict[str, ModelStability]  # by model


def stability_caveat(m: ModelStability) -> str | None:
    """What a reader must know about the stability figure: it is the mean of only some of the
    correlations it is made of (None when all are defined, or not counted)."""
    if m.stability_defined is None or not m.stability_correlations:
        return None
    if m.stability_defined == 0:
        return (f"n/a: none of the {m.stability_correlations} value correlations is defined (every persona "
                "answered a value alike, or fewer than 3 personas)")
    if m.stability_defined < m.stability_correlations:
        return (f"the mean of {m.stability_defined} of {m.stability_correlations} value correlations; the other "
                f"{m.stability_correlations - m.stability_defined} are undefined (every persona answered that value "
                "alike, or fewer than 3 personas): more personas or contexts make it a mean of more")
    return None


def decode_metrics(data: Any) -> PersonaMetrics:
    return decode(PersonaMetrics, data)


@dataclass(frozen=True)
class ContextInfo:
    """A context of the run (``results.json["contexts"]``), in the order of its stability matrix."""

    name: str
    kind: str = ""


@dataclass(frozen=True)
class BoardEntry:
    cardinal: float | None = None  # mean over the games (None: the model lost a context)
    win_rate: float | None = None  # mean share of the other models beaten (None: some model lost a context)
    na_reason: OmitNone[str] = None


@dataclass(frozen=True)
class PersonaBoard:
    """The Stick To Your Role! aggregation: per model (or run/model) a cardinal score and a win
    rate; for the benchmark its diversity (1 - Kendall's W) and sensitivity (the largest rank change
    when one context's games are left out)."""

    games: list[str] = field(default_factory=list)  # the games' names, for people (`Game.name`)
    models: dict[str, BoardEntry] = field(default_factory=dict)
    kendalls_w: float | None = None
    diversity: float | None = None
    sensitivity_win_rate: int | None = None
    sensitivity_cardinal: int | None = None
    na_reason: OmitNone[str] = None


@dataclass(frozen=True)
class PersonaExtra:
    """The persona suite's keys beside its metrics in results.json (its `SuiteSpec.extra`)."""

    leaderboard: PersonaBoard | None = None
    population: list[dict[str, Any]] = field(default_factory=list)  # the simulated personas
    contexts: list[ContextInfo] = field(default_factory=list)
    questionnaire: dict[str, Any] = field(default_factory=dict)  # name, items, scale
    turns: int | None = None
    scoring: str = "generate"
    context_max_tokens: int | None = None
    mds: str = "classic"


__all__ = ["BoardEntry", "CFAResult", "ContextInfo", "ContextValidity", "Game", "LostContext", "MDSFit", "MeanFit",
           "ModelStability", "PersonaBoard", "PersonaExtra", "PersonaMetrics", "StabilityMatrix", "decode_metrics"]
