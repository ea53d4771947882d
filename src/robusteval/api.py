"""The Python API: the same runs as the command line, from a script, a notebook or a pipeline.

    import robusteval
    record = robusteval.evaluate("mcq", models=["llamacpp"], families=["order"], limit=5)
    record.metrics["llamacpp"]["order"].accuracy      # typed records, as the report reads them
    robusteval.load_run(record.path)                   # any run folder, read back the same way

``evaluate`` takes the settings ``robusteval run SUITE`` takes, by their YAML names (``families``,
``limit``, ``data``, ``max_tokens``, ``cache_dir``, ``out_dir``, a suite's own options...), checked by the
same decoder: a bad value is the same `UserError` with the same message. It writes the same run
folder (results.json, samples.jsonl, the report) and returns its `RunRecord`; with ``estimate=True``,
as ``run --estimate``, it asks nothing, writes no folder and returns each model's `ModelEstimate`.

Why a thread inside a running event loop: a notebook cell runs inside the kernel's loop, where
``asyncio.run`` refuses to start a second one. ``evaluate`` then runs the suite on its own loop in a
worker thread and waits for it; ``await evaluate_async(...)`` runs it on the caller's loop instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from robusteval.results.records import RunRecord, read_run

if TYPE_CHECKING:
    from robusteval.config import RunConfig
    from robusteval.engine.estimate import ModelEstimate

__all__ = ["evaluate", "evaluate_async", "load_run", "score"]


def _config(suite: str, models: Sequence[str] | None, settings: dict[str, Any]):
    from robusteval.config import check_text_files
    from robusteval.configure import build_config

    values: dict[str, Any] = {"suite": suite, **settings}
    if models is not None:
        values["models"] = [models] if isinstance(models, str) else list(models)
    config = build_config(values, {})
    check_text_files(config)
    return config


@overload
async def evaluate_async(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
                         estimate: Literal[False] = False, **settings: Any) -> RunRecord: ...


@overload
async def evaluate_async(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
                         estimate: Literal[True], **settings: Any) -> list[ModelEstimate]: ...


@overload
async def evaluate_async(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
                         estimate: bool, **settings: Any) -> RunRecord | list[ModelEstimate]: ...


async def evaluate_async(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
                         estimate: bool = False, **settings: Any) -> RunRecord | list[ModelEstimate]:
    """Run ``suite`` on the running event loop; the run's `RunRecord` (``.path`` is its folder), or
    with ``estimate=True`` the estimates (nothing asked, no folder)."""
    return await _run(_config(suite, models, {**settings, "estimate": estimate}), quiet)


async def _run(config: RunConfig, quiet: bool) -> RunRecord | list[ModelEstimate]:
    from robusteval.run import run_or_estimate

    outcome = await run_or_estimate(config, quiet=quiet)
    if isinstance(outcome, list):
        if not quiet:
            from robusteval.cli.run import show_estimates
            from robusteval.report.terminal import literal_console

            show_estimates(config, outcome, literal_console(stderr=True))
        return outcome
    return load_run(outcome[0])


@overload
def evaluate(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
             estimate: Literal[False] = False, **settings: Any) -> RunRecord: ...


@overload
def evaluate(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
             estimate: Literal[True], **settings: Any) -> list[ModelEstimate]: ...


@overload
def evaluate(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True,
             estimate: bool, **settings: Any) -> RunRecord | list[ModelEstimate]: ...


def evaluate(suite: str, models: Sequence[str] | None = None, *, quiet: bool = True, estimate: bool = False,
             **settings: Any) -> RunRecord | list[ModelEstimate]:
    """Run ``suite`` against ``models`` (model specs; default: the embedded model) with ``settings`` as
    in a run's YAML file; returns the run's `RunRecord` once its folder is written. Works in a plain
    script and inside a running event loop (a notebook). ``estimate=True``: as ``run --estimate``,
    ask nothing and write no folder; returns each model's `ModelEstimate` (requests, tokens, time,
    cost), printed as the command prints them unless ``quiet``."""
    from robusteval.engine.loop import run as run_loop

    # a bad setting fails here, in the caller's thread
    config = _config(suite, models, {**settings, "estimate": estimate})
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_loop(_run(config, quiet))
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="robusteval") as pool:
        return pool.submit(run_loop, _run(config, quiet)).result()


def score(files: str | Path | Sequence[str | Path], *, reader: str | None = None, data: str | None = None,
          families: str | Sequence[str] = (), cross: str | Sequence[str] = (), templates: str | None = None,
          model: str | None = None, kind: str | None = None, seed: int = 0, budget: float | None = None,
          covariates: str | Sequence[str] | None = None, variant_texts: str | Path | None = None,
          search: str | None = None, calls: float | None = None, method: str | None = None,
          out_dir: str = "runs", run_id: str | None = None, overwrite: bool = False) -> RunRecord:
    """Score replies produced elsewhere (`robusteval score`: generic JSONL, MMLU-Pro's released zips,
    lm-eval sample logs, inspect_ai logs) or a correctness grid, asking no model; the run folder's `RunRecord`.

        robusteval.score("model_outputs_gemma-7b_5shots.zip", reader="mmlu-pro").metrics["gemma-7b"]["released"]

    ``families``, ``cross``, ``covariates``: a list of names, or one string (``"order"``, ``"order,format"``)
    as in `evaluate`. ``kind``: one of replies, mmlu-pro, lm-eval, inspect, grid (None: told from each file).
    ``budget``, ``covariates``, ``variant_texts``: a grid's budgeted estimate, as ``score --budget F
    --covariates LIST --variant-texts FILE`` (covariates None: the command's default, names).
    ``search``, ``calls``, ``method``: a grid's best/worst search replayed, as ``score --search best-worst
    --calls F --method NAME``.
    """
    from robusteval.config import run_id_problem
    from robusteval.errors import UserError
    from robusteval.run import write_report_files
    from robusteval.scoring.flow import score_files, score_request

    if run_id is not None and (problem := run_id_problem(run_id)):
        raise UserError(f"run_id {run_id!r}: {problem}")
    paths = (files,) if isinstance(files, (str, Path)) else tuple(files)
    # the command's decoder: a list of names may be one string ("order", "names,length"), as in evaluate
    request = score_request({"paths": tuple(str(p) for p in paths), "data": data, "families": families,
                             "cross": cross, "templates": templates, "reader": reader, "model": model, "kind": kind,
                             "seed": seed, "out_dir": out_dir, "run_id": run_id, "overwrite": overwrite,
                             "budget": budget, "covariates": covariates,
                             "variant_texts": None if variant_texts is None else str(variant_texts),
                             "search": search, "calls": calls, "method": method})
    from robusteval.report.terminal import literal_console

    run_dir, _ = score_files(request)
    write_report_files(run_dir, literal_console(stderr=True))
    return load_run(run_dir)


def load_run(path: Path | str) -> RunRecord:
    """A run folder (or its results.json) read back as the `RunRecord` every report reads."""
    path = Path(path)
    return read_run(path.parent if path.name == "results.json" else path)
