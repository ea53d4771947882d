"""Report sections, one module per suite (``sections(run)`` and ``headlines(metrics)``, named by its
`SuiteSpec`); a suite with no module of its own gets the generic section: every estimate in its
metrics, as a table."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from robusteval.data.audit import DataAudit
from robusteval.report.model import Headline, Run, Section, TableData, estimate_text
from robusteval.report.table import estimates
from robusteval.suite_specs import SUITES


def _module(suite: str) -> ModuleType | None:
    spec = SUITES.get(suite)
    return spec.section_module() if spec is not None else None


def sections(run: Run) -> list[Section]:
    module = _module(run.suite)
    built = module.sections(run) if module else [generic_section(run.results)]
    data = data_section(run.record.data)
    return [*built, data] if data else built  # results first: the audit is shown folded after them


def data_section(data: dict[str, Any] | None) -> Section | None:
    """What the run read, left out, repaired or assumed (results.json's ``data``, the run's data audit)."""
    audit = DataAudit.from_dict(data)
    if not audit:
        return None
    rows = []
    for s in audit.sources:
        rows.append((s.source, "rows read / used", f"{s.rows_read} / {s.rows_used}"))
        rows += [(s.source, f"left out: {reason}", str(n)) for reason, n in s.left_out.items()]
        rows += [(s.source, kind, str(n)) for kind, n in s.anomalies.items()]
        rows += [(s.source, f"assumed {key}", value) for key, value in s.assumed.items()]
    notes = tuple(f"{s.source}: {text}" for s in audit.sources for text in s.notes) + tuple(audit.notes)
    examples = tuple(f"{s.source}, {reason}: {', '.join(where)}" for s in audit.sources
                     for reason, where in s.examples.items())
    return Section("Data", tables=(TableData("What was read, left out and assumed", ("source", "what", "count"),
                                             tuple(rows)),),
                   notes=notes + tuple(f"examples: {e}" for e in examples), audit=True)


def headlines(run: Run | dict[str, Any]) -> list[Headline]:
    """A run's headline figures: its section module's, from the typed metrics record (`Run.metrics`,
    decoded once); a run's results.json as parsed JSON is read as a `Run`."""
    run = run if isinstance(run, Run) else Run(None, run)  # type: ignore[arg-type]
    module = _module(run.suite)
    return module.headlines(run.metrics) if module else generic_headlines(run.results)


def generic_section(results: dict[str, Any]) -> Section:
    rows = tuple((" / ".join(path), estimate_text(est)) for path, est in estimates(results.get("metrics", {})))
    return Section(f"{results.get('suite', 'suite')} metrics",
                   tables=(TableData("Every estimate in results.json", ("metric", "value [95% CI]"), rows),))


def generic_headlines(results: dict[str, Any]) -> list[Headline]:
    models = set(results.get("models", {}))
    out = []
    for path, est in estimates(results.get("metrics", {})):
        model = next((p for p in path if p in models), None)
        if model is not None and len(path) <= 3:
            metric = " / ".join(p for p in path if p != model)
            out.append(Headline(model, metric, est.get("value"), est.get("ci_low"), est.get("ci_high"),
                                    n=est.get("n")))
    return out
