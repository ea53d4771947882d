"""What every command shares: exit codes, the stdout console, the one-line list of files written."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

# Exit codes (README, "Exit codes"): 0 all done, every file written; 2 a problem the user can fix (one
# line on stderr), a file that could not be written included (a report: after the run's results);
# 3 the run finished and wrote its files but some requests failed after all retries; 130 interrupted;
# 1 (`cache check` only) the store is damaged or holds changed answers.
EXIT_USER_ERROR = 2
EXIT_FAILED_REQUESTS = 3
EXIT_CHECK_FAILED = 1  # `cache check` found damage or changed answers; `cache merge` found conflicts
EXIT_INTERRUPTED = 130


def one_line(text: str) -> str:
    """``text`` with every character that would break or hide a line (a newline, U+0085, U+2028, a
    control or zero-width character, as a file name or a flag's value may hold) written as its
    escape: an error is always one line, and shows exactly what was given."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def out_console() -> Console:
    """stdout, printing user and model text literally; when it is not a terminal (a file, a pipe,
    CI) tables get room instead of 80 columns."""
    from robusteval.report.terminal import literal_console

    console = literal_console()
    return console if console.is_terminal else literal_console(width=160)


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


RETRY_HINT = "run the same command again to retry them"


def failed_requests_warning(console: Console, failed: int, hint: str = RETRY_HINT) -> int:
    """Say that ``failed`` requests failed after all retries, and what to do (``hint``); the exit
    code a run (or a tree build, or a merge) ends with."""
    if not failed:
        return 0
    from robusteval.report.terminal import styled

    console.print(styled(f"{failed} requests failed", "yellow",
                         f" after all retries (listed in results.json, left out of every metric); the run "
                         f"exits with code {EXIT_FAILED_REQUESTS}; {hint}"))
    return EXIT_FAILED_REQUESTS
