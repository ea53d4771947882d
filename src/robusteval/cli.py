"""The command line: ``robusteval run SUITE``, ``robusteval cache stats|clear|check``.

Every error a user can cause ends here as one line on stderr and a non-zero exit, never a
traceback. Ctrl-C stops the run cleanly: everything answered so far is already in the store, and
the same command resumes.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import cast

from rich.console import Console

from robusteval import __version__
from robusteval.config import (
    RunConfig,
    build_config,
    check_text_files,
    default_cache_dir,
    load_config_file,
    unused_settings_message,
)
from robusteval.errors import UserError
from robusteval.files import atomic_write
from robusteval.suites import SUITE_SUMMARIES, SUITES, UNUSED_COMMON_SETTINGS, get_suite

STORE_FILE = "responses.sqlite"
# Exit codes (README, "Exit codes"): 0 all done; 2 a problem the user can fix (message on stderr);
# 3 the run finished and wrote its files but some requests failed after all retries; 130 interrupted;
# 1 (`cache check` only) the store is damaged or holds changed answers; (`cache merge`) answers conflicted.
EXIT_USER_ERROR = 2
EXIT_FAILED_REQUESTS = 3
EXIT_CHECK_FAILED = 1  # `cache check` found damage or changed answers
EXIT_INTERRUPTED = 130


def _out_console() -> Console:
    """stdout, printing user and model text literally; when it is not a terminal (a file, a pipe,
    CI) tables get room instead of 80 columns."""
    from robusteval.report.terminal import literal_console

    console = literal_console()
    return console if console.is_terminal else literal_console(width=160)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line. Only the suite named in ``argv`` is imported (each suite pulls in
    its own statistics and model libraries, seconds of start-up for all five); the others are
    listed by name and summary."""
    argv = sys.argv[1:] if argv is None else argv
    wanted = {a for a in argv if a in SUITES}
    parser = argparse.ArgumentParser(prog="robusteval", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"robusteval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{run,report,compare,serve,merge,tree,check-determinism,cache,data}")

    run = sub.add_parser("run", help="run a suite against one or more models")
    suites = run.add_subparsers(dest="suite", required=True, metavar="SUITE")
    for name in SUITES:
        module = get_suite(name) if name in wanted else None
        common = _common_run_arguments(hidden=UNUSED_COMMON_SETTINGS.get(name, ()))
        p = suites.add_parser(name, parents=[common], help=SUITE_SUMMARIES[name],
                              description=module.__doc__ if module else SUITE_SUMMARIES[name])
        if module:
            module.add_arguments(p)

    report = sub.add_parser("report", help="write report.html, report.md and plots/ for a run folder")
    report.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folder(s), e.g. runs/mcq-20261123-101500")

    cmp = sub.add_parser("compare", help="compare runs: headline metrics across runs and models, with CIs; "
                                         "paired differences for two mcq runs on the same questions")
    cmp.add_argument("runs", nargs="+", metavar="RUN", help="run folders (or samples.jsonl for mcq); the first is A")
    cmp.add_argument("--out", dest="compare_out", help="also write compare.md and one plot per metric into this folder")
    cmp.add_argument("--model-a", help="model of run A to compare (when it holds several)")
    cmp.add_argument("--model-b", help="model of run B to compare")
    cmp.add_argument("--json", dest="json_out", help="also write the comparison to this JSON file")

    serve = sub.add_parser("serve", help="a local, read-only web page: leaderboards per suite, linked to reports")
    serve.add_argument("runs_dir", nargs="?", default="runs", metavar="RUNS_DIR", help="folder of runs (default: runs)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 = any free port)")

    if argv[:1] == ["tree"]:
        from robusteval.suites.tree import add_build_command

        add_build_command(sub)  # robusteval tree build
    else:
        sub.add_parser("tree", help="build perturbation trees once, to evaluate with `run tree --trees`")

    from robusteval.data.check import add_parser as add_data_parser

    add_data_parser(sub)  # robusteval data check
    from robusteval.check_determinism import add_command as add_check_determinism

    add_check_determinism(sub)
    merge = sub.add_parser("merge", help="join the runs of --shard 1/N ... N/N into one run (asks nothing)")
    merge.add_argument("shard_runs", nargs="+", metavar="RUN_DIR", help="the shards' run folders")
    merge.add_argument("--out", dest="out_dir", default="runs", help="folder for the merged run (default: runs)")
    merge.add_argument("--run-id", dest="run_id", help="folder name of the merged run (default: a new id)")
    merge.add_argument("--overwrite", action="store_true", help="replace an existing --run-id run")
    merge.add_argument("--quiet", action="store_true", help="no tables")
    cache = sub.add_parser("cache", help="inspect, check, clear or merge response stores")
    cache.add_argument("action", choices=("stats", "clear", "check", "merge"))
    cache.add_argument("sources", nargs="*", metavar="SRC", help="with merge: stores to merge (a *.sqlite file or "
                                                                   "a --cache-dir folder)")
    cache.add_argument("--into", help="with merge: the store (file or folder) that receives their answers")
    cache.add_argument("--cache-dir", dest="cache_dir", default=None)
    cache.add_argument("--model-prefix", help="with clear: only responses whose model fingerprint starts with this")
    return parser


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


def _common_run_arguments(hidden: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """Flags every suite takes: models, data, sampling, limits, cache and output. Those in
    ``hidden`` (settings the suite does not read) are left out of its --help; giving one is an error
    (`config.build_config`)."""
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
    run.add_argument("--samples", type=int, help="replies per variant; needs --temperature > 0 (default: 1)")
    run.add_argument("--rpm", type=float, help="requests per minute limit per model")
    run.add_argument("--tpm", type=float, help="tokens per minute limit per model")
    run.add_argument("--concurrency", type=int, help="max requests in flight per model (default: the backend's)")
    run.add_argument("--timeout", type=float, help="seconds before a request is abandoned and retried (default: 300)")
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
                          "(its old files are removed when the new run's are written)")
    run.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    run.add_argument("--check-determinism", dest="check_determinism", type=int, metavar="N",
                     help="after the run, ask N of each model's greedy requests again (bypassing the store) and "
                          "record the share of replies that differ in results.json")
    run.add_argument("--shard", metavar="I/N",
                     help="run a deterministic 1/N of the items (shard I of N, by item id); join the N runs with "
                          "`robusteval merge`")
    run.add_argument("--estimate", action="store_true", default=None,
                     help="ask nothing: print the requests (after dedupe and cache), tokens, time and cost "
                          "a run would take")
    return run


def main(argv: list[str] | None = None) -> int:
    from robusteval.report.terminal import literal_console, styled

    args = build_parser(argv).parse_args(argv)
    console = literal_console(stderr=True)
    # SIGTERM ends a run like Ctrl-C does: cleanly, with the store intact.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        if args.command == "run":
            return _run(args, console)
        if args.command == "compare":
            return _compare(args)
        if args.command == "report":
            return _report(args, console)
        if args.command == "serve":
            return _serve(args)
        if args.command == "check-determinism":
            from robusteval.check_determinism import run_command as run_check_determinism

            return run_check_determinism(args, _out_console())
        if args.command == "tree":
            from robusteval.suites.tree import run_build_command

            return run_build_command(args, console)
        if args.command == "merge":
            return _merge(args, console)
        if args.command == "data":
            from robusteval.data.check import run_command as run_data_check

            return run_data_check(args)
        return _cache(args)
    except UserError as exc:
        console.print(styled("error:", "red", f" {exc}"))
        return EXIT_USER_ERROR
    except UnicodeDecodeError as exc:  # a text file no loader checked: say what, and what to do
        console.print(styled("error:", "red", f" a file given is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                              f"save it as UTF-8"))
        return EXIT_USER_ERROR
    except OSError as exc:  # a path that is a folder, unreadable, on a full disk, ...
        where = f"{exc.filename}: " if exc.filename else ""
        console.print(styled("error:", "red", f" {where}{exc.strerror or exc}"))
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        if args.command in ("run", "tree"):  # only runs ask models; the store holds what they answered
            console.print(styled("interrupted", "yellow", ": every answer received so far is saved; "
                                                          "run the same command again to resume."))
        else:
            console.print(styled("interrupted", "yellow"))
        return EXIT_INTERRUPTED


def _config_from_args(args: argparse.Namespace) -> RunConfig:
    file_values = load_config_file(args.config, args.suite) if args.config else {}
    names = {f.name for f in fields(RunConfig)} | {f.name for f in fields(get_suite(args.suite).Options)}
    flags = {k: getattr(args, k) for k in names if hasattr(args, k)}
    flags["models"] = tuple(args.models) if args.models else None
    if args.no_cache:
        flags["use_cache"] = False
    if args.all_items and "limit" in UNUSED_COMMON_SETTINGS.get(args.suite, ()):
        raise UserError(unused_settings_message(args.suite, ["all"]))
    config = build_config(file_values, flags)
    check_text_files(config)
    return replace(config, limit=None) if args.all_items else config


def _run(args: argparse.Namespace, console: Console) -> int:
    from robusteval.engine.loop import run as run_loop
    from robusteval.run import run_suite

    config = _config_from_args(args)
    if config.estimate:
        return _estimate(config, console)
    started = time.time()
    run_dir, result, usages = run_loop(run_suite(config, console=console, quiet=args.quiet))
    return _finish(args, config.suite, console, run_dir, result, usages, started)


def _merge(args: argparse.Namespace, console: Console) -> int:
    from robusteval.engine.loop import run as run_loop
    from robusteval.merge import merge_runs

    started = time.time()
    run_dir, result, usages = run_loop(merge_runs(args.shard_runs, out_dir=args.out_dir, run_id=args.run_id,
                                                  overwrite=args.overwrite, console=console))
    from robusteval.results.records import read_run

    return _finish(args, read_run(run_dir).suite, console, run_dir, result, usages, started)


def _finish(args: argparse.Namespace, suite: str, console: Console, run_dir: Path, result, usages: dict,
            started: float) -> int:
    """After a run (or a merge): the suite's tables, the data audit, usage, the files written, and the
    exit code (3 when requests failed)."""
    from robusteval.data.audit import DataAudit
    from robusteval.run import print_audit

    out = _out_console()
    if not args.quiet:
        get_suite(suite).print_summary(out, result)
    print_audit(out if not args.quiet else console, DataAudit.from_dict(result.extra.get("data")))
    for model, usage in usages.items():
        out.print(f"{model}: {usage['requests']} requests ({usage['cached']} cached, {usage['new']} new, "
                  f"{usage['failed']} failed), {usage['prompt_tokens'] + usage['completion_tokens']} new tokens, "
                  f"cost {usage['cost']:.4f}")
        if usage.get("store_rejected"):
            out.print(f"{model}: {usage['store_rejected']} stored answers had changed since they were stored "
                      "(checksum) and were asked again; `robusteval cache check` inspects the store")
    out.print(f"wrote {written_text(run_dir, result.written)} in {time.time() - started:.1f} s")
    failed = sum(u["failed"] for u in usages.values())
    if failed:
        from robusteval.report.terminal import styled

        console.print(styled(f"{failed} requests failed", "yellow",
                             f" after all retries (listed in results.json, left out of every metric); the run "
                             f"exits with code {EXIT_FAILED_REQUESTS}; run the same command again to retry them"))
        return EXIT_FAILED_REQUESTS
    return 0


def written_text(folder: Path, paths: list[Path]) -> str:
    """The files a run or report wrote, as one line: the folder, its files, and a count per subfolder."""
    top: list[str] = []
    sub: dict[str, int] = {}
    for path in paths:
        relative = path.relative_to(folder) if path.is_relative_to(folder) else path
        if len(relative.parts) > 1:
            sub[relative.parts[0]] = sub.get(relative.parts[0], 0) + 1
        else:
            top.append(str(relative))
    names = top + [f"{name}/ ({n} files)" for name, n in sub.items()]
    return f"{folder}/: {', '.join(names) if names else 'nothing'}"


def _estimate(config: RunConfig, console: Console) -> int:
    from rich.table import Table

    from robusteval.engine.loop import run as run_loop
    from robusteval.run import estimate_suite

    estimates = run_loop(estimate_suite(config, console=console))
    table = Table(title=f"estimate for `robusteval run {config.suite}` (nothing was asked)", title_justify="left")
    for column in ("model", "requests", "cached", "duplicates", "to send", "prompt tokens", "completion tokens",
                   "time", "cost"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for e in estimates:
        seconds = "unknown" if e.seconds is None else f"{e.seconds:.0f} s"
        table.add_row(e.model, str(e.requests), str(e.cached), str(e.duplicates), str(e.to_send), str(e.prompt_tokens),
                      str(e.completion_tokens), seconds, f"{e.cost:.4f}")
    out = _out_console()
    out.print(table)
    for e in estimates:
        out.print(f"{e.model}: completions and time from {e.basis}")
    if config.suite != "mcq":
        out.print("later stages (ratings of answers, next conversation turns) depend on answers not yet "
                  "given and are not counted")
    return 0


def _report(args: argparse.Namespace, console: Console) -> int:
    from robusteval.report.render import write_report
    from robusteval.report.terminal import styled

    out = _out_console()
    for run_dir in args.run_dirs:
        files = write_report(run_dir)
        out.print(f"wrote {written_text(Path(run_dir), [files.html, files.markdown, *files.plots])}")
        for note in files.notes:
            console.print(styled("note:", "yellow", f" {note}"))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from robusteval.web.server import make_server

    server = make_server(args.runs_dir, args.host, args.port)
    host, port = cast(tuple[str, int], server.server_address[:2])  # an AF_INET address: (host, port)
    print(f"serving {Path(args.runs_dir).resolve()} at http://{host}:{port}/ (read-only; Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # the way to stop a server: not an error, and nothing to resume
        print("stopped serving", flush=True)
    finally:
        server.server_close()
    return 0


def _compare(args: argparse.Namespace) -> int:
    import json

    from rich.table import Table

    from robusteval.compare import compare, compare_headlines, persona_leaderboard

    if len(args.runs) < 2:
        raise UserError("give two or more runs to compare")
    out = _out_console()
    board = compare_headlines(args.runs, out_dir=args.compare_out)
    if board is not None:
        table = Table(title="headline metrics across runs (95% CI)", title_justify="left")
        for column in ("run", "model", *board.metrics):
            table.add_column(column)
        for row in board.rows:
            table.add_row(row.run_id, row.model, *[_cell(row.values.get(m)) for m in board.metrics])
        out.print(table)
    if (board is not None and board.suite == "persona"
            and (persona_board := persona_leaderboard(args.runs)) is not None):
        _print_persona_board(out, persona_board, args.compare_out)
    if board is None or board.suite == "mcq":
        a = args.runs[0]
        for b in args.runs[1:]:
            result = compare(a, b, model_a=args.model_a, model_b=args.model_b)
            paired = Table(title=f"paired: B = {b}  vs  A = {a}", title_justify="left")
            for column in ("family", "metric", "questions", "A", "B", "B - A [95% CI]", "p (paired permutation)"):
                paired.add_column(column)
            for family, r in result.items():
                for metric in ("accuracy", "consistency_rate"):
                    d = r[metric]
                    ci = "" if d["ci_low"] is None else f" [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
                    p = "n/a" if d["p_value"] is None else f"{d['p_value']:.4f}"
                    paired.add_row(family, metric, str(d["n"]), f"{d['a']:.3f}", f"{d['b']:.3f}",
                                   f"{d['diff']:+.3f}{ci}", p)
            out.print(paired)
            if args.json_out:
                atomic_write(Path(args.json_out), json.dumps(result, indent=2))
                out.print(f"wrote {args.json_out}")
    if args.compare_out and board is not None:
        out.print(f"wrote {Path(args.compare_out) / 'compare.md'} and {len(board.metrics)} plots")
    return 0


def _print_persona_board(out: Console, board, out_dir: str | None) -> None:
    """The leaderboard's aggregation across runs: cardinal score, win rate, diversity, sensitivity."""
    import json

    from robusteval.report.terminal_persona import print_board_across_runs

    print_board_across_runs(out, board)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        atomic_write(Path(out_dir) / "persona_leaderboard.json", json.dumps(board.encode(), indent=2))
        out.print(f"wrote {Path(out_dir) / 'persona_leaderboard.json'}")


def _cell(v) -> str:
    if v is None or v[0] is None:
        return "n/a"
    return f"{v[0]:.3f}" + ("" if v[1] is None else f" [{v[1]:.3f}, {v[2]:.3f}]")


def _cache(args: argparse.Namespace) -> int:
    from robusteval.engine.store import Store, clear_store
    from robusteval.engine.store_check import check_store, describe

    if args.action == "merge" or args.sources or args.into:
        return _cache_merge(args)
    path = Path(args.cache_dir or default_cache_dir()) / STORE_FILE
    if not path.exists():
        print(f"no store at {path}")
        return 0
    if args.action == "check":
        report = check_store(path)
        print("\n".join(describe(report)))
        return 0 if report.ok else EXIT_CHECK_FAILED
    if args.action == "clear":
        print(clear_store(path, args.model_prefix))
        return 0
    store = Store(path, readonly=True)
    try:
        s = store.stats()
        print(f"store: {s.path}\nresponses: {s.responses}\nfailures recorded: {s.failures}\n"
              f"size: {s.size_bytes / 1e6:.1f} MB")
        for fingerprint, n in s.models.items():
            print(f"  {n:8d}  {fingerprint}")
    finally:
        store.close()
    return 0


def _cache_merge(args: argparse.Namespace) -> int:
    """`cache merge SRC... --into DST`; exits 1 where answers conflicted or were damaged (DST keeps its own)."""
    from robusteval.engine.store_merge import describe, merge_stores, store_path

    if args.action != "merge":
        raise UserError(f"cache {args.action} takes no store paths or --into; those are for `cache merge`")
    if not args.into:
        raise UserError("cache merge needs --into DST: the store (file or folder) that receives the answers")
    into = store_path(args.into)
    merged = merge_stores([store_path(s) for s in args.sources], into)
    print("\n".join(describe(merged, into)))
    print(f"merged {len(merged)} stores into {into}")
    return EXIT_CHECK_FAILED if any(m.conflicts or m.damaged for m in merged) else 0


if __name__ == "__main__":
    sys.exit(main())
