"""Report sections, one module per suite (``section(run)`` and ``headlines(results)``); a suite with
no module of its own gets the generic section: every estimate in its metrics, as a table."""

from __future__ import annotations

import importlib

from robusteval.report.model import Headline, Run, Section, TableData, estimate_text

SECTION_MODULES = {
    "mcq": "robusteval.report.sections.mcq",
    "consistency": "robusteval.report.sections.consistency",
    "hallucination": "robusteval.report.sections.hallucination",
    "tree": "robusteval.report.sections.tree",
    "persona": "robusteval.report.sections.persona",
}


def _module(suite: str):
    name = SECTION_MODULES.get(suite)
    return importlib.import_module(name) if name else None


def sections(run: Run) -> list[Section]:
    module = _module(run.suite)
    return module.sections(run) if module else [generic_section(run.results)]


def headlines(results: dict) -> list[Headline]:
    module = _module(results.get("suite", ""))
    return module.headlines(results) if module else generic_headlines(results)


def _estimates(node, path=()):
    """(path, estimate dict) for every ``{"value", "ci_low", ...}`` leaf of a metrics tree."""
    if isinstance(node, dict):
        if "value" in node and ("ci_low" in node or "n" in node):
            yield path, node
            return
        for key, child in node.items():
            yield from _estimates(child, (*path, str(key)))


def generic_section(results: dict) -> Section:
    rows = tuple((" / ".join(path), estimate_text(est)) for path, est in _estimates(results.get("metrics", {})))
    return Section(f"{results.get('suite', 'suite')} metrics",
                   tables=(TableData("Every estimate in results.json", ("metric", "value [95% CI]"), rows),))


def generic_headlines(results: dict) -> list[Headline]:
    models = set(results.get("models", {}))
    out = []
    for path, est in _estimates(results.get("metrics", {})):
        model = next((p for p in path if p in models), None)
        if model is not None and len(path) <= 3:
            metric = " / ".join(p for p in path if p != model)
            out.append(Headline(model, metric, est.get("value"), est.get("ci_low"), est.get("ci_high")))
    return out
