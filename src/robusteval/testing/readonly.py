"""Make files and folders read-only for a test, as a read-only mount would (tests need no root mount)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def read_only(paths: list[Path]) -> Iterator[bool]:
    """Make ``paths`` unwritable inside the block; root ignores modes, so there the immutable attribute
    is tried. Yields False when neither works here (the caller skips); restored on exit either way."""
    try:
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        yield _refused(paths[0]) or (bool(shutil.which("chattr")) and all(
            subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode == 0 for p in paths))
    finally:
        for p in paths:
            if shutil.which("chattr"):
                subprocess.run(["chattr", "-i", str(p)], capture_output=True)
            p.chmod(0o755 if p.is_dir() else 0o644)


def _refused(path: Path) -> bool:
    """Whether writing at ``path`` (a file, or a new file in a folder) is refused."""
    try:
        if path.is_dir():
            (path / ".probe").touch()
            (path / ".probe").unlink()
        else:
            with open(path, "r+b"):
                pass
    except PermissionError:
        return True
    return False
