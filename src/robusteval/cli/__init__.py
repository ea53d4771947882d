"""The command line: ``robusteval run SUITE``, ``report``, ``compare``, ``merge``, ``cache`` and the rest.

Every error a user can cause ends here as one line on stderr and a non-zero exit, never a
traceback. Ctrl-C stops the run cleanly: everything answered so far is already in the store, and
the same command resumes.

One module per command group (``run`` and ``--estimate``, ``perturb``, ``plan``, ``score``, ``report``, ``compare``,
``serve``, ``merge``, ``cache``, ``data check``, ``tree build``, ``check-determinism``, ``list``), each with
``add_parser`` and ``run_command``; this module builds the parser and turns errors into messages and exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys

from robusteval import __version__
from robusteval.cli import (
    cache,
    check_determinism,
    compare,
    data,
    exchange,
    listing,
    merge,
    perturb,
    plan,
    report,
    run,
    score,
    serve,
    tree,
)
from robusteval.cli.common import (
    EXIT_CHECK_FAILED,
    EXIT_FAILED_REQUESTS,
    EXIT_INTERRUPTED,
    EXIT_USER_ERROR,
    one_line,
    out_console,
    written_text,
)
from robusteval.errors import UserError
from robusteval.redact import redacted_terminal
from robusteval.suite_specs import SUITES

__all__ = ["EXIT_CHECK_FAILED", "EXIT_FAILED_REQUESTS", "EXIT_INTERRUPTED", "EXIT_USER_ERROR", "build_parser", "main",
           "written_text"]


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line. Only the suite named in ``argv`` is imported (each suite pulls in
    its own statistics and model libraries, seconds of start-up for all five); the others are
    listed by name and summary."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="robusteval", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="version", version=f"robusteval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{run,score,import-results,perturb,plan,report,compare,serve,merge,tree,check-determinism,cache,data,list}")
    run.add_parser(sub, wanted={a for a in argv if a in SUITES})
    score.add_parser(sub)
    exchange.add_parser(sub)
    perturb.add_parser(sub)
    plan.add_parser(sub)
    report.add_parser(sub)
    compare.add_parser(sub)
    serve.add_parser(sub)
    merge.add_parser(sub)
    tree.add_parser(sub, full=argv[:1] == ["tree"])
    data.add_parser(sub)
    check_determinism.add_parser(sub)
    cache.add_parser(sub)
    listing.add_parser(sub)
    return parser


EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: what a shell reports for a writer whose reader left (`| head`)


@redacted_terminal()  # no API key on the terminal, whatever a server echoed or a store holds
def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: this process's arguments); the exit code. Output cut short by
    its reader (``robusteval list perturbations | head -1``) ends quietly, as ``cat`` does: no
    "Broken pipe" error, no message at exit, exit 141."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a reader that left shows here, where it is handled, not at the interpreter's exit
    except BrokenPipeError:
        # nothing more reaches the pipe: the rest of the buffer goes nowhere instead of failing at exit
        with contextlib.suppress(OSError, ValueError):  # stdout may be no file descriptor (a test's capture)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _main(argv: list[str] | None) -> int:
    from robusteval.report.terminal import literal_console, styled

    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    for arg in argv:
        # Python 3.11's argparse drops a value of "--" (``--cache-dir=--``) and hands the command an
        # empty list where it expects text; refused here, as any other value argparse cannot read.
        if arg.startswith("--") and arg.endswith("=--"):
            parser.error(f"argument {arg[:-3]}: '--' is not a value")
    args = parser.parse_args(argv)
    args.argv = list(argv)
    console = literal_console(stderr=True)
    # SIGTERM ends a run like Ctrl-C does: cleanly, with the store intact.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        if args.command == "run":
            return run.run_command(args, console)
        if args.command == "score":
            return score.run_command(args, console)
        if args.command == "import-results":
            return exchange.run_command(args, console)
        if args.command == "perturb":
            return perturb.run_command(args)
        if args.command == "plan":
            return plan.run_command(args)
        if args.command == "compare":
            return compare.run_command(args)
        if args.command == "report":
            return report.run_command(args, console)
        if args.command == "serve":
            return serve.run_command(args)
        if args.command == "check-determinism":
            return check_determinism.run_command(args, out_console())
        if args.command == "tree":
            return tree.run_command(args, console)
        if args.command == "merge":
            return merge.run_command(args, console)
        if args.command == "data":
            return data.run_command(args)
        if args.command == "list":
            return listing.run_command(args)
        return cache.run_command(args)
    except UserError as exc:
        console.print(styled("error:", "red", f" {one_line(str(exc))}"))
        return EXIT_USER_ERROR
    except UnicodeDecodeError as exc:  # a text file no loader checked: say what, and what to do
        console.print(styled("error:", "red", f" a file given is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                              f"save it as UTF-8"))
        return EXIT_USER_ERROR
    except BrokenPipeError:  # stdout's reader left: `main` ends quietly
        raise
    except OSError as exc:  # a path that is a folder, unreadable, on a full disk, ...
        where = f"{exc.filename}: " if exc.filename else ""
        console.print(styled("error:", "red", one_line(f" {where}{exc.strerror or exc}")))
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        if args.command in ("run", "tree"):  # only runs ask models; the store holds what they answered
            console.print(styled("interrupted", "yellow", ": every answer received so far is saved; "
                                                          "run the same command again to resume."))
        else:
            console.print(styled("interrupted", "yellow"))
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
