"""Writing a run to disk: its folder (reserved before any request is sent), ``results.json``
(config, versions, metrics, usage, failures) and ``samples.jsonl`` (every variant: prompt, reply,
parsed answer, verdict)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import platform
import secrets
import shutil
import socket
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import UserError
from robusteval.files import atomic_write
from robusteval.results.records import FORMAT_VERSION, encode_extra, encode_metrics
from robusteval.results.samples_file import SampleWriter

if TYPE_CHECKING:  # config decodes settings with results.codec
    from robusteval.config import RunConfig

try:
    import fcntl
except ImportError:  # Windows: no flock; the holder's PID and start time tell
    fcntl = None  # type: ignore[assignment]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("robusteval", "aiohttp", "xllamacpp", "numpy", "transformers", "torch"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out


# Marks a folder as taken by a run that has not written all its files yet; removed once they are. It
# names its holder (PID, host, the process's start time) and the holder keeps an exclusive lock on
# it (flock) for as long as it lives: the kernel drops the lock when the process ends, however it
# ends, so a reservation whose lock can be taken was left by a killed run, and the same command
# resumes it. Where the file system has no locks, the holder's PID and start time on this host tell.
RESERVED_MARK = ".reserved"
RUN_FILES = ("results.json", "samples.jsonl")  # a folder holding one of these is a run's (for --overwrite)


def default_run_id(suite: str) -> str:
    """``SUITE-YYYYmmdd-HHMMSS-xxxx``: the time for people, a random suffix so that two runs started
    in the same second get different folders."""
    return f"{suite}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


@dataclass
class RunFolder:
    """The folder a run writes to, taken before its first request (its ``.reserved`` held: ``mark``,
    a descriptor locked until `finish` or `release`).

    ``replace``: the folder holds an earlier run's files (a run taken with ``--overwrite``, or one
    killed before it finished); they are removed only when the new run's files are about to be
    written, so an interrupted run leaves the old run whole. ``resumed``: the folder was an
    unfinished run's (a killed run's reservation), so it stays marked unfinished until a run finishes."""

    path: Path
    replace: bool = False
    mark: int | None = None
    resumed: bool = False
    writing: bool = False  # `prepare_for_files` was called: the folder may hold part of this run's files

    def prepare_for_files(self) -> None:
        """Empty an overwritten run's folder (no stale plots or suite files remain beside the new ones);
        the reservation stays until `finish`, so a run killed while writing its files is resumed."""
        from robusteval.results.samples_file import PARTIAL_FILE

        self.writing = True
        if self.replace:
            try:
                for child in self.path.iterdir():
                    if child.name in (PARTIAL_FILE, RESERVED_MARK):
                        continue  # the new run's samples, written as they were answered; its reservation
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
        self._unlock()

    def release(self) -> None:
        """The run ended without its files (error, Ctrl-C). Before any file was written, the folder is
        given back as it was: a new folder removed, an overwritten run's reservation dropped (its old
        files are whole). A folder that held an unfinished run, or part of this run's files, keeps
        its reservation: it is unfinished, and the same command resumes it."""
        if not self.writing and not self.resumed:
            (self.path / RESERVED_MARK).unlink(missing_ok=True)
            if not self.replace:
                with contextlib.suppress(OSError):
                    self.path.rmdir()  # only if still empty
        self._unlock()

    def _unlock(self) -> None:
        if self.mark is not None:
            os.close(self.mark)  # drops the lock
            self.mark = None


def reserve_run_folder(out_dir: str, suite: str, run_id: str | None, *, overwrite: bool = False) -> RunFolder:
    """Check ``--out`` and take the run's folder, before any request is sent.

    Default ids are unique (time + random suffix, folder created exclusively, retried on a
    collision). An explicit ``--run-id`` whose folder holds a killed run's reservation is resumed;
    one held by a live run is refused; any other existing folder is refused unless ``overwrite``.
    The id itself was checked by `RunConfig.validated` (no path separators, no ``..``)."""
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
    is_folder = path.is_dir() and not path.is_symlink()
    if is_folder and (path / RESERVED_MARK).exists():
        folder, holder = _take_over(path)
        if folder is not None:
            return folder
        if holder is not None:
            raise UserError(f"--run-id {run_id}: {path} is being written by a run that is still going "
                            f"({holder}); wait for it to end or stop it, or choose another --run-id")
    if not overwrite:
        raise UserError(f"--run-id {run_id}: {path} already exists; choose another --run-id, or add --overwrite "
                        f"to replace it (its files are removed when the new run's are written)")
    if not is_folder:
        raise UserError(f"--run-id {run_id}: {path} is not a folder; --overwrite replaces only run folders")
    if not any((path / name).is_file() for name in RUN_FILES):
        raise UserError(f"--run-id {run_id}: {path} is not a run folder (no results.json); "
                        f"--overwrite does not remove other folders")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--run-id {run_id}: {path} is not writable")
    mark = _new_mark(path)
    if mark is None:  # another run took it this instant
        raise UserError(f"--run-id {run_id}: {path} was just taken by another run; choose another --run-id")
    return RunFolder(path, replace=True, mark=mark)


def _take(path: Path) -> RunFolder | None:
    """``path`` as this run's folder if it is new, or empty (left by a killed run); None if taken."""
    try:
        path.mkdir()
    except FileExistsError:
        if not path.is_dir() or path.is_symlink() or any(path.iterdir()):
            return None
    except OSError as exc:
        raise UserError(f"cannot create the run folder {path} ({exc.strerror or exc})") from None
    mark = _new_mark(path)
    return None if mark is None else RunFolder(path, mark=mark)


def _new_mark(path: Path) -> int | None:
    """Create ``.reserved`` exclusively and lock it (of two runs given one folder at once, one gets
    it); None if another run holds it."""
    try:
        fd = os.open(path / RESERVED_MARK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return None
    except OSError as exc:
        raise UserError(f"cannot write in the run folder {path} ({exc.strerror or exc})") from None
    if _lock(fd) is False:  # a run that found the mark before it was locked took it over
        os.close(fd)
        return None
    _write_holder(fd)
    return fd


def _take_over(path: Path) -> tuple[RunFolder | None, str | None]:
    """The folder of a run that was killed (its ``.reserved`` is no longer held), taken for this run;
    else None and who holds it (None when the mark went away: that run finished)."""
    mark = path / RESERVED_MARK
    try:
        fd = os.open(mark, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise UserError(f"cannot open {mark} ({exc.strerror or exc})") from None
    taken = False
    try:
        locked = _lock(fd)
        holder = _read_holder(fd)
        alive = _holder_alive(holder) if locked is None else not locked
        if alive:
            return None, _holder_text(holder)
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(mark, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if not same:  # its holder finished and removed it just now
            return None, None
        _write_holder(fd)
        taken = True
    finally:
        if not taken:
            os.close(fd)
    return RunFolder(path, replace=True, mark=fd, resumed=True), None


def _lock(fd: int) -> bool | None:
    """Take the exclusive lock of ``fd`` without waiting: True, False if another process holds it,
    None where the file system has no locks."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return None
        raise
    return True


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc), so that a PID reused by another
    process is not taken for the holder; None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5); the fields after ")" start at 3


def _write_holder(fd: int) -> None:
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": _process_start(os.getpid()),
              "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, (json.dumps(holder) + "\n").encode())


def _read_holder(fd: int) -> dict[str, Any] | None:
    """The holder a ``.reserved`` names; None for an empty or unreadable one (a run killed as it
    took the folder, or a version that wrote none)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        holder = json.loads(os.read(fd, 4096))
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) and isinstance(holder.get("pid"), int) else None


def _holder_alive(holder: dict[str, Any] | None) -> bool:
    """Without locks: whether the holder still runs. Only a holder on this host can be checked; one on
    another host is taken to be running."""
    if holder is None:
        return False
    if holder.get("host") != socket.gethostname():
        return True
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # another user's process: it exists
    started = holder.get("started")
    return started is None or _process_start(holder["pid"]) in (None, started)


def _holder_text(holder: dict[str, Any] | None) -> str:
    if holder is None:
        return "a run that is just starting"
    return f"PID {holder['pid']} on {holder.get('host', '?')}, since {holder.get('since', '?')}"


def write_run(run_dir: Path, *, config: RunConfig, models: dict[str, dict[str, Any]], metrics: Any,
              samples: SampleWriter | list[Any], started: float, finished: float,
              extra: Any = None, data: dict[str, Any] | None = None,
              determinism: dict[str, dict[str, Any]] | None = None) -> Path:
    """Write results.json and samples.jsonl atomically (temp file + rename) into the run's folder.
    ``samples``: the writer that wrote them as they were answered (`run.run_suite`), or a list;
    ``metrics`` and ``extra``: the suite's typed records (`SuiteResult.metrics`, `SuiteResult.extra`),
    encoded here, once; ``data``: the data audit; ``determinism``: ``--check-determinism``'s counts."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(samples, list):
        writer = SampleWriter(run_dir)
        writer.write_all(samples)
        samples = writer
    samples.finish()
    results = {
        "run_id": run_dir.name,
        "suite": config.suite,
        "format_version": FORMAT_VERSION,
        "config": asdict(config),
        "versions": versions(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "wall_time_s": round(finished - started, 3),
        **encode_extra(config.suite, extra),
        **({} if data is None else {"data": data}),
        **({} if determinism is None else {"determinism": determinism}),
        "models": models,
        "metrics": encode_metrics(config.suite, metrics),
        "failures": samples.failures,
    }
    atomic_write(run_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False))
    return run_dir
