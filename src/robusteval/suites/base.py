"""What every suite provides, and what a suite is given.

A suite is one module under ``suites/`` with:

- ``NAME``: the name on the command line (``robusteval run NAME``);
- ``Options``: a frozen dataclass of the suite's own settings, every field with a default; the
  same names are flags (``--field-name``) and YAML keys;
- ``add_arguments(parser)``: the suite's flags, each with ``dest`` equal to an ``Options`` field
  and ``default=None`` (so a flag the user did not give leaves the YAML or the default in place);
- ``validate(config, options)``: raises `UserError` for settings that make no sense together;
- ``async execute(ctx) -> SuiteResult``: runs the suite through ``ctx.engine``;
- ``print_summary(console, result)``: the terminal tables.

`run.run_suite` does the rest (models, engine, store, progress, results files) the same way for all.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from robusteval.data.audit import DataAudit
from robusteval.engine import Engine
from robusteval.files import atomic_write
from robusteval.types import GenParams


def print_noise_floor(console: Console, extra: dict) -> None:
    """The backend's own noise (``--check-determinism``) below a suite's tables, when the run measured it."""
    from rich.text import Text

    from robusteval.engine.determinism import summaries

    for line in summaries(extra):
        console.print(Text(f"noise floor: {line}"))


def csv_arg(text: str) -> tuple[str, ...]:
    """argparse type for comma-separated lists: ``--families order,format``."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


class SampleLike(Protocol):
    """A line of samples.jsonl; failed samples (status 'failed') are also listed in results.json."""

    status: str

    def as_dict(self) -> dict: ...


@dataclass
class SuiteContext:
    """What a suite needs: the configuration, the engine, and the models under test (labels)."""

    config: Any  # RunConfig (not imported: config imports the suite registry)
    options: Any  # the suite's Options
    engine: Engine
    models: list[str]
    params: GenParams
    console: Console
    _add_model: Any = None
    audit: DataAudit = field(default_factory=DataAudit)  # loaders record what they read, left out, assumed

    async def model(self, spec: str) -> str:
        """Start the model named by ``spec`` if it is not running yet (a judge, an interlocutor...);
        returns its label for ``engine.chat``. The same spec always gives the same model and cache."""
        return await self._add_model(spec)


@dataclass
class SuiteResult:
    """What a suite hands back; `run_suite` writes it to the run folder."""

    metrics: dict  # JSON-able, by model (or by whatever the suite compares)
    samples: list  # SampleLike
    extra: dict = field(default_factory=dict)  # more keys for results.json
    files: dict[str, str | bytes] = field(default_factory=dict)  # more files in the run folder
    written: list[Path] = field(default_factory=list)  # every file the run wrote (run_suite fills it)

    def write_files(self, run_dir: Path) -> list[Path]:
        """Write ``files`` into the run folder, each atomically; returns their paths."""
        paths = []
        for name, content in self.files.items():
            path = run_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            text_or_bytes = content if isinstance(content, (str, bytes)) else json.dumps(content, indent=2)
            paths.append(atomic_write(path, text_or_bytes))
        return paths


class Suite(Protocol):
    NAME: str
    Options: type

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def validate(self, config: Any, options: Any) -> None: ...

    async def execute(self, ctx: SuiteContext) -> SuiteResult: ...

    def print_summary(self, console: Console, result: SuiteResult) -> None: ...
