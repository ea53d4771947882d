"""``robusteval data check FILE|DATASET --suite mcq``: the data audit of a dataset, asking no model
(`robusteval.data.check`)."""

from __future__ import annotations

import argparse

from robusteval.data.check import check, checked_suites
from robusteval.data.ids import DEFAULT_ID_RULE, ID_RULES


def add_parser(sub) -> None:
    """``data check`` under the top-level subcommands."""
    data = sub.add_parser("data", help="inspect a dataset without running a model")
    actions = data.add_subparsers(dest="data_action", required=True, metavar="{check}")
    p = actions.add_parser("check", help="print the data audit: rows read, used, left out (by reason), quirks")
    p.add_argument("source", metavar="FILE|DATASET", help="a JSONL/CSV file or a dataset name, as for --data")
    p.add_argument("--suite", default="mcq", choices=sorted(checked_suites()),
                   help="the suite whose loader reads it (default: mcq)")
    p.add_argument("--duplicates", default="drop-both", choices=("drop-both", "keep-first", "keep-all"),
                   help="mcq: rule for rows repeating a question and its options with another answer")
    p.add_argument("--duplicate-ids", dest="duplicate_ids", default=DEFAULT_ID_RULE, choices=ID_RULES,
                   help="two different rows with one id: error (default), first (keep the first) or rename "
                        "(keep both, the later as ID~2...)")


def run_command(args: argparse.Namespace) -> int:
    """Print the audit, literally (dataset text may hold brackets), and exit 0."""
    audit = check(args.source, args.suite, args.duplicates, args.duplicate_ids)
    for line in audit.lines():
        print(line)
    if not audit.has_findings():
        print("nothing left out, repaired or assumed")
    return 0
