"""``robusteval score FILE...``: score replies produced elsewhere (a generic JSONL against a dataset,
MMLU-Pro's released outputs, lm-evaluation-harness sample logs) or a correctness grid, with no
model call, into a run folder that ``report``, ``compare`` and the leaderboard read (`scoring.flow`)."""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from robusteval.metrics.budget_covariates import COVARIATES, DEFAULT_COVARIATES
from robusteval.metrics.search import DEFAULT_METHOD, METHODS, SEARCHES
from robusteval.readers import DEFAULT_READER, READERS
from robusteval.suites.base import csv_arg


def add_parser(sub) -> None:
    p = sub.add_parser("score", help="score replies or a correctness grid produced elsewhere (asks no model)",
                       description=__doc__)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="replies (JSONL of item_id, variant, reply [, family, model, sample]), MMLU-Pro's "
                        "model_outputs_*.zip (or the .json in it), lm-eval samples_*.jsonl (with its results_*.json: "
                        "its figures beside ours), or lm-eval's whole --output_path folder, inspect_ai logs (.eval, "
                        ".json), or a grid (CSV/JSONL of item, variant, correct [, answer, family, model, category, "
                        "reference])")
    p.add_argument("--data", help="the dataset generic replies answer (a name or a file), as `run mcq --data`")
    p.add_argument("--families", type=csv_arg,
                   help="the design the generic replies' variants come from (default: the families the file "
                        "names, else order,format)")
    p.add_argument("--cross", type=csv_arg, help="the crossed design the replies come from, as `run mcq --cross`")
    p.add_argument("--templates", help="the prompt templates the replies come from, as `run mcq --templates`")
    p.add_argument("--reader", help=f"how replies are read: {', '.join(READERS)} (default: {DEFAULT_READER}; "
                                    "inspect for an inspect_ai log; docs/readers.md)")
    p.add_argument("--model", help="the model's name in the results (default: from the file, its rows, or its name)")
    p.add_argument("--as", dest="kind", choices=("replies", "mmlu-pro", "lm-eval", "inspect", "grid"),
                   help="what the files are (default: told from each file)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals and of --budget's cells "
                                                       "(default: 0)")
    p.add_argument("--budget", type=float,
                   help="a grid only: estimate the full grid from this share of its cells, chosen as "
                        "`run mcq --budget F --seed S` would, and show each estimate beside the grid's own value")
    p.add_argument("--covariates", type=csv_arg, metavar="LIST",
                   help=f"with --budget: what the estimate is told of each variant before asking, a comma list of "
                        f"{', '.join(COVARIATES)} (default: {','.join(DEFAULT_COVARIATES)}), as `run mcq "
                        "--budget-covariates`; text reads each variant's text from --variant-texts")
    p.add_argument("--variant-texts", dest="variant_texts", metavar="FILE",
                   help="with --covariates text: CSV/JSONL of variant, text (e.g. each prompt template's text)")
    p.add_argument("--search", choices=SEARCHES,
                   help="a grid only: replay the budgeted search for the best and worst variant (`run mcq --search "
                        "best-worst`) on the grid, beside the grid's own best and worst")
    p.add_argument("--calls", type=float, metavar="F",
                   help="with --search: the share of the grid's cells the search may ask, e.g. 0.125 or 0.02")
    p.add_argument("--method", help=f"with --search: {', '.join(METHODS)} (default: {DEFAULT_METHOD})")
    p.add_argument("--out", dest="out_dir", default="runs", help="folder for the run folder (default: runs)")
    p.add_argument("--run-id", dest="run_id", help="name of the run folder (default: score-TIMESTAMP-XXXX)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --run-id folder")
    p.add_argument("--quiet", action="store_true", help="no tables")


def run_command(args: argparse.Namespace, console: Console) -> int:
    from robusteval.cli.run import finish
    from robusteval.config import run_id_problem
    from robusteval.errors import UserError
    from robusteval.run import write_report_files
    from robusteval.scoring.flow import score_files, score_request

    if args.run_id is not None and (problem := run_id_problem(args.run_id)):
        raise UserError(f"--run-id {args.run_id!r}: {problem}")
    started = time.time()
    request = score_request({"paths": args.files, "data": args.data, "families": args.families,
                             "cross": args.cross, "templates": args.templates, "reader": args.reader,
                             "model": args.model, "kind": args.kind, "seed": args.seed, "out_dir": args.out_dir,
                             "run_id": args.run_id, "overwrite": args.overwrite, "budget": args.budget,
                             "covariates": args.covariates, "variant_texts": args.variant_texts,
                             "search": args.search, "calls": args.calls, "method": args.method})
    run_dir, result = score_files(request)
    result.written += write_report_files(run_dir, console)
    return finish(args, "mcq", console, run_dir, result, {}, started)
