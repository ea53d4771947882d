"""``robusteval run ... --export-requests FILE`` and ``robusteval import-results FILE...``: a run answered
by an engine robusteval does not drive (`robusteval.engine.exchange`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rich.console import Console

from robusteval.cli.common import EXIT_FAILED_REQUESTS, out_console
from robusteval.config import RunConfig, default_cache_dir
from robusteval.errors import UserError

SHOWN_BAD_LINES = 5


def add_parser(sub) -> None:
    p = sub.add_parser("import-results", help="store the answers of batch output files written by another engine",
                       description="Store the answers in OpenAI batch output files (vllm run-batch, Ray Data, a "
                                   "provider's batch API) for the requests `run ... --export-requests` wrote; the "
                                   "same run command then completes from the store. A bad line is counted and "
                                   "never stored; the rest of the file is.")
    p.add_argument("files", nargs="+", metavar="FILE", help="batch output JSONL files")
    p.add_argument("--cache-dir", dest="cache_dir", default=None,
                   help=f"the store the requests were exported from (default: {default_cache_dir()})")


def export_command(config: RunConfig, target: str, argv: list[str], console: Console) -> int:
    """``run ... --export-requests FILE``: the run against a dry-run engine; its requests to FILE."""
    from robusteval.engine.loop import run as run_loop
    from robusteval.run import export_suite

    if config.estimate:
        raise UserError("--export-requests and --estimate: give one (both ask nothing)")
    from robusteval.engine.exchange import export_target_problem, is_request_file
    from robusteval.engine.store import STORE_FILE

    path = Path(target)
    store_path = Path(config.cache_dir).expanduser() / STORE_FILE
    if (problem := export_target_problem(path, store_path, overwrite=config.overwrite)) is not None:
        raise UserError(f"--export-requests {target}: {problem}")
    command = "robusteval " + shlex.join(_without_export(argv))
    summary = run_loop(export_suite(config, path, command, console=console))
    out = out_console()
    total = sum(summary.requests.values())
    if not total:
        out.print(f"nothing to export: the store answers every request of this run; run it without "
                  f"--export-requests ({command})")
        if is_request_file(path):  # an earlier export, stale now; any other file is left alone
            path.unlink()
        return 0
    per_model = ", ".join(f"{model} {n}" for model, n in summary.requests.items())
    kinds = f" ({summary.loglik} log-likelihood requests to /v1/completions)" if summary.loglik else ""
    cache = "" if config.cache_dir == str(default_cache_dir()) else f" --cache-dir {shlex.quote(config.cache_dir)}"
    out.print(f"wrote {total} requests ({per_model}){kinds} to {path}")
    names = list(dict.fromkeys(summary.names.values()))  # the model names the lines' bodies send
    several = (f" (the file asks {', '.join(names)}: each line's body.model names its model, so each engine "
               f"answers its own model's lines)") if len(names) > 1 else ""
    out.print(f"next: answer it on your engine, e.g. `vllm run-batch -i {shlex.quote(str(path))} -o answers.jsonl "
              f"--model {shlex.quote(names[0])}`{several}, then `robusteval import-results answers.jsonl{cache}`, "
              f"then run `{command}`")
    if config.suite != "mcq":
        out.print("this suite asks in stages (later requests depend on answers): after each import, export again "
                  "until nothing is left to export")
    return 0


def _without_export(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--export-requests":
            skip = True
        elif not arg.startswith("--export-requests="):
            out.append(arg)
    return out


def run_command(args: argparse.Namespace, console: Console) -> int:
    """``robusteval import-results``: store what the files answer; say what is stored and still waiting."""
    from robusteval.engine.exchange import import_results
    from robusteval.engine.store import STORE_FILE, Store
    from robusteval.report.terminal import styled

    store_path = Path(args.cache_dir or default_cache_dir()).expanduser() / STORE_FILE
    if not store_path.exists():
        raise UserError(f"import-results: no store at {store_path}; give the --cache-dir the requests were "
                        "exported from")
    store = Store(store_path)
    try:
        report = import_results([Path(f) for f in args.files], store)
    finally:
        store.close()
    out = out_console()
    if len(report.stored) == 1:
        out.print(f"stored {report.answers} answers for `{next(iter(report.stored))}`")
    elif report.answers:  # requests several exports asked are answers to each of them
        out.print(f"stored {report.answers} answers: " + "; ".join(
            f"{n} to requests of `{run}`" for run, n in report.stored.items()))
    if report.already:
        out.print(f"{report.already} lines answered requests the store already held (left as they were)")
    if not report.answers and not report.already:
        out.print("stored nothing")
    for run, n in report.waiting.items():
        out.print(f"still waiting: {n} exported requests of `{run}` have no answer yet")
    if not report.waiting and report.answers:
        out.print("every exported request is answered: run the same command again (without --export-requests) "
                  "to complete it from the store")
    if report.bad:
        console.print(styled(f"{report.lines_bad} lines were not stored", "yellow",
                             f" ({report.unknown} with a custom_id no export recorded):"))
        for line in report.bad[:SHOWN_BAD_LINES]:
            console.print(f"  {line}")
        if report.lines_bad > SHOWN_BAD_LINES:
            console.print(f"  ... and {report.lines_bad - SHOWN_BAD_LINES} more")
        return EXIT_FAILED_REQUESTS
    return 0
