"""Writing and reading the files of a run folder safely.

Every file a run, ``report``, ``compare`` or ``tree build`` writes goes through `atomic_write`: the
bytes go to a temporary file beside the target, which then replaces it in one rename. A run killed
mid-write (SIGKILL, a full disk) leaves the previous file whole, or none, never half a report.

`read_jsonl` reads JSON Lines by splitting on ``\\n`` only: ``str.splitlines()`` also splits on
U+2028, U+2029, U+0085 and other Unicode line breaks, which may stand unescaped inside JSON
strings (``json.dumps(..., ensure_ascii=False)`` writes them as they are), and so cut a sample in two.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

from robusteval.errors import UserError


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; the parent folder must exist.

    The temporary file has a unique name (concurrent writers never share one) and is removed if
    the write fails; an OSError (disk full, read-only folder) becomes a `UserError` naming the file."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"could not write {path}: {exc.strerror or exc}") from None
    return path


def atomic_write_chunks(path: str | Path, chunks: Iterable[str]) -> Path:
    """`atomic_write` of text given piece by piece (a file built from a run's samples read back
    line by line, never held whole)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"could not write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def read_jsonl(path: str | Path) -> list[dict]:
    """The records of a JSON Lines file; a line that is not JSON is a `UserError` naming file and line."""
    return list(iter_jsonl(path))


def iter_jsonl(path: str | Path) -> Iterator[dict]:
    """`read_jsonl` one record at a time: a file of a million samples is never held whole."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8", newline="\n") as f:  # lines end at \n only (see above)
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def slug(text: str, *, keep: str = "-_") -> str:
    """``text`` as a file-name stem (plots, per-model files): letters, digits and the characters in
    ``keep``; anything else becomes '_'. The one copy: report figures, per-model submission files and
    persona context names all use it (with their own ``keep``)."""
    return "".join(c if c.isalnum() or c in keep else "_" for c in text)
