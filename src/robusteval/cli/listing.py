"""``robusteval list KIND``: what can be named on the command line, one line each (`robusteval.catalog`)."""

from __future__ import annotations

import argparse

KINDS = ("datasets", "families", "perturbations", "templates", "readers", "judges", "backends")


def add_parser(sub) -> None:
    p = sub.add_parser("list", help="list what can be named: datasets, families, perturbations, templates, "
                                    "readers, judges, backends (one line each)",
                       description="List what can be named on the command line, one line each.")
    p.add_argument("kind", choices=KINDS, help="what to list")


def run_command(args: argparse.Namespace) -> int:
    from robusteval.catalog import lines

    for line in lines(args.kind):
        print(line)
    return 0
