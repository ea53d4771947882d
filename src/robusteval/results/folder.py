"""Writing a run to disk: its folder (reserved before any request is sent), ``results.json``
(config, versions, metrics, usage, failures) and ``samples.jsonl`` (every variant: prompt, reply,
parsed answer, verdict)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import shutil
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import UserError
from robusteval.files import atomic_write
from robusteval.results.records import encode_metrics
from robusteval.results.samples_file import SampleWriter

if TYPE_CHECKING:  # config decodes settings with results.codec
    from robusteval.config import RunConfig


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("robusteval", "aiohttp", "xllamacpp", "numpy", "transformers", "torch"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out


# Marks a folder as taken by a run that has not written its results yet (created exclusively, so
# two runs can never both take one folder); removed once the run's files are written.
RESERVED_MARK = ".reserved"


def default_run_id(suite: str) -> str:
    """``SUITE-YYYYmmdd-HHMMSS-xxxx``: the time for people, a random suffix so that two runs started
    in the same second get different folders."""
    return f"{suite}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class RunFolder:
    """The folder a run writes to, taken before its first request.

    ``replace``: an existing run's folder taken with ``--overwrite``; its old files are removed only
    when the new run's files are about to be written, so an interrupted run leaves the old run whole."""

    path: Path
    replace: bool = False

    def prepare_for_files(self) -> None:
        """Empty an overwritten run's folder (no stale plots or suite files remain beside the new ones)."""
        from robusteval.results.samples_file import PARTIAL_FILE

        if self.replace:
            try:
                for child in self.path.iterdir():
                    if child.name == PARTIAL_FILE:
                        continue  # the new run's samples, written as they were answered
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
            except OSError as exc:
                raise UserError(f"--overwrite: could not remove the old files of {self.path} ({exc.strerror or exc})") \
                    from None

    def finish(self) -> None:
        """The run's files are written: the folder is an ordinary run folder now."""
        (self.path / RESERVED_MARK).unlink(missing_ok=True)

    def release(self) -> None:
        """The run ended before writing anything (error, Ctrl-C): give the folder back, so the same
        command with the same ``--run-id`` can run again."""
        if self.replace:
            return
        (self.path / RESERVED_MARK).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.path.rmdir()  # only if still empty


def reserve_run_folder(out_dir: str, suite: str, run_id: str | None, *, overwrite: bool = False) -> RunFolder:
    """Check ``--out`` and take the run's folder, before any request is sent.

    Default ids are unique (time + random suffix, folder created exclusively, retried on a
    collision). An explicit ``--run-id`` whose folder exists is refused unless ``overwrite``; the
    id itself was checked by `RunConfig.validated` (no path separators, no ``..``)."""
    out = Path(out_dir).expanduser()
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out_dir}: is a file, not a folder; give a folder to hold run folders")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out_dir}: cannot create this folder ({exc.strerror or exc}); "
                        f"give a folder you can write to") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UserError(f"--out {out_dir}: this folder is not writable; give a folder you can write to")
    if run_id is None:
        for _ in range(1000):
            folder = _take(out / default_run_id(suite))
            if folder is not None:
                return folder
        raise UserError(f"--out {out_dir}: could not find a free run folder name; give --run-id")
    path = out / run_id
    folder = _take(path)
    if folder is not None:
        return folder
    if not overwrite:
        what = ("holds an unfinished run (it may still be running)" if (path / RESERVED_MARK).exists()
                else "already exists")
        raise UserError(f"--run-id {run_id}: {path} {what}; choose another --run-id, or add --overwrite "
                        f"to replace it (its files are removed when the new run's are written)")
    if path.is_symlink() or not path.is_dir():
        raise UserError(f"--run-id {run_id}: {path} is not a folder; --overwrite replaces only run folders")
    if not (path / "results.json").is_file() and not (path / RESERVED_MARK).exists():
        raise UserError(f"--run-id {run_id}: {path} is not a run folder (no results.json); "
                        f"--overwrite does not remove other folders")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--run-id {run_id}: {path} is not writable")
    return RunFolder(path, replace=True)


def _take(path: Path) -> RunFolder | None:
    """``path`` as this run's folder if it is new, or empty (left by a killed run); None if taken."""
    try:
        path.mkdir()
    except FileExistsError:
        if not path.is_dir() or path.is_symlink() or any(path.iterdir()):
            return None
    except OSError as exc:
        raise UserError(f"cannot create the run folder {path} ({exc.strerror or exc})") from None
    try:  # exclusive: of two runs given the same empty folder at once, one gets it
        os.close(os.open(path / RESERVED_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        return None
    except OSError as exc:
        raise UserError(f"cannot write in the run folder {path} ({exc.strerror or exc})") from None
    return RunFolder(path)


def write_run(run_dir: Path, *, config: RunConfig, models: dict[str, dict[str, Any]], metrics: Any,
              samples: SampleWriter | list[Any], started: float, finished: float,
              extra: dict[str, Any] | None = None) -> Path:
    """Write results.json and samples.jsonl atomically (temp file + rename) into the run's folder.
    ``samples``: the writer that wrote them as they were answered (`run.run_suite`), or a list;
    ``metrics``: the suite's typed record (`SuiteResult.metrics`), encoded here, once."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(samples, list):
        writer = SampleWriter(run_dir)
        writer.write_all(samples)
        samples = writer
    samples.finish()
    results = {
        "run_id": run_dir.name,
        "suite": config.suite,
        "config": asdict(config),
        "versions": versions(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "wall_time_s": round(finished - started, 3),
        **(extra or {}),
        "models": models,
        "metrics": encode_metrics(config.suite, metrics),
        "failures": samples.failures,
    }
    atomic_write(run_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False))
    return run_dir
