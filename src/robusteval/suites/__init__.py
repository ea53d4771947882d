"""The suites, one module each, listed in `robusteval.suite_specs` (one `SuiteSpec` line per suite);
`get_suite` imports one by name (so `robusteval run mcq` never imports what only another suite needs)."""

from __future__ import annotations

from types import ModuleType

from robusteval.suite_specs import suite_spec


def get_suite(name: str) -> ModuleType:
    """The module of the suite ``name`` (a `UserError` listing the suites for another name)."""
    return suite_spec(name).suite()
