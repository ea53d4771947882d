"""The typed records of results.json, read back by the terminal, the report, ``compare``, the
leaderboard and ``serve``: nothing downstream reads results by string keys or splits composite
strings.

`RunRecord` is what every run has (configuration, models, failures, the data audit); its
``metrics`` are the suite's own record type, named by its `SuiteSpec` (`robusteval.suite_specs`;
the type lives in ``results/<suite>.py``). A suite with no registered type keeps its metrics as
plain JSON, shown by the generic report section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from robusteval.errors import UserError
from robusteval.files import parse_json
from robusteval.results.codec import OmitNone, RecordError, decode, encode
from robusteval.suite_specs import SUITES

T = TypeVar("T")

# results.json's layout: a file without ``format_version`` is version 1 (the same layout, written
# before the key existed); a file from a later version is refused rather than misread
FORMAT_VERSION = 2


@dataclass(frozen=True)
class ModelRecord:
    """A model the run started: under test, or a helper (judge, paraphraser, interlocutor)."""

    spec: str = ""  # empty in a hand-written results.json that names none
    fingerprint: str | None = None
    role: str = "under test"
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    """A request that failed after its retries, and where in the run it sat (the fields a suite's
    samples have; the others stay None)."""

    model: OmitNone[str] = None
    item_id: OmitNone[str] = None
    family: OmitNone[str] = None
    variant: OmitNone[str | int] = None
    step: OmitNone[str] = None
    context: OmitNone[str] = None
    node: OmitNone[str] = None
    sample: OmitNone[int] = None
    error: OmitNone[str] = None

    @classmethod
    def of(cls, sample: Any) -> Failure:
        """The failure record of a failed sample (any suite's: the fields it has)."""
        return cls(**{f.name: getattr(sample, f.name) for f in fields(cls) if hasattr(sample, f.name)})


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    suite: str
    format_version: int = 1
    config: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    started: str = ""
    wall_time_s: float | None = None
    models: dict[str, ModelRecord] = field(default_factory=dict)
    metrics: Any = None  # the suite's record (its `SuiteSpec.metrics`), or plain JSON
    failures: list[Failure] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # the data audit (`data.audit.DataAudit.from_dict`)
    determinism: OmitNone[dict[str, dict[str, Any]]] = None  # --check-determinism N: by model
    extra: Any = None  # the suite's keys beside the metrics: its `SuiteSpec.extra` record, or plain JSON
    path: Path | None = None  # the run folder it was read from (`read_run`); not in results.json

    @property
    def models_under_test(self) -> list[str]:
        return [label for label, m in self.models.items() if m.role == "under test"]


_RUN_KEYS = {f.name for f in fields(RunRecord)} - {"path", "extra"}  # results.json keys every run has


def metrics_type(suite: str) -> Any | None:
    """The metrics record type of ``suite`` (its `SuiteSpec`'s), or None."""
    spec = SUITES.get(suite)
    return None if spec is None else spec.metrics_type()


def decode_metrics(suite: str, raw: Any) -> Any:
    """results.json's ``metrics`` of a ``suite`` run as its typed record (the type its `SuiteSpec`
    names; plain JSON for a suite without one), as the report's sections read it: None where the run
    holds none (absent, or empty: an ``--estimate``, a tree build)."""
    kind = metrics_type(suite)
    if kind is None:
        return raw
    return decode(kind, raw) if raw else None


def extra_type(suite: str) -> Any | None:
    """The extra record type of ``suite`` (its `SuiteSpec`'s), or None."""
    spec = SUITES.get(suite)
    return None if spec is None else spec.extra_type()


def encode_extra(suite: str, extra: Any) -> dict[str, Any]:
    """A suite's extra record (`SuiteResult.extra`) as the keys results.json holds beside its metrics,
    written by the type its `SuiteSpec` declares; plain JSON (a suite without one) as it is."""
    if extra is None:
        return {}
    kind = extra_type(suite)
    data: dict[str, Any] = dict(extra) if kind is None else encode(extra, kind)
    return data


def decode_extra(suite: str, results: dict[str, Any]) -> Any:
    """The suite's keys of a parsed results.json as its extra record (its `SuiteSpec.extra`; for a
    suite without one, every key a `RunRecord` does not hold, as plain JSON)."""
    kind = extra_type(suite)
    if kind is None:
        return {k: v for k, v in results.items() if k not in _RUN_KEYS}
    names = {f.name for f in fields(kind)}
    return decode(kind, {k: v for k, v in results.items() if k in names})


def encode_metrics(suite: str, metrics: Any) -> Any:
    """A suite's metrics record (`SuiteResult.metrics`) as results.json holds it, written by the type
    its `SuiteSpec` declares (never by the record's runtime type: a ``dict[str, Record]`` would lose
    its records' aliases), once, as the run is written; plain JSON (a suite without a record type)
    as it is."""
    kind = metrics_type(suite)
    return metrics if kind is None else encode(metrics, kind)


def run_record(results: dict[str, Any]) -> RunRecord:
    """A parsed results.json as a `RunRecord` (raises `RecordError` when it does not fit)."""
    if not isinstance(results, dict):
        raise RecordError("results.json: not a JSON object")
    base = {k: v for k, v in results.items() if k in _RUN_KEYS and k not in ("metrics", "extra")}
    base.setdefault("run_id", "?")
    base.setdefault("suite", "?")
    record = decode(RunRecord, base)
    _readable_version(results)
    kind = metrics_type(record.suite)
    raw = results.get("metrics")
    metrics = decode(kind, raw) if kind is not None and raw else raw  # empty: an --estimate, a tree build
    return replace(record, metrics=metrics, extra=decode_extra(record.suite, results))


def _readable_version(results: dict[str, Any]) -> int:
    """results.json's ``format_version`` (1 where absent); a `RecordError` for a later one than ours."""
    version = decode(int, results.get("format_version", 1))
    if version > FORMAT_VERSION:
        raise RecordError(f"format_version {version}: written by a newer robusteval "
                          f"(this one reads up to {FORMAT_VERSION}); upgrade robusteval to read it")
    return version


def read_results(folder: Path | str) -> dict[str, Any]:
    """A run folder's results.json as parsed JSON: the one place a run's results are read from a
    file (`read_run` types them all; the report, ``compare``, the leaderboard and ``serve`` read the
    JSON and decode its metrics). The file is checked at this door, so no reader meets a broken one
    later: a folder without it, a file that is not a JSON object or is nested too deep
    (`files.parse_json`), or whose metrics do not fit the suite's record (`decode_metrics`) is one
    `UserError` naming the file."""
    results_file = _results_file(Path(folder))
    results = _parse(results_file)
    _fits(results_file, lambda: (_readable_version(results),
                                 decode_metrics(str(results.get("suite", "?")), results.get("metrics"))))
    return results


def read_run(folder: Path | str) -> RunRecord:
    """``folder/results.json`` as a `RunRecord` (its ``path`` the folder); a file that does not fit
    is one `UserError` naming it, as in `read_results`."""
    results_file = _results_file(Path(folder))
    results = _parse(results_file)
    return replace(_fits(results_file, lambda: run_record(results)), path=Path(folder))


def _results_file(folder: Path) -> Path:
    if not (folder / "results.json").is_file():
        raise UserError(f"{folder}: not a run folder (no results.json)")
    return folder / "results.json"


def _parse(results_file: Path) -> dict[str, Any]:
    try:
        text = results_file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{results_file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UserError(f"{results_file}: cannot be read ({exc.strerror or exc})") from None
    results = parse_json(text, results_file, finite=False)  # our own file: a NaN metric is read as written
    if not isinstance(results, dict):
        raise UserError(f"{results_file}: not a run's results (a JSON object is expected)")
    return results


def _fits(results_file: Path, typed: Callable[[], T]) -> T:
    """``typed()``'s record, or one `UserError` naming the file where the JSON does not fit it."""
    try:
        return typed()
    except RecordError as exc:
        raise UserError(f"{results_file}: not a readable run record ({exc})") from None
