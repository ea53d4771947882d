"""``robusteval merge RUN...``: join the runs of ``--shard 1/N ... N/N`` into one run, asking nothing
(the unsharded command replayed over the shards' answers, `robusteval.merge`)."""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from robusteval.cli.run import finish


def add_parser(sub) -> None:
    merge = sub.add_parser("merge", help="join the runs of --shard 1/N ... N/N into one run (asks nothing)")
    merge.add_argument("shard_runs", nargs="+", metavar="RUN_DIR", help="the shards' run folders")
    merge.add_argument("--out", dest="out_dir", default="runs", help="folder for the merged run (default: runs)")
    merge.add_argument("--run-id", dest="run_id", help="folder name of the merged run (default: a new id)")
    merge.add_argument("--overwrite", action="store_true", help="replace an existing --run-id run")
    merge.add_argument("--cache-dir", dest="cache_dir",
                       help="the store holding the shards' answers (default: the --cache-dir the shards recorded); "
                            "e.g. where `robusteval cache merge` combined their stores")
    merge.add_argument("--quiet", action="store_true", help="no tables")


def run_command(args: argparse.Namespace, console: Console) -> int:
    from robusteval.engine.loop import run as run_loop
    from robusteval.merge import merge_runs
    from robusteval.results.records import read_run

    started = time.time()
    run_dir, result, usages = run_loop(merge_runs(args.shard_runs, out_dir=args.out_dir, run_id=args.run_id,
                                                  overwrite=args.overwrite, cache_dir=args.cache_dir,
                                                  console=console))
    return finish(args, read_run(run_dir).suite, console, run_dir, result, usages, started,
                  asked_by=", asked by its shards (this merge asked nothing)",
                  retry_hint="a merge asks no model: these requests failed in their shards; rerun those shards' "
                             "commands (they ask only what failed), then merge again")
