"""``robusteval check-determinism``: ask a sample of greedy requests twice and report the share of
replies that differ (`robusteval.check_determinism`)."""

from __future__ import annotations

import argparse

from rich.console import Console

from robusteval import check_determinism as determinism
from robusteval.cli.run import add_limit_arguments
from robusteval.ranges import Range, check

REQUESTS = Range(1, 10**6)


def add_parser(sub) -> None:
    """``robusteval check-determinism``: its flags."""
    p = sub.add_parser("check-determinism", help="ask a sample of greedy requests twice and report the share of "
                                                 "replies that differ (a backend's noise floor)",
                       description=(determinism.__doc__ or "").splitlines()[0])
    p.add_argument("--model", dest="models", action="append",
                   help="model spec kind:name?key=value (repeatable; default: the embedded llamacpp model)")
    p.add_argument("--n", type=int, default=40, help="requests to ask twice (default: 40)")
    p.add_argument("--suite", default="mcq", choices=("mcq",),
                   help="whose requests to ask (default: mcq, its order and format variants)")
    p.add_argument("--data", help="dataset name or file (default: the suite's own set)")
    p.add_argument("--families", help="mcq families the requests come from (default: order,format)")
    p.add_argument("--max-tokens", dest="max_tokens", type=int, help="reply length limit (default: 256)")
    p.add_argument("--seed", type=int, help="seed for the questions and the sample (default: 0)")
    add_limit_arguments(p)
    p.add_argument("--cache-dir", dest="cache_dir", help="the response store the first pass reads and writes")
    p.add_argument("--no-cache", dest="no_cache", action="store_true",
                   help="ask the first pass fresh too (the default serves stored answers, as a resumed run would)")


def run_command(args: argparse.Namespace, console: Console) -> int:
    """Plan, ask twice, print one line per model (and a few differing replies)."""
    from rich.text import Text

    from robusteval.configure import build_config
    from robusteval.engine.loop import run as run_loop
    from robusteval.models import parse_model_spec

    check("--n", args.n, REQUESTS)
    flags = {"suite": args.suite, "data": args.data, "max_tokens": args.max_tokens, "seed": args.seed,
             "concurrency": args.concurrency, "rpm": args.rpm, "tpm": args.tpm, "timeout": args.timeout,
             "cache_dir": args.cache_dir, "use_cache": False if args.no_cache else None,
             "families": tuple(f for f in args.families.split(",") if f) if args.families else None,
             # enough questions that the sample spreads over many of them
             "limit": args.n}
    config = build_config({}, flags)
    specs = args.models or list(config.models)
    for spec in specs:
        parse_model_spec(spec)  # every spec checked before any model starts
    from robusteval.engine.progress import RichProgress
    from robusteval.report.terminal import literal_console

    err = literal_console(stderr=True)
    for spec in specs:
        progress = RichProgress(f"check-determinism {parse_model_spec(spec).label}", console=err,
                                enabled=err.is_terminal)
        with progress:
            result = run_loop(determinism.check(config, spec, args.n, progress))
        console.print(Text(result.summary()))
        for d in result.examples:
            console.print(Text(f"  e.g. …{d.prompt[-80:]!r}\n"
                               f"    first:  {d.first[:120]!r}\n    second: {d.second[:120]!r}"))
    return 0

