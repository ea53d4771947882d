"""``robusteval run SUITE`` (and ``--estimate``): the flags every suite takes, the suite's own, and
one run from them to its folder."""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from robusteval.cli.common import RETRY_HINT, failed_requests_warning, out_console, written_text
from robusteval.config import RunConfig, check_text_files, default_cache_dir
from robusteval.configure import build_config, load_config_file, unused_settings_message
from robusteval.errors import UserError
from robusteval.report.terminal import styled
from robusteval.suite_specs import SUITES
from robusteval.suites import get_suite
from robusteval.suites.base import SuiteResult

if TYPE_CHECKING:
    from robusteval.engine.estimate import ModelEstimate


def add_parser(sub, wanted: set[str]) -> None:
    """``run`` with one subcommand per suite. Only the suites in ``wanted`` are imported (each pulls
    in its own statistics and model libraries, seconds of start-up for all five); the others are
    listed by name and summary."""
    run = sub.add_parser("run", help="run a suite against one or more models")
    suites = run.add_subparsers(dest="suite", required=True, metavar="SUITE")
    for name, spec in SUITES.items():
        module = spec.suite() if name in wanted else None
        common = common_run_arguments(hidden=spec.unused)
        p = suites.add_parser(name, parents=[common], help=spec.summary,
                              description=user_description(name, module.__doc__ if module else None))
        if module:
            module.add_arguments(p)


def user_description(suite: str, doc: str | None) -> str:
    """A suite's ``--help`` text for its users: the first paragraph of its module's docstring without
    the references to code (a parenthesis that names a module or function in backticks), and where
    its full description lives."""
    first = (doc or SUITES[suite].summary).strip().split("\n\n")[0]
    text = re.sub(r"\s*\([^()]*`[^()]*\)", "", " ".join(first.split()))
    return (f"{text} Every flag and figure: docs/suites/{suite}.md; `robusteval list KIND` names the datasets, "
            "families, perturbations, templates, readers, judges and backends.")


class _HidingParser(argparse.ArgumentParser):
    """An ArgumentParser whose flags named in ``hidden`` (by dest, or ``all`` for --all with limit) are
    suppressed in --help."""

    def __init__(self, *args, hidden: tuple[str, ...] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self._hidden = set(hidden) | ({"all_items"} if "limit" in hidden else set())

    def add_argument(self, *args, **kwargs):
        if kwargs.get("dest") in self._hidden or any(a.lstrip("-").replace("-", "_") in self._hidden for a in args):
            kwargs["help"] = argparse.SUPPRESS
        return super().add_argument(*args, **kwargs)


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """The engine's limits per model, as every command that asks a model takes them (run, tree build,
    check-determinism)."""
    parser.add_argument("--rpm", type=float, help="requests per minute limit per model")
    parser.add_argument("--tpm", type=float, help="tokens per minute limit per model")
    parser.add_argument("--concurrency", type=int, help="max requests in flight per model (default: the backend's)")
    parser.add_argument("--timeout", type=float,
                        help="seconds before a request is abandoned and retried (default: 300)")


def common_run_arguments(hidden: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """Flags every suite takes: models, data, sampling, limits, cache and output. Those in
    ``hidden`` (settings the suite does not read) are left out of its --help; giving one is an error
    (`configure.build_config`)."""
    run = _HidingParser(add_help=False, hidden=hidden)
    run.add_argument("--config", help="YAML file with the same settings as the flags (flags win)")
    run.add_argument("--model", dest="models", action="append",
                     help="model spec kind:name?key=value (repeatable; default: the embedded llamacpp model)")
    run.add_argument("--data", help="dataset name or file (default: the suite's own set)")
    run.add_argument("--limit", type=int, help="number of items, a seeded random sample (default: 20)")
    run.add_argument("--all", dest="all_items", action="store_true", help="use every item (no --limit)")
    run.add_argument("--seed", type=int, help="seed for sampling items and bootstrap (default: 0)")
    run.add_argument("--temperature", type=float, help="sampling temperature (default: 0, greedy)")
    run.add_argument("--top-p", dest="top_p", type=float, help="nucleus sampling mass (default: 1)")
    run.add_argument("--max-tokens", dest="max_tokens", type=int, help="reply length limit (default: 256)")
    run.add_argument("--stop", action="append", type=escaped, metavar="TEXT",
                     help="end each reply where TEXT first appears (repeatable; \\n is a line break), "
                          "e.g. --stop '\\n\\n' ends it after its first paragraph")
    run.add_argument("--samples", type=int, help="replies per variant; needs --temperature > 0 (default: 1)")
    add_limit_arguments(run)
    run.add_argument("--max-retries", dest="max_retries", type=int,
                     help="retries per request on errors (default: 5); 429s get up to 20 more, paced")
    run.add_argument("--price-in", dest="price_in", type=float, help="price per 1M prompt tokens, for cost accounting")
    run.add_argument("--price-out", dest="price_out", type=float, help="price per 1M completion tokens")
    run.add_argument("--cache-dir", dest="cache_dir",
                     help=f"where the response store lives (default: {default_cache_dir()})")
    run.add_argument("--no-cache", dest="no_cache", action="store_true",
                     help="ask again even when a stored answer exists")
    run.add_argument("--out", dest="out_dir", help="directory for run folders (default: runs)")
    run.add_argument("--run-id", dest="run_id",
                     help="name of the run folder inside --out (default: SUITE-TIMESTAMP-XXXX); "
                          "an existing one is refused")
    run.add_argument("--overwrite", action="store_true", default=None,
                     help="with --run-id: replace that run's folder "
                          "(its old files are removed when the new run's are written); with --export-requests: "
                          "replace an existing FILE")
    run.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    run.add_argument("--format", dest="output_format", choices=("table", "json"), default="table",
                     help="json: print one JSON object on stdout (suite, run folder, metrics, usage, files "
                          "written; with --estimate, the estimates) for scripts; messages go to stderr")
    run.add_argument("--check-determinism", dest="check_determinism", type=int, metavar="N",
                     help="after the run, ask N of each model's greedy requests again (bypassing the store) and "
                          "record the share of replies that differ in results.json")
    run.add_argument("--shard", metavar="I/N",
                     help="run a deterministic 1/N of the items (shard I of N, by item id); join the N runs with "
                          "`robusteval merge`")
    run.add_argument("--estimate", action="store_true", default=None,
                     help="ask nothing: print the requests (after dedupe and cache), tokens, time and cost "
                          "a run would take")
    run.add_argument("--export-requests", dest="export_requests", metavar="FILE",
                     help="ask nothing: write the requests the store lacks to FILE as OpenAI batch input lines "
                          "(vllm run-batch, Ray Data, a batch API); `robusteval import-results` brings the "
                          "answers back")
    return run


def escaped(text: str) -> str:
    """A ``--stop`` string as typed in a shell: ``\\n`` and ``\\t`` are a line break and a tab."""
    if not text:
        raise argparse.ArgumentTypeError("--stop needs a non-empty string")
    return text.replace("\\n", "\n").replace("\\t", "\t")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The run's configuration: the suite's defaults, overridden by ``--config``, overridden by the flags given."""
    file_values = load_config_file(args.config, args.suite) if args.config else {}
    names = {f.name for f in fields(RunConfig)} | {f.name for f in fields(SUITES[args.suite].options)}
    flags = {k: getattr(args, k) for k in names if hasattr(args, k)}
    flags["models"] = tuple(args.models) if args.models else None
    if args.no_cache:
        flags["use_cache"] = False
    if args.all_items and "limit" in SUITES[args.suite].unused:
        raise UserError(unused_settings_message(args.suite, ["all"]))
    config = build_config(file_values, flags)
    check_text_files(config)
    return replace(config, limit=None) if args.all_items else config


def run_command(args: argparse.Namespace, console: Console) -> int:
    """``robusteval run SUITE``: the run, then `finish`."""
    from robusteval.engine.loop import run as run_loop
    from robusteval.run import run_or_estimate

    config = config_from_args(args)
    if args.export_requests:
        from robusteval.cli.exchange import export_command

        return export_command(config, args.export_requests, getattr(args, "argv", []), console)
    started = time.time()
    outcome = run_loop(run_or_estimate(config, console=console, quiet=args.quiet))
    if isinstance(outcome, list):  # --estimate or YAML estimate: true: nothing was asked
        return show_estimates(config, outcome, console, as_json=args.output_format == "json")
    run_dir, result, usages = outcome
    return finish(args, config.suite, console, run_dir, result, usages, started)


def print_summary(suite: str, console: Console, result: SuiteResult) -> None:
    """The suite's terminal tables: its own ``print_summary``, else every estimate of its metrics."""
    from robusteval.report.table import print_estimates
    from robusteval.results.records import encode_metrics

    own = getattr(get_suite(suite), "print_summary", None)
    if own is not None:
        own(console, result)
    else:
        print_estimates(console, suite, encode_metrics(suite, result.metrics))


def finish(args: argparse.Namespace, suite: str, console: Console, run_dir: Path, result: SuiteResult,
           usages: dict, started: float, retry_hint: str = RETRY_HINT, asked_by: str = "") -> int:
    """After a run (or a merge): the suite's tables, the data audit, usage per model, the files
    written, and the exit code (3 when requests failed). ``asked_by`` names who asked what the usage
    counts where it was not this command (a merge's usage is its shards' summed: it asks nothing)."""
    from robusteval.data.audit import DataAudit
    from robusteval.results.records import encode_metrics
    from robusteval.run import print_audit

    if getattr(args, "output_format", "table") == "json":
        print_audit(console, DataAudit.from_dict(result.data))
        print(json.dumps({"suite": suite, "run_dir": str(run_dir), "metrics": encode_metrics(suite, result.metrics),
                          "usage": usages, "written": [str(p) for p in result.written]}, indent=2))
        return failed_requests_warning(console, sum(u["failed"] for u in usages.values()), retry_hint)
    out = out_console()
    if not args.quiet:
        print_summary(suite, out, result)
    print_audit(out if not args.quiet else console, DataAudit.from_dict(result.data))
    for model, usage in usages.items():
        out.print(f"{model}: {usage['requests']} requests{asked_by} ({usage['cached']} cached, {usage['new']} new, "
                  f"{usage['failed']} failed), {usage['prompt_tokens'] + usage['completion_tokens']} new tokens, "
                  f"cost {usage['cost']:.4f}" + (f" (+{usage['cached_cost']:.4f} of cached answers)"
                                                 if usage.get("cached_cost") else ""))
        if usage.get("store_rejected"):
            out.print(f"{model}: {usage['store_rejected']} stored answers had changed since they were stored "
                      "(checksum) and were asked again; `robusteval cache check` inspects the store")
    out.print(f"wrote {written_text(run_dir, result.written)} in {time.time() - started:.1f} s")
    if retry_hint == RETRY_HINT and window_failures_only(run_dir):
        retry_hint = WINDOW_HINT
    return failed_requests_warning(console, sum(u["failed"] for u in usages.values()), retry_hint)


# How to give each kind of backend a longer window: the warning before a run and the hint after one.
LONGER_WINDOW = ("llamacpp: --model 'llamacpp?n_ctx=8192'; a vLLM server: its --max-model-len; "
                 "hf: a model with a longer one")
WINDOW_HINT = ("they are longer than the model's context window, so the same command would fail the same way: "
               f"give the model a longer window ({LONGER_WINDOW}) or shorter inputs "
               "(persona: --context-max-tokens N); `--estimate` counts such prompts before a run")


def window_failures_only(run_dir: Path) -> bool:
    """Whether every failure the run recorded is a prompt longer than the model's window (a rerun
    cannot help), read from results.json's failures."""
    import json

    from robusteval.metrics.persona import WINDOW_ERROR

    try:
        failures = json.loads((run_dir / "results.json").read_text(encoding="utf-8")).get("failures") or []
    except (OSError, ValueError):
        return False
    return bool(failures) and all(WINDOW_ERROR.search(str(f.get("error") or "")) for f in failures)


def estimate_command(config: RunConfig, console: Console, as_json: bool = False) -> int:
    """``--estimate``: the suite against a dry-run engine; a table of what the run would ask and cost."""
    from robusteval.engine.loop import run as run_loop
    from robusteval.run import estimate_suite

    return show_estimates(config, run_loop(estimate_suite(config, console=console)), console, as_json)


def show_estimates(config: RunConfig, estimates: list[ModelEstimate], console: Console, as_json: bool = False) -> int:
    """What a run would ask and cost, per model (a table, or JSON), with its warnings; exit 0."""
    from dataclasses import asdict

    from robusteval.report.terminal import Table

    if as_json:
        print(json.dumps({"suite": config.suite, "estimates": [asdict(e) for e in estimates]}, indent=2))
        return 0
    table = Table(title=f"estimate for `robusteval run {config.suite}` (nothing was asked)", title_justify="left")
    for column in ("model", "requests", "cached", "duplicates", "to send", "prompt tokens", "completion tokens",
                   "time", "cost"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for e in estimates:
        seconds = "unknown" if e.seconds is None else f"{e.seconds:.0f} s"
        table.add_row(e.model, str(e.requests), str(e.cached), str(e.duplicates), str(e.to_send), str(e.prompt_tokens),
                      str(e.completion_tokens), seconds, f"{e.cost:.4f}")
    out = out_console()
    out.print(table)
    for e in estimates:
        out.print(f"{e.model}: completions and time from {e.basis}")
    for e in estimates:
        if e.over_window:
            console.print(styled("warning:", "yellow",
                                 f" {e.over_window} of the {e.to_send} requests to {e.model} have prompts longer "
                                 f"than its context window ({e.window} tokens): they would fail. Give the model a "
                                 f"longer window ({LONGER_WINDOW}) or shorten the inputs"
                                 + (" (--context-max-tokens cuts the opening posts)" if config.suite == "persona"
                                    else "")))
    if config.suite in CONTENT_DEPENDENT:
        out.print(f"later stages counted as if every reply were usable: {CONTENT_DEPENDENT[config.suite]}")
    return 0


# Suites whose later requests depend on what the model says: where the run may ask fewer than estimated.
CONTENT_DEPENDENT = {
    "consistency": "an oracle that rates at once is not re-asked, and identical answers share its request",
    "hallucination": "a generated pair that does not parse is neither judged nor detected in the cross step",
    "tree": "each paraphrase is planned as kept (a kept one grows a subtree); re-requests of rejected "
            "candidates (up to --retries each) are not counted",
}
