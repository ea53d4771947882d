"""The mcq suite's typed results: metrics per model and family, the perturbed copies' counts, and
the sample rows ``compare`` reads.

The codec writes them by these declared types (``macro_accuracy`` and ``categories`` appear only
where the items have two or more categories: `OmitNone`); `decode(McqMetrics, data)` reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from robusteval.estimate import Estimate
from robusteval.results.budget import BudgetEstimates
from robusteval.results.codec import OmitNone, decode, encode
from robusteval.results.lm_eval import LmEvalFigures
from robusteval.results.search import SearchResults
from robusteval.results.sensitivity import Sensitivity


@dataclass(frozen=True)
class VariantMetrics:
    """One variant of a family: its accuracy and how its replies went."""

    accuracy: Estimate
    answered: int
    invalid: int
    invalid_rate: Estimate
    failed: int
    macro_accuracy: OmitNone[Estimate] = None  # mean of the categories' accuracies (two or more categories)


@dataclass(frozen=True)
class CategoryMetrics:
    """One category's (MMLU-Pro category, MMLU subject, AGIEval subset) accuracy over all of a
    family's replies to its questions, with its interval (clustered by question), and the counts
    behind it: replies read as right, as wrong, unreadable (invalid, counted wrong), and failed."""

    accuracy: Estimate
    items: int
    answered: int
    correct: float  # a mean over samples where a variant was asked several times
    invalid: int

    @property
    def wrong(self) -> float:
        """Readable replies that were wrong (unreadable ones are counted apart, in ``invalid``)."""
        return self.answered - self.correct - self.invalid


@dataclass(frozen=True)
class PositionShare:
    """One shown label position: how often it was chosen (with a CI) and how often it held the gold."""

    chosen: Estimate
    correct: float | None


@dataclass(frozen=True)
class VarianceShares:
    """Shares of one (item, variant) cell's variance, summing to 1: from the variants (templates),
    from the items (questions), and from their interaction with the residual noise."""

    variants: float
    items: float
    interaction: float


@dataclass(frozen=True)
class PopulationAccuracy:
    """The mean accuracy over the population the variants were drawn from (a family whose variants
    are a sample: templates, paraphrases, draws), with a 95% interval over items and variants
    together (`metrics.two_way`), over the ``items`` answered in all ``variants``."""

    value: float | None
    low: Annotated[float | None, Field(alias="ci_low")] = None  # in JSON: ci_low / ci_high
    high: Annotated[float | None, Field(alias="ci_high")] = None
    items: int = 0
    variants: int = 0
    variance_shares: VarianceShares | None = None


@dataclass(frozen=True)
class CircularMetrics:
    """The `circular` family's CircularEval figures (`metrics.circular`): the share of questions
    answered right under every rotation of their options, and under at least j of their n rotations
    (``at_least["3/4"]``), each with a 95% interval over questions; ``questions`` counted (every
    rotation answered), ``incomplete`` left out (a rotation's request failed)."""

    accuracy: Estimate = field(default_factory=lambda: Estimate(None))
    at_least: dict[str, Estimate] = field(default_factory=dict)
    questions: int = 0
    incomplete: int = 0


@dataclass(frozen=True)
class FamilyMetrics:
    """One family (or crossed design, or family under a log-likelihood rule) of one model. Every
    field has a default so that older or hand-written results.json files with fewer keys still read
    (what they lack shows as n/a)."""

    variants: dict[str, VariantMetrics] = field(default_factory=dict)
    accuracy: Estimate = field(default_factory=lambda: Estimate(None))
    consistency_rate: Estimate = field(default_factory=lambda: Estimate(None))
    consistency_rate_pooled: Estimate = field(default_factory=lambda: Estimate(None))
    spread: Estimate = field(default_factory=lambda: Estimate(None))
    std_across_variants: Estimate = field(default_factory=lambda: Estimate(None))
    samples: int = 0
    invalid: int = 0
    failed: int = 0
    position_bias: dict[str, PositionShare] = field(default_factory=dict)
    macro_accuracy: OmitNone[Estimate] = None
    # every sensitivity measure (docs/metrics.md); None in results written before they were measured
    sensitivity: OmitNone[Sensitivity] = None
    # accuracy per category, in the items' order of first appearance (two or more categories only)
    categories: OmitNone[dict[str, CategoryMetrics]] = None
    # the same over valid replies only (a question's invalid variants left out); None without invalid replies
    sensitivity_valid: OmitNone[Sensitivity] = None
    # accuracy over valid replies only (invalid ones left out, not counted wrong), beside ``accuracy``
    # so a tiny model's headline says how it answers when it answers; None without invalid replies
    accuracy_valid: OmitNone[Estimate] = None
    # the population mean over items and variants together, for a family whose variants are a
    # sample (`metrics.two_way.is_sampled`); None for a fixed design (format, order) and in older runs
    population: OmitNone[PopulationAccuracy] = None
    # the circular family's CircularEval figures (all rotations right, at least j of n); None for others
    circular: OmitNone[CircularMetrics] = None
    # how the default reader read the replies (`types.READ_AS`: label, phrase, text, invalid) -> replies;
    # None under another reader, loglik scoring, and in older runs
    read_as: OmitNone[dict[str, int]] = None

    def as_dict(self) -> dict[str, Any]:
        """This family's JSON, as results.json holds it (the codec's, by this type)."""
        data: dict[str, Any] = encode(self)
        return data


# what each way of reading means in `read_as_line` (`readers.content` has the rules)
READ_AS_NAMES = {"label": 'by "The best answer is [label]"', "phrase": "by a label in another phrasing",
                 "text": "by an option's text", "invalid": "unread (invalid)"}


def read_as_line(title: str, counts: dict[str, int] | None) -> str | None:
    """How the default reader read a family's replies (`FamilyMetrics.read_as`), one line beside its
    accuracy so the reading rule stays visible; None where nothing was recorded (another reader)."""
    total = sum((counts or {}).values())
    if not counts or not total:
        return None
    ways = ", ".join(f"{n} {READ_AS_NAMES.get(way, way)} ({n / total:.0%})" for way, n in counts.items())
    return f"{title}: {total} replies read: {ways}"


# model -> family name (as in samples.jsonl: "order", "format×order", "order/loglik-label") -> metrics
McqMetrics = dict[str, dict[str, FamilyMetrics]]


def read_metrics(data: Any) -> McqMetrics:
    """results.json's ``metrics`` of an mcq run, typed."""
    return decode(McqMetrics, data or {})


@dataclass(frozen=True)
class FormatInfo:
    """One format of the `formats` family as results.json ``design.formats`` records it: its atomic
    choices (`probes.formats.GrammarFormat`), its layout with placeholders, and an example question
    rendered in it (what the report shows for the best and worst)."""

    separator: str = ""
    casing: str = ""
    field_space: str = ""
    options_space: str = ""
    option_space: str = ""
    option_separator: str = ""
    wrapper: str = ""
    numbering: str = ""
    layout: str = ""
    example: str = ""


WARN_INVALID = 0.10  # above this share of invalid replies a run says so, with examples


@dataclass(frozen=True)
class InvalidReplies:
    """One model's replies no answer could be read from (results.json ``invalid_replies``): above
    `WARN_INVALID` of them the terminal and the report warn, quoting ``examples`` (the first few),
    because such a run measures the reading rule more than the model."""

    replies: int = 0  # replies read (failed requests left out)
    invalid: int = 0
    examples: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        return self.invalid / self.replies if self.replies else 0.0

    def warning(self, model: str, reader: str | None) -> str | None:
        """The warning's text, or None at or under `WARN_INVALID`."""
        if self.share <= WARN_INVALID:
            return None
        by = f"reader {reader!r}" if reader else "the reader"
        return (f"{model}: {self.invalid} of {self.replies} replies ({self.share:.0%}) are invalid: {by} found no "
                "answer in them, and each counts as wrong. The figures measure the reading rule as much as the "
                "model: look at the replies, try another --reader, and see the sensitivity over valid replies only.")


@dataclass(frozen=True)
class CopyCounts:
    """What became of one perturbation family's copies (``--families typo,paraphrase``): asked
    for (items × copies per item), kept, refused by the checks, failed requests, and, under
    ``--estimate``, counted without asking. ``reasons`` counts every refused attempt's reason."""

    family: str
    kind: str  # "text" (pure) or "rewrite" (written by the rewriter model)
    asked: int
    kept: int
    rejected: int = 0
    failed: int = 0
    estimated: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    rewriter: str | None = None


@dataclass(frozen=True)
class McqExtra:
    """The mcq suite's keys beside its metrics in results.json (its `SuiteSpec.extra`), each present
    only where the run has it."""

    # the design: templates, ``reader``, ``template_set``, ``base_template``, ... (docs/results.md)
    design: dict[str, Any] = field(default_factory=dict)
    perturbations: OmitNone[dict[str, CopyCounts]] = None  # by family: perturbation families' copies
    invalid_replies: OmitNone[dict[str, InvalidReplies]] = None  # by model, where some reply was unreadable
    budget: OmitNone[BudgetEstimates] = None  # --budget
    budget_truth: OmitNone[BudgetEstimates] = None  # score GRID --budget: the full grid's own figures
    lm_eval: OmitNone[LmEvalFigures] = None  # score on lm-eval's output with its results_*.json
    scored: OmitNone[dict[str, Any]] = None  # a folder written by `score`: kind, files, reader
    search: OmitNone[SearchResults] = None  # --search best-worst: the best and worst variant found
    search_truth: OmitNone[SearchResults] = None  # score GRID --search: the full grid's true best and worst

    @property
    def reader(self) -> str | None:
        """The reader the replies were read with (None: the default, or an older run)."""
        reader = self.design.get("reader")
        return None if reader is None else str(reader)

    @property
    def formats(self) -> dict[str, FormatInfo]:
        """The `formats` family's formats (``design.formats``; empty in runs without that family)."""
        return decode(dict[str, FormatInfo], self.design.get("formats") or {})

    @property
    def copy_counts(self) -> list[CopyCounts]:
        return list((self.perturbations or {}).values())


@dataclass(frozen=True)
class SampleRow:
    """The fields of an mcq samples.jsonl line that ``compare`` pairs runs on."""

    model: str
    item_id: str
    family: str
    variant: str
    sample: int
    correct: bool | None
    answer_option: int | None
    order: tuple[int, ...] = ()  # the original options in shown order (the published order: the reference)
    logliks: tuple[float, ...] = ()  # log-likelihood scoring: each shown option's score (POSIX)
    category: str | None = None  # the question's category (MMLU-Pro category, MMLU subject, AGIEval subset)


def read_rows(rows: list[dict[str, Any]]) -> list[SampleRow]:
    return decode(list[SampleRow], rows)
