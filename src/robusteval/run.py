"""One run from configuration to files: start models, run the suite, write results.

This is the only place that wires the stages together; the CLI and tests call `run_suite`. A suite
gets the engine and the models under test, and may start more models (judges, interlocutors) by
spec; all of them share the engine's store, limits and accounting.
"""

from __future__ import annotations

import os
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from robusteval.config import RunConfig
from robusteval.data.audit import DataAudit
from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.engine.determinism import measure_models, new_engine
from robusteval.engine.progress import RichProgress
from robusteval.engine.store import STORE_FILE
from robusteval.errors import UserError
from robusteval.models import load_backend, parse_model_spec
from robusteval.models.replay import Replay, ReplayBackend
from robusteval.models.spec import inherit_options, spec_text
from robusteval.report.terminal import literal_console, styled
from robusteval.results import reserve_run_folder, write_run
from robusteval.results.samples_file import SampleWriter
from robusteval.suites import get_suite
from robusteval.suites.base import SuiteContext, SuiteResult
from robusteval.types import GenParams

if TYPE_CHECKING:
    from robusteval.engine.estimate import ModelEstimate


class ModelStarter:
    """Starts each model spec once (models under test, then judges or interlocutors a suite asks for);
    calling it returns the model's label for ``engine.chat``. A helper takes the options it leaves
    unset from the model under test of its kind (`models.spec.inherit_options`): ``--model
    'llamacpp?n_threads=1'`` with the default rewriter ``llamacpp`` is one model, started once."""

    def __init__(self, engine: Engine, config: RunConfig, replay: dict[str, Replay] | None = None):
        self.engine, self.config = engine, config
        self.started: dict[str, str] = {}  # label -> spec text (a helper's with what it inherited)
        self.replay = replay  # spec text -> fingerprint and failures: answer from the store only (`robusteval merge`)
        self.under_test = [parse_model_spec(text) for text in config.models]

    async def __call__(self, text: str) -> str:
        given = parse_model_spec(text)
        spec = inherit_options(given, self.under_test)
        spec_text_ = text if spec == given else spec_text(spec)
        for label, started in self.started.items():
            if parse_model_spec(started) == spec:
                return label  # the same model: one instance, one cache
        label = spec.label
        n = 1
        while label in self.started:  # another spec with the same short name (other options): its own instance
            n += 1
            label = f"{spec.label}#{n}"
        c = self.config
        await self.engine.add_model(label, self._backend(spec_text_, spec), rpm=c.rpm, tpm=c.tpm,
                                    concurrency=c.concurrency, price_in_per_mtok=c.price_in,
                                    price_out_per_mtok=c.price_out)
        self.started[label] = spec_text_
        return label

    def _backend(self, spec_text: str, spec):
        if self.replay is None:
            return load_backend(spec)
        replay = self.replay.get(spec_text)
        if replay is None:
            raise UserError(f"merge: the shards recorded no model {spec_text!r}; were they run with the same models?")
        return ReplayBackend(replay.fingerprint, allowance=replay.failed, spec=spec_text)


async def run_or_estimate(config: RunConfig, *, console: Console | None = None,
                          quiet: bool = False) -> tuple[Path, SuiteResult, dict] | list[ModelEstimate]:
    """The one door from a configuration to the models, for ``run``'s flags and YAML and for
    `robusteval.evaluate` alike: with ``config.estimate`` (``--estimate``, YAML ``estimate: true``,
    ``evaluate(..., estimate=True)``) the suite runs against the dry-run engine, nothing is asked and no
    run folder is written: each model's `ModelEstimate`; otherwise `run_suite`'s folder, result and usage."""
    if config.estimate:
        return await estimate_suite(config, console=console)
    return await run_suite(config, console=console, quiet=quiet)


async def run_suite(config: RunConfig, *, console: Console | None = None, quiet: bool = False,
                    replay: dict[str, Replay] | None = None) -> tuple[Path, SuiteResult, dict]:
    """Run ``config`` and write ``runs/<id>/``; returns the run folder, the suite's result (its
    ``written`` lists every file written) and the usage per model. ``replay`` (spec -> `Replay`)
    answers every model from the store only (`merge.merge_runs`).

    The run folder is taken before any model starts (a bad ``--out`` or ``--run-id`` costs no
    request) and given back if the run ends before writing its files. An estimate's configuration is
    refused: it goes through `run_or_estimate`, and a door that forgot must not spend money."""
    if config.estimate:
        raise ValueError("run_suite was given an estimate's configuration (estimate=True); call run_or_estimate")
    console = console or literal_console(stderr=True)
    started = time.time()
    suite = get_suite(config.suite)
    for text in config.models:  # all specs checked before any model starts
        parse_model_spec(text)
    folder = reserve_run_folder(config.out_dir, config.suite, config.run_id, overwrite=config.overwrite)
    samples = None
    try:
        samples = SampleWriter(folder.path)  # samples.jsonl as the samples are answered
        result, model_info = await _execute(config, suite, console, quiet, replay, samples)
        folder.prepare_for_files()
        run_dir = folder.path
        if not quiet and console.is_terminal:  # the last stage, which the progress rows do not count
            console.print(Text(f"{config.suite} · writing results and report to {run_dir}"))
        write_run(run_dir, config=config, models=model_info, metrics=result.metrics, samples=samples,
                  started=started, finished=time.time(), extra=result.extra, data=result.data,
                  determinism=result.determinism)
        result.written += [run_dir / "results.json", run_dir / "samples.jsonl"]
        result.written += result.write_files(run_dir)
        report_error = None
        try:
            result.written += _write_report(run_dir, console)
        except UserError as exc:  # the run's record is whole: `robusteval report` writes the report
            report_error = exc
    except BaseException:  # a killed or interrupted run keeps its folder reserved once it writes files
        if samples is not None:
            samples.discard()
        folder.release()
        raise
    folder.finish()
    if report_error is not None:
        raise report_error
    return run_dir, result, {m: info["usage"] for m, info in model_info.items()}


async def _execute(config: RunConfig, suite, console: Console, quiet: bool, replay: dict[str, Replay] | None = None,
                   samples: SampleWriter | None = None) -> tuple[SuiteResult, dict]:
    """Start the models and run the suite through one engine; the result and each model's record.
    The suite's samples go to ``samples``: as they are answered where the suite streams them
    (``ctx.samples``), the ones it returns (``SuiteResult.samples``) after them."""
    samples = samples if samples is not None else SampleWriter()
    params = GenParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
                       seed=config.seed, stop=config.stop)
    store = Store(Path(config.cache_dir).expanduser() / STORE_FILE)
    progress = RichProgress(f"{config.suite}", console=console, enabled=not quiet and console.is_terminal)
    engine = new_engine(store, keep=config.check_determinism, use_cache=config.use_cache, progress=progress,
                        retry=RetryPolicy(max_retries=config.max_retries, timeout_s=config.timeout))
    add_model = ModelStarter(engine, config, replay)
    started_models = add_model.started

    try:
        labels = [await add_model(text) for text in config.models]
        ctx = SuiteContext(config=config, options=config.options, engine=engine, models=labels, params=params,
                           console=console, _add_model=add_model, samples=samples)
        with progress:
            result = await suite.execute(ctx)
        samples.write_all(result.samples)
        result.data = ctx.audit.as_dict()
        if config.check_determinism:
            result.determinism = await measure_models(engine, labels, rpm=config.rpm, tpm=config.tpm,
                                                               concurrency=config.concurrency)
        model_info = {label: {"spec": spec_text, "fingerprint": engine.fingerprint(label),
                              "role": "under test" if label in labels else "helper",
                              "usage": _usage(engine, label, (replay or {}).get(spec_text))}
                      for label, spec_text in started_models.items()}
    finally:
        await engine.close()
        store.close()
    return result, model_info


def _usage(engine: Engine, label: str, replay: Replay | None) -> dict:
    """A model's usage: the engine's count, or a merge's shards' summed (what the merged results cost)."""
    return replay.usage if replay is not None and replay.usage is not None else engine.usage[label].as_dict()


def print_audit(console: Console, audit: DataAudit) -> None:
    """The data audit, literally (dataset text may hold brackets that rich would read as markup)."""
    if audit.has_findings():
        console.print(Text("data: " + "\n".join(audit.lines())))


def write_report_files(run_dir: Path, console: Console) -> list[Path]:
    """`_write_report` for commands that write a run folder without running a suite (`robusteval score`)."""
    return _write_report(run_dir, console)


def _write_report(run_dir: Path, console: Console) -> list[Path]:
    """The HTML/Markdown report of the run, and the files written. A report that cannot be written
    is a `UserError` (exit 2: README, "Exit codes"), after the run's results are: it says they are
    safe and how to write the report once the cause is fixed."""
    from robusteval.report.render import write_report

    try:
        files = write_report(run_dir)
    except Exception as exc:
        if os.environ.get("ROBUSTEVAL_STRICT_REPORT"):  # the tests: the report's own traceback
            raise
        why = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        raise UserError(f"could not write the report ({why}); the run's results are written "
                        f"({run_dir}/results.json, samples.jsonl); once that is fixed, "
                        f"`robusteval report {run_dir}` writes the report") from None
    for note in files.notes:
        console.print(styled("report:", "yellow", f" {note}"))
    return [files.html, files.markdown, *files.plots]


@asynccontextmanager
async def _dry_run(config: RunConfig, console: Console, *, stand_in: bool = False):
    """The suite run to its end against a dry-run engine (nothing is sent; every request the store
    lacks is recorded in ``engine.planned``); yields the engine, its store and the models started.
    ``stand_in``: every new request is answered with a stand-in reply, so later stages are planned too
    (an estimate); without it they fail, so only requests that real answers can reach are planned (an
    export must never hold a request built on a stand-in)."""
    suite = get_suite(config.suite)
    params = GenParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
                       seed=config.seed, stop=config.stop)
    store = Store(Path(config.cache_dir).expanduser() / STORE_FILE)
    if stand_in:  # an estimate: lengths and a sample of the planned requests, not all of them
        from robusteval.engine.estimate import EXACT_PROMPTS, stand_in_length

        engine = Engine(store, use_cache=config.use_cache, dry_run=True, keep_requests=False,
                        plan_sample=EXACT_PROMPTS)
        engine.stand_in = stand_in_length(engine, store)
    else:
        engine = Engine(store, use_cache=config.use_cache, dry_run=True)
    add_model = ModelStarter(engine, config)
    try:
        labels = [await add_model(text) for text in config.models]
        ctx = SuiteContext(config=config, options=config.options, engine=engine, models=labels, params=params,
                           console=console, _add_model=add_model)
        await suite.execute(ctx)
        print_audit(console, ctx.audit)
        yield engine, store, add_model.started
    finally:
        await engine.close()
        store.close()


async def estimate_suite(config: RunConfig, *, console: Console | None = None) -> list:
    """Run the suite against a dry-run engine and estimate each model's requests, tokens, time and cost."""
    from robusteval.engine.estimate import count_prompt_tokens, estimate

    async with _dry_run(config, console or literal_console(stderr=True), stand_in=True) as (engine, store, started):
        return [estimate(engine, store, label, await count_prompt_tokens(engine, label)) for label in started]


async def export_suite(config: RunConfig, path: Path, command: str, *, console: Console | None = None):
    """Write every request the run would send (and the store lacks) to ``path`` as OpenAI batch input
    lines, recorded for `robusteval import-results` (`engine.exchange`); the `ExportSummary`."""
    from robusteval.engine.exchange import write_export

    async with _dry_run(config, console or literal_console(stderr=True)) as (engine, store, started):
        models = {}
        for label, spec_text in started.items():
            spec = parse_model_spec(spec_text)
            models[label] = (engine.fingerprint(label), spec.name or spec.kind)
        planned = {label: plan.requests if (plan := engine.planned.get(label)) else {} for label in started}
        return write_export(path, planned, models, store.path, command)
