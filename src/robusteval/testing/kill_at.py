"""Kill a real command at a chosen point, as a crash, an OOM killer or a cluster scheduler would.

`kill_at` starts a command (a ``robusteval run``, or a script that starts one) and sends it a signal,
SIGKILL by default, as soon as a trigger fires: the response store holds ``rows`` answers, or a file
matching ``file`` appears in the run folder. ``victim`` names a word of the command line of the
process to signal among the command's descendants (a ``robusteval`` started by a shell script), so
the script itself goes on as it would after its child was killed. Linux only (``/proc``).

    killed = kill_at([robusteval, "run", "mcq", ...], rows=(cache / "responses.sqlite", 10))
    assert killed.fired and killed.returncode == -signal.SIGKILL
"""

from __future__ import annotations

import glob
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Killed:
    fired: bool  # the trigger fired and the signal was sent before the command ended
    returncode: int  # the command's (negative: the signal that ended it)
    rows: int  # answers in the store when the signal was sent (0 without ``rows``)
    output: str  # what the command printed, stdout and stderr together


def store_rows(path: str | Path) -> int:
    """Answers in a response store, read-only; 0 while it does not exist or is not yet a store."""
    if not Path(path).exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.05)
        try:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def descendants(pid: int) -> list[int]:
    """The processes started by ``pid``, their children, and so on (from /proc)."""
    parent: dict[int, int] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text(errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        parent[int(stat.split("/")[2])] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, pp in parent.items() if pp in frontier]
        found += children
        frontier = children
    return found


def _command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def kill_at(cmd: Sequence[str | Path], *, rows: tuple[str | Path, int] | None = None, file: str | Path | None = None,
            sig: int = signal.SIGKILL, victim: str | None = None, timeout: float = 300,
            env: dict[str, str] | None = None, cwd: str | Path | None = None, step: float = 0.005) -> Killed:
    """Run ``cmd``; when ``rows`` (store, n) reaches n answers or a path matching the glob ``file``
    exists, send ``sig`` to it (or to its descendant whose command line holds the word ``victim``),
    then wait for the command to end. A command still running after ``timeout`` seconds is killed and
    an AssertionError raised: a test never hangs."""
    if rows is None and file is None:
        raise ValueError("kill_at needs a trigger: rows or file")
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        deadline = time.monotonic() + timeout
        fired, at = False, 0
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                n = store_rows(rows[0]) if rows is not None else 0
                if (rows is not None and n >= rows[1]) or (file is not None and glob.glob(str(file))):
                    target = proc.pid if victim is None else next(
                        (p for p in descendants(proc.pid) if victim in _command_line(p)), None)
                    if target is not None:
                        try:
                            os.kill(target, sig)
                            fired, at = True, n
                        except ProcessLookupError:
                            pass  # it ended on its own just now
                        break
                time.sleep(step)
            returncode = proc.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"kill_at: {cmd} ran past {timeout} s") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        output = out.read().decode(errors="replace")
    return Killed(fired, returncode, at, output)
