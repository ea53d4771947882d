"""``samples.jsonl`` written as a run's samples are answered, not held until the run ends.

A run of a million requests cannot keep a million sample objects (prompts and replies included) to
write them at the end. Suites hand each sample to a `SampleWriter` as soon as it is read; its line
goes to a hidden partial file in the run folder at once, and only the failures (listed again in
results.json) are kept. `finish` makes the file ``samples.jsonl`` by a rename, so the file appears
whole or not at all, as every file a run writes (an interrupted run leaves no samples.jsonl; its
partial file is removed with `discard`). Each line is redacted of the API keys, as every file
written through `files.atomic_write` is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Protocol

from robusteval.errors import UserError
from robusteval.redact import redact
from robusteval.results.codec import encode
from robusteval.results.records import Failure

SAMPLES_FILE = "samples.jsonl"
PARTIAL_FILE = ".samples.jsonl.partial"  # spared when an overwritten run's old files are removed


class Writable(Protocol):
    @property
    def status(self) -> str: ...

    def as_dict(self) -> dict[str, Any]: ...


class SampleWriter:
    """Writes samples.jsonl line by line; keeps the failures' records and the count.

    ``folder`` None: nothing is written, samples are only counted (``--estimate`` writes no files)."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        self.count = 0
        self.failures: list[dict[str, Any]] = []  # results.json's "failures", in the order of the samples
        self.partial = None if folder is None else folder / PARTIAL_FILE
        self._file: IO[str] | None = None if self.partial is None else self._open(self.partial, "w")

    def write(self, sample: Writable) -> None:
        self.count += 1
        if sample.status == "failed":
            self.failures.append(encode(Failure.of(sample)))
        if self._file is not None:
            try:
                self._file.write(redact(json.dumps(sample.as_dict(), ensure_ascii=False), patterns=False) + "\n")
            except OSError as exc:  # a full disk: the answers are in the store, the same command resumes
                raise UserError(f"could not write {self.partial}: {exc.strerror or exc}; every "
                                f"answer is stored, so the same command resumes once there is room") from None

    def write_all(self, samples: Iterable[Writable]) -> None:
        for sample in samples:
            self.write(sample)

    def finish(self) -> Path | None:
        """Close the file and give it its name; returns its path (None when nothing is written)."""
        if self._file is None or self.folder is None or self.partial is None:
            return None
        path = self.folder / SAMPLES_FILE
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.partial, path)
        except OSError as exc:
            raise UserError(f"could not write {path}: {exc.strerror or exc}") from None
        finally:
            self._file = None
        return path

    def discard(self) -> None:
        """The run ended without its files: close and remove the partial file."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.partial is not None:
            self.partial.unlink(missing_ok=True)

    @staticmethod
    def _open(path: Path, mode: str) -> IO[str]:
        try:
            return open(path, mode, encoding="utf-8", newline="\n")
        except OSError as exc:
            raise UserError(f"could not write {path}: {exc.strerror or exc}") from None
