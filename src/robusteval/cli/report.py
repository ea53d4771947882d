"""``robusteval report RUN_DIR...``: write report.html, report.md and plots/ for run folders."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from robusteval.cli.common import out_console, written_text


def add_parser(sub) -> None:
    report = sub.add_parser("report", help="write report.html, report.md and plots/ for a run folder")
    report.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folder(s), e.g. runs/mcq-20261123-101500")


def run_command(args: argparse.Namespace, console: Console) -> int:
    from robusteval.report.render import write_report
    from robusteval.report.terminal import styled

    out = out_console()
    for run_dir in args.run_dirs:
        files = write_report(run_dir)
        out.print(f"wrote {written_text(Path(run_dir), [files.html, files.markdown, *files.plots])}")
        for note in files.notes:
            console.print(styled("note:", "yellow", f" {note}"))
    return 0
