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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from rich.console import Console

from robusteval.data.audit import DataAudit
from robusteval.engine import Engine
from robusteval.engine.stream import counted, in_order
from robusteval.files import atomic_write, atomic_write_chunks
from robusteval.results.records import Failure
from robusteval.results.samples_file import SampleWriter
from robusteval.types import GenParams

if TYPE_CHECKING:
    from robusteval.config import RunConfig

OptionsT = TypeVar("OptionsT")
JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")


def print_noise_floor(console: Console, determinism: dict[str, dict[str, Any]] | None) -> None:
    """The backend's own noise (``--check-determinism``) below a suite's tables, when the run measured it."""
    from rich.text import Text

    from robusteval.engine.determinism import summaries

    for line in summaries(determinism):
        console.print(Text(f"noise floor: {line}"))


def csv_arg(text: str) -> tuple[str, ...]:
    """argparse type for comma-separated lists: ``--families order,format``."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


class SampleLike(Protocol):
    """A line of samples.jsonl; failed samples (status 'failed') are also listed in results.json."""

    @property
    def status(self) -> str: ...

    def as_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, kw_only=True)
class SampleBase:
    """The envelope every suite's samples extend: which model answered which item's variant, what it
    was asked and replied, how that went, and the store key of the answer. A suite's ``Sample``
    subclasses it and adds its own fields (the verdict, the scores, the variant's coordinates).

    ``variant`` names the variant within its item's group ("" where a row is not a variant of
    anything, e.g. a judge's rating). ``status`` is ``ok``, ``invalid`` (answered, but unreadable)
    or ``failed`` (no answer after the retries; listed in results.json's failures)."""

    model: str
    item_id: str
    variant: str | int = ""
    prompt: str | None = None
    response: str | None = None
    error: str | None = None
    status: str = "ok"
    cached: bool = False
    key: str | None = None

    # The fields that tell this row from the others of its item, in the order the report's sample
    # explorer shows them ("llamacpp · order · gold@B"); each suite's Sample names its own.
    LABEL: ClassVar[tuple[str, ...]] = ("model", "variant")

    def label(self) -> str:
        return " · ".join(str(v) for k in self.LABEL if (v := getattr(self, k, None)) not in (None, ""))

    def as_dict(self) -> dict[str, Any]:
        """The samples.jsonl line: every field, and the row's ``label``."""
        return {**asdict(self), "label": self.label()}

    def failure(self) -> Failure:
        return Failure.of(self)


@dataclass
class SuiteContext(Generic[OptionsT]):
    """What a suite needs: the configuration, its own options, the engine, and the models under test (labels)."""

    config: RunConfig
    options: OptionsT
    engine: Engine
    models: list[str]
    params: GenParams
    console: Console
    _add_model: Callable[[str], Awaitable[str]] | None = None
    audit: DataAudit = field(default_factory=DataAudit)  # loaders record what they read, left out, assumed
    # samples.jsonl, written as samples are answered: every suite writes each sample here at once and
    # returns none in `SuiteResult.samples` (a list returned there is written after them)
    samples: SampleWriter = field(default_factory=SampleWriter)

    def shard_items(self, items: Iterable[JobT], key: Callable[[JobT], str]) -> list[JobT]:
        """The items this run asks: all of them, or with ``--shard I/N`` this shard's (by id,
        after ``--limit``'s selection; data/shard.py). Suites call it once, right after loading."""
        from robusteval.data.shard import parse_shard

        shard = parse_shard(self.config.shard)
        items = list(items)
        if shard is None:
            return items
        kept = shard.select(items, key)
        self.audit.note(f"{len(kept)} of {len(items)} items are in shard {shard}")  # not a data source
        return kept

    async def stream(self, jobs: Iterable[JobT], one: Callable[[JobT], Awaitable[ResultT]], *,
                     requests_per_job: int | Callable[[JobT], int],
                     window: int | None = None,
                     write: Callable[[ResultT], Iterable[SampleLike]] | None = None) -> AsyncIterator[ResultT]:
        """``await one(job)`` for every job through the engine, yielded in the jobs' order, each
        result's samples written to samples.jsonl first: the one loop every suite asks through.

        ``jobs`` is read lazily and at most ``window`` jobs are under way (`engine.stream.in_order`):
        by default about the engine's window of requests (`Engine.window`), i.e. that divided by
        ``requests_per_job`` where it is a number. The progress total grows by a job's requests
        (``requests_per_job``: a number, or the job's own) as the job starts, and shrinks by those it
        did not ask once it is done (a conversation that failed early), so no suite counts its
        requests in advance. ``write``: the samples of a result (default: the result itself when it
        is a sample, each of a list's); None results write nothing."""
        per_job: Callable[[JobT], int] = (
            requests_per_job if callable(requests_per_job) else lambda _job: requests_per_job)
        if window is None:
            window = self.engine.window() // max(1, requests_per_job if isinstance(requests_per_job, int) else 1)
        samples_of = write or _samples_of

        async def announced(job: JobT) -> ResultT:
            planned = per_job(job)
            self.engine.expect(planned)
            result, asked = await counted(one(job))
            if asked < planned:
                self.engine.expect(asked - planned)
            return result

        async for result in in_order(jobs, announced, max(1, window)):
            for sample in samples_of(result):
                self.samples.write(sample)
            yield result

    async def ask_all(self, jobs: Iterable[JobT], one: Callable[[JobT], Awaitable[ResultT]], *,
                      requests_per_job: int | Callable[[JobT], int] = 1,
                      write: Callable[[ResultT], Iterable[SampleLike]] | None = None) -> list[ResultT]:
        """`stream`, collected: every result, in the jobs' order (for results that are not samples
        and all needed at once, such as the rewritten copies of the questions)."""
        return [r async for r in self.stream(jobs, one, requests_per_job=requests_per_job,
                                             write=write or _no_samples)]

    def stage(self, name: str) -> None:
        """Name the suite's current stage for the progress display ("building variants", "asking",
        "judging"); each stage is counted on its own row."""
        self.engine.stage(name)

    async def model(self, spec: str) -> str:
        """Start the model named by ``spec`` if it is not running yet (a judge, an interlocutor...);
        returns its label for ``engine.chat``. The same spec always gives the same model and cache."""
        if self._add_model is None:
            raise RuntimeError("this context cannot start models (built without a model starter)")
        return await self._add_model(spec)


def _samples_of(result: object) -> Iterable[SampleLike]:
    """A stream result's samples: itself, the items of a list, or none."""
    if isinstance(result, list):
        return result
    return (cast(SampleLike, result),) if hasattr(result, "as_dict") else ()


def _no_samples(result: object) -> Iterable[SampleLike]:
    return ()


@dataclass
class SuiteResult:
    """What a suite hands back; `run_suite` writes it to the run folder."""

    # the suite's typed metrics record (the type its `SuiteSpec.metrics` names; plain JSON for a suite
    # without one): the terminal reads it as it is, results/ encodes it once into results.json
    metrics: Any
    samples: list[SampleLike]
    # the suite's keys beside its metrics in results.json: its `SuiteSpec.extra` record (plain JSON
    # for a suite without one), encoded once with the metrics
    extra: Any = None
    data: dict[str, Any] = field(default_factory=dict)  # the data audit (`run` sets it)
    determinism: dict[str, dict[str, Any]] | None = None  # --check-determinism N, by model (`run` sets it)
    # more files in the run folder; a callable gives a file's text piece by piece, called once the
    # samples are written (a file built from the samples read back, or from a `results.spool.Spool`)
    files: dict[str, str | bytes | Callable[[], Iterable[str]]] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)  # every file the run wrote (run_suite fills it)

    def write_files(self, run_dir: Path) -> list[Path]:
        """Write ``files`` into the run folder, each atomically; returns their paths."""
        paths = []
        for name, content in self.files.items():
            path = run_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if callable(content):
                paths.append(atomic_write_chunks(path, content()))
                continue
            text_or_bytes = content if isinstance(content, (str, bytes)) else json.dumps(content, indent=2)
            paths.append(atomic_write(path, text_or_bytes))
        return paths


class Suite(Protocol):
    NAME: str
    Options: type

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def validate(self, config: Any, options: Any) -> None: ...

    async def execute(self, ctx: SuiteContext[Any]) -> SuiteResult: ...

    def print_summary(self, console: Console, result: SuiteResult) -> None: ...
