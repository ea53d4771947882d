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


def get_suite(name: str) -> ModuleType:
    from robusteval.errors import UserError

    if name not in SUITE_MODULES:
        raise UserError(f"unknown suite {name!r}; available: {', '.join(SUITES)}")
    return importlib.import_module(SUITE_MODULES[name])
