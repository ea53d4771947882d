"""``robusteval tree build``: build perturbation trees once (through the engine, cached and accounted
like any run) and store them, to evaluate with ``robusteval run tree --trees FILE``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from robusteval.cli.common import failed_requests_warning
from robusteval.cli.run import common_run_arguments, config_from_args, estimate_command
from robusteval.errors import UserError
from robusteval.files import atomic_write

HELP = "build perturbation trees once, to evaluate with `run tree --trees`"


def add_parser(sub, *, full: bool) -> None:
    """``tree`` among the commands; with ``full`` (the command line names it) its flags too, which
    needs the tree suite (its options) imported, so other commands start without it."""
    if not full:
        sub.add_parser("tree", help=HELP)
        return
    from robusteval.suites import tree as suite

    tree = sub.add_parser("tree", help=HELP)
    actions = tree.add_subparsers(dest="tree_action", required=True, metavar="{build}")
    build = actions.add_parser("build", parents=[common_run_arguments()], help="build and store trees",
                               description="Build LexEval perturbation trees with a paraphraser model and store them.")
    suite.add_arguments(build)
    build.add_argument("--output", "-o", dest="trees_output", default="trees.json",
                       help="where to write the trees (default: trees.json)")


def run_command(args: argparse.Namespace, console: Console) -> int:
    """Build the trees through `run_suite` (engine, cache, accounting as for any run) and copy
    them to ``--output``; with ``--estimate``, ask nothing and print what the build would ask
    (every level's paraphrase requests, each paraphrase planned as kept; re-requests of rejected
    candidates depend on the answers).
    Exits 3, like a run, when requests failed after all retries (their nodes are rejected)."""
    from robusteval.engine.loop import run as run_loop
    from robusteval.run import run_suite

    if getattr(args, "trees", None):
        raise UserError("`tree build` builds trees; --trees is for `run tree`")
    args.suite, args.build_only = "tree", True
    output = Path(args.trees_output).expanduser()
    if not args.trees_output.strip() or output.is_dir():
        raise UserError(f"--output {args.trees_output!r}: is {'a folder' if output.is_dir() else 'empty'}; "
                        "name the JSON file the trees are written to, e.g. --output trees.json")
    if not output.parent.is_dir():
        raise UserError(f"--output {args.trees_output}: no folder {output.parent}; create it first")
    config = config_from_args(args)
    if config.estimate:
        code = estimate_command(config, console)
        console.print("tree build: every level's paraphrase requests are counted, each paraphrase planned as kept; "
                      "re-requests of rejected candidates depend on the paraphrases; no trees were written",
                      highlight=False)
        return code
    run_dir, _, usages = run_loop(run_suite(config, console=console, quiet=args.quiet))
    doc = json.loads((run_dir / "trees.json").read_text(encoding="utf-8"))
    atomic_write(output, json.dumps(doc, indent=1, ensure_ascii=False))
    nodes, cost = doc["nodes"], doc["build_cost"]["total"]
    console.print(f"wrote {len(doc['trees'])} trees ({nodes['ok']} evaluable nodes, {nodes['rejected']} rejected) "
                  f"to {args.trees_output}; build cost {cost['requests']:.0f} requests, {cost['tokens']:.0f} tokens; "
                  f"run folder {run_dir}", highlight=False)
    return failed_requests_warning(console, sum(u["failed"] for u in usages.values()))
