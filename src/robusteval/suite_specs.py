"""The suites, one `SuiteSpec` line each: everything the rest of robusteval needs to know of a suite.

The command line (its subcommands and help), `configure` (the suite's `Options` and the common
settings it does not read), `results` (the record its metrics decode to), the report (its section
and headlines), `compare` and the leaderboard (its per-item values) and ``data check`` (its loader)
all read this one registry. A suite is its module under ``suites/`` plus its line here
(docs/extending.md shows a sixth one).

Every part is named by a dotted path (``"robusteval.results.mcq:McqMetrics"``) and imported only
when asked for: listing the suites imports none of them, and this module sits below every layer
that reads it (`results` and `report` never import a suite; tests/test_imports.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from robusteval.errors import UserError

# mcq's design settings: `RunConfig` fields, since users of the first suite put them in any config
# (persona has its own scoring). Another suite that is given one refuses it, naming its own flags.
MCQ_ONLY = ("families", "cross", "scoring", "templates", "shots", "n_shots", "fewshot_multiturn")


def _attribute(target: str) -> Any:
    """``"package.module:name"`` (or ``:Class.method``) -> that object (the module imported now)."""
    module, _, name = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


@dataclass(frozen=True)
class SuiteSpec:
    """One suite.

    - ``module``: its module under ``suites/`` (``Options``, ``add_arguments``, ``validate``,
      ``execute``; ``print_summary`` optional: without it the terminal shows every estimate);
    - ``metrics``: the record type results.json's ``metrics`` are written from and read back as, by
      the one codec (`results.codec`: no encoder of its own; None: plain JSON), which the suite hands
      back in `SuiteResult.metrics`;
    - ``extra``: the record of its keys beside the metrics in results.json, written and read by the
      same codec (the suite hands it back in `SuiteResult.extra`; None: plain JSON);
    - ``section``: its report module (``sections(run)``, ``headlines(metrics)``, from the typed record; None: every
      estimate in one table, and each model's estimates as headlines);
    - ``item_values``: its per-item values for ``compare`` and the leaderboard (None: none);
    - ``values_from_samples``: whether those values need samples.jsonl (False: results.json alone,
      so a leaderboard never reads the samples);
    - ``checker``: what ``data check --suite NAME`` loads a dataset with (None: not supported);
    - ``unused``: the common settings (`RunConfig` fields) it does not read: giving one is an error.
    """

    name: str
    summary: str  # one line of ``robusteval run --help``
    module: str
    metrics: str | None = None
    extra: str | None = None
    section: str | None = None
    item_values: str | None = None
    values_from_samples: bool = True
    checker: str | None = None
    unused: tuple[str, ...] = ()

    def suite(self) -> ModuleType:
        return importlib.import_module(self.module)

    @property
    def options(self) -> type:
        """The suite's own settings (a frozen dataclass, every field with a default)."""
        options: type = self.suite().Options
        return options

    def metrics_type(self) -> Any | None:
        return None if self.metrics is None else _attribute(self.metrics)

    def extra_type(self) -> Any | None:
        return None if self.extra is None else _attribute(self.extra)

    def section_module(self) -> ModuleType | None:
        return None if self.section is None else importlib.import_module(self.section)

    def item_values_of(self) -> Callable[[dict[str, Any], list[dict[str, Any]]], list[Any]] | None:
        return None if self.item_values is None else _attribute(self.item_values)

    def checker_of(self) -> Callable[[str, Any, str, str], None] | None:
        return None if self.checker is None else _attribute(self.checker)


_VALUES = "robusteval.report.item_values"
SUITES: dict[str, SuiteSpec] = {spec.name: spec for spec in (
    SuiteSpec("mcq", "multiple choice under option formats, orders, templates and few-shot (SCORE)",
              "robusteval.suites.mcq", metrics="robusteval.results.mcq:McqMetrics",
              extra="robusteval.results.mcq:McqExtra",
              section="robusteval.report.sections.mcq", item_values=f"{_VALUES}:mcq_values",
              checker="robusteval.data.check:check_mcq"),
    SuiteSpec("consistency", "same request in other styles or languages: are the answers the same? (ELOQUENT 2024)",
              "robusteval.suites.consistency", metrics="robusteval.results.consistency:ConsistencyMetrics",
              extra="robusteval.results.consistency:ConsistencyExtra",
              section="robusteval.report.sections.consistency", item_values=f"{_VALUES}:consistency_values",
              values_from_samples=False,
              unused=MCQ_ONLY),
    # one reply per prompt (no --samples); agreement is measured across detectors
    SuiteSpec("hallucination", "generate, detect and cross-evaluate hallucinations (CLEF 2024 HalluciGen)",
              "robusteval.suites.hallucination", metrics="robusteval.results.hallucination:HallucinationMetrics",
              extra="robusteval.results.hallucination:HallucinationExtra",
              section="robusteval.report.sections.hallucination", item_values=f"{_VALUES}:hallucination_values",
              unused=("samples", *MCQ_ONLY)),
    SuiteSpec("tree", "accuracy as a question drifts through paraphrase and typo trees, with RAG (LexEval)",
              "robusteval.suites.tree", metrics="robusteval.results.tree:TreeMetrics",
              extra="robusteval.results.tree:TreeExtra",
              section="robusteval.report.sections.tree", item_values=f"{_VALUES}:tree_values",
              unused=("samples", *MCQ_ONLY)),
    # --population / --personas choose who is asked (no --data, --limit)
    SuiteSpec("persona", "do simulated personas keep their values across contexts? (Stick To Your Role!)",
              "robusteval.suites.persona", metrics="robusteval.results.persona:PersonaMetrics",
              extra="robusteval.results.persona:PersonaExtra",
              section="robusteval.report.sections.persona", item_values=f"{_VALUES}:persona_values",
              values_from_samples=False,
              unused=("data", "limit", "samples", *MCQ_ONLY)),
)}


def suite_spec(name: str) -> SuiteSpec:
    """The spec of the suite ``name``; a `UserError` listing the suites for another name."""
    if name not in SUITES:
        raise UserError(f"unknown suite {name!r}; available: {', '.join(SUITES)}")
    return SUITES[name]
