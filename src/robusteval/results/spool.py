"""Lines of a run file written as a run goes, kept on disk until the run writes its folder.

A suite file with one line per conversation or per answer (persona's conversations.jsonl) would
otherwise be held in memory until the end, and grow with the run. A `Spool` writes each line to an
unnamed temporary file (removed by the system when closed, or when the process ends) and gives
the text back piece by piece (`chunks`), which `SuiteResult.files` writes atomically into the run
folder (`files.atomic_write_chunks`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO

from robusteval.errors import UserError
from robusteval.redact import redact

CHUNK = 1 << 20  # characters read back at once


class Spool:
    """Text written piece by piece to a temporary file, read back by `chunks` (once) or `lines`."""

    def __init__(self) -> None:
        self._file: IO[str] | None = None

    def write(self, text: str) -> None:
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="")  # noqa: SIM115 (kept open across writes)
            self._file.write(redact(text, patterns=False))  # a temporary file is on disk too
        except OSError as exc:
            raise UserError(f"could not write a temporary file in {tempfile.gettempdir()}: "
                            f"{exc.strerror or exc}; free some room (or set TMPDIR) and run again") from None

    def chunks(self) -> Iterator[str]:
        """Everything written, from the start, then the file is closed (and so removed)."""
        if self._file is None:
            return
        try:
            self._file.seek(0)
            while text := self._file.read(CHUNK):
                yield text
        finally:
            self.close()

    def lines(self) -> Iterator[str]:
        """The lines written, from the start (without their newline); the spool stays open, so
        its lines can be read again (a file built from several spools side by side)."""
        if self._file is None:
            return
        self._file.seek(0)
        for line in self._file:
            yield line.rstrip("\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
