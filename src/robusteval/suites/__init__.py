"""The suites, one module each; `get_suite` imports one by name (so `robusteval run mcq` never
imports what only another suite needs)."""

from __future__ import annotations

import importlib
from types import ModuleType

SUITE_MODULES = {
    "mcq": "robusteval.suites.mcq",
    "consistency": "robusteval.suites.consistency",
    "hallucination": "robusteval.suites.hallucination",
    "tree": "robusteval.suites.tree",
    "persona": "robusteval.suites.persona",
}
SUITES = tuple(SUITE_MODULES)
# One line each for `robusteval run --help`, so listing the suites imports none of them.
SUITE_SUMMARIES = {
    "mcq": "multiple choice under option formats, orders, templates and few-shot (SCORE)",
    "consistency": "same request in other styles or languages: are the answers the same? (ELOQUENT 2024)",
    "hallucination": "generate, detect and cross-evaluate hallucinations (CLEF 2024 HalluciGen)",
    "tree": "accuracy as a question drifts through paraphrase and typo trees, with RAG (LexEval)",
    "persona": "do simulated personas keep their values across contexts? (Stick To Your Role!)",
}

# Settings a suite does not read: common ones (RunConfig fields: flags and --config keys) and mcq's
# design settings, mcq's `Options` that users of the first suite put in any config (persona has its
# own scoring). Giving one is an error naming the suite's flags, never silently ignored.
_MCQ_ONLY = ("families", "cross", "scoring", "templates", "shots", "n_shots", "fewshot_multiturn")
UNUSED_COMMON_SETTINGS: dict[str, tuple[str, ...]] = {
    "mcq": (),
    "consistency": _MCQ_ONLY,
    "hallucination": ("samples", *_MCQ_ONLY),  # one reply per prompt; agreement is measured across detectors
    "persona": ("data", "limit", "samples", *_MCQ_ONLY),  # --population / --personas choose who is asked
    "tree": ("samples", *_MCQ_ONLY),
}


def get_suite(name: str) -> ModuleType:
    from robusteval.errors import UserError

    if name not in SUITE_MODULES:
        raise UserError(f"unknown suite {name!r}; available: {', '.join(SUITES)}")
    return importlib.import_module(SUITE_MODULES[name])
