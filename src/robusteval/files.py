"""Writing and reading the files of a run folder safely.

Every file a run, ``report``, ``compare`` or ``tree build`` writes goes through `atomic_write`: the
bytes go to a temporary file beside the target, which then replaces it in one rename. A run killed
mid-write (SIGKILL, a full disk) leaves the previous file whole, or none, never half a report. It is
also the door where text is redacted of the API keys (`redact`): whatever a server echoed (a model id
in the fingerprint, a key in a reply), no file a run writes holds one.

`read_jsonl` reads JSON Lines by splitting on ``\\n`` only: ``str.splitlines()`` also splits on
U+2028, U+2029, U+0085 and other Unicode line breaks, which may stand unescaped inside JSON
strings (``json.dumps(..., ensure_ascii=False)`` writes them as they are), and so cut a sample in two.

Every text file a user gives (data, config, templates, populations, corpora, stored trees) is read
through `read_text` / `decode_text`: strictly UTF-8, a leading byte-order mark accepted (Excel writes
one), any other encoding refused with a message naming the file, the line and the encoding it looks
like, never read as mojibake in silence. JSON is parsed through `parse_json`, which bounds the
nesting depth (`MAX_JSON_DEPTH`), so a file of ten thousand ``[`` is one message, not a
RecursionError; YAML through `parse_yaml`, likewise; CSV through `csv_rows`.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
import json
import math
import os
import re
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.redact import redact, redact_chunks

MAX_JSON_DEPTH = 64  # arrays and objects inside each other; real data files nest 3 or 4 deep
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: linear even on an unclosed string
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def default_cache_dir() -> Path:
    """robusteval's cache folder: ``$ROBUSTEVAL_CACHE_DIR``, else ``~/.cache/robusteval``. The response
    store lives there by default, and what robusteval downloads (HELM's run-time data, under ``helm``)."""
    return Path(os.environ.get("ROBUSTEVAL_CACHE_DIR") or Path.home() / ".cache" / "robusteval")


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, redacted of the API keys) to ``path`` atomically; the parent
    folder must exist.

    The temporary file has a unique name (concurrent writers never share one) and is removed if
    the write fails; an OSError (disk full, read-only folder) becomes a `UserError` naming the file."""
    path = Path(path)
    raw = redact(data, patterns=False).encode("utf-8") if isinstance(data, str) else data
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
    line by line, never held whole), redacted as it is (a key split between two pieces included)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as f:
            for chunk in redact_chunks(chunks):
                f.write(chunk)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"could not write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def names_a_file(name: str | Path) -> bool:
    """Whether ``name`` is the path of an existing file (a dataset's name, too long or holding a NUL
    byte for a path, is not)."""
    try:
        return bool(name) and Path(name).expanduser().is_file()
    except (OSError, ValueError):
        return False


def file_sha256(path: str | Path) -> str:
    """The sha256 of the file's bytes, read in blocks (a data file is never held whole for it)."""
    digest = hashlib.sha256()
    try:
        with open(Path(path).expanduser(), "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return digest.hexdigest()


def decode_text(raw: bytes, where: str | Path, first_line: int = 1) -> str:
    """``raw`` as UTF-8 text without a leading byte-order mark; any other encoding is a `UserError`
    naming ``where``, the line (``raw`` starting on line ``first_line``) and what the bytes look like."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise UserError(f"{where}: UTF-16 text (a byte-order mark 0x{raw[:2].hex()}, as Excel's \"Unicode text\" "
                        f"writes); save it as UTF-8")
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + first_line
        raise UserError(f"{where}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}: {exc.reason}); "
                        f"{_looks_like(raw)}; save the file as UTF-8") from None


def _looks_like(raw: bytes) -> str:
    """A guess at the encoding of bytes that are not UTF-8, for the message."""
    if raw[:4000].count(0) > len(raw[:4000]) // 4:
        return "it looks like UTF-16 without a byte-order mark"
    try:
        raw.decode("cp1252")
    except UnicodeDecodeError:
        return "it looks like an 8-bit encoding such as Latin-1"
    return "it looks like Latin-1 / Windows-1252 (what older Excel and Windows tools write)"


def read_text(path: str | Path, what: str = "") -> str:
    """The text of the file at ``path`` (`decode_text`); a missing, folder or unreadable path is a
    `UserError`. ``what``: how messages name it (``--data x.csv``), the path by default."""
    where = what or str(path)
    try:
        raw = Path(path).expanduser().read_bytes()
    except FileNotFoundError:
        raise UserError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{where}: is a folder; give a file") from None
    except OSError as exc:
        raise UserError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    return decode_text(raw, where)


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets inside strings not counted)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:  # cannot nest deeper: skip the scan
        return 0
    skeleton = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))  # the brackets outside strings, in order
    return max(itertools.accumulate((1 if b in "[{" else -1 for b in skeleton), initial=0))


def parse_json(text: str, where: str | Path, *, finite: bool = True) -> Any:
    """``text`` as JSON; malformed or nested deeper than `MAX_JSON_DEPTH` is a `UserError` naming
    ``where`` (and the line within ``text``). ``finite``: ``NaN``, ``Infinity`` and ``-Infinity``
    (which Python's json reads, the JSON standard does not have) are refused naming the line: in a
    data file they are a broken export, never a value to ask a model or score with. Our own
    samples files, which may hold a NaN score, are read with ``finite=False``."""
    if (depth := json_depth(text)) > MAX_JSON_DEPTH:
        raise UserError(f"{where}: JSON nested {depth} deep; at most {MAX_JSON_DEPTH} levels of arrays and "
                        f"objects are read")
    try:
        return json.loads(text) if not finite else json.loads(text, parse_constant=_refuse_constant)
    except _NonFinite as exc:
        raise UserError(f"{_where_in(text, where, exc.token)}: {exc.token} is not a finite number; give a number "
                        f"(or a string, quoted)") from None
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if "\n" in text.strip() else f"column {exc.colno}"
        raise UserError(f"{where}: not valid JSON ({exc.msg} at {at})") from None
    except RecursionError:  # cannot happen under the depth bound; kept as the last guard
        raise UserError(f"{where}: JSON nested too deep to read") from None


class _NonFinite(ValueError):
    def __init__(self, token: str):
        super().__init__(token)
        self.token = token


def _refuse_constant(token: str) -> Any:
    raise _NonFinite(token)


def _where_in(text: str, where: str | Path, token: str) -> str:
    """``where``, with the line of ``token`` (outside strings) where ``text`` has several lines."""
    if "\n" not in text.strip():
        return str(where)
    blank = _JSON_STRING.sub(lambda m: " " * len(m.group()), text)  # strings blanked, positions kept
    at = blank.find(token)
    return f"{where}:{blank.count(chr(10), 0, at) + 1}" if at >= 0 else str(where)


def finite_number(value: Any, where: str | Path, what: str) -> float:
    """``value`` (a number, or its text in a CSV cell) as a finite float; anything else, NaN and
    infinities included, is a `UserError` naming ``where`` and the field ``what``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise UserError(f"{where}: {what!r} must be a finite number, got {value!r}")
    return number


def parse_yaml(text: str, where: str | Path) -> Any:
    """``text`` as YAML (safe types only); malformed or nested too deep is a `UserError` naming
    ``where`` and the line."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else str(where)
        raise UserError(f"{at}: malformed YAML ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:
        raise UserError(f"{where}: YAML nested too deep to read") from None


def csv_rows(text: str, where: str | Path, delimiter: str = ",") -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of CSV ``text`` with a header, each with the line it ends on; a row the csv module
    refuses (a NUL byte, a field over its size limit) is a `UserError` naming the line, and so is a
    header that names one column twice (`csv.DictReader` would keep the last one's cells)."""
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise UserError(f"{where}:{reader.line_num}: not valid CSV ({exc})") from None
    # csv.DictReader keeps the last of two same-named columns, silently: refuse, naming both
    seen: dict[str, int] = {}
    for column, name in enumerate(header, 1):
        key = name.strip()
        if key and key in seen:
            raise UserError(f"{where}:{reader.line_num}: the header names column {key!r} twice (columns "
                            f"{seen[key]} and {column}); rename or remove one")
        seen.setdefault(key, column)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise UserError(f"{where}:{reader.line_num}: not valid CSV ({exc})") from None
        yield reader.line_num, row


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file; a line that is not JSON is a `UserError` naming file and line."""
    return list(iter_jsonl(path))


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """`read_jsonl` one record at a time: a file of a million samples is never held whole. These are
    robusteval's own files (samples.jsonl), where a NaN score may stand: read as written."""
    for number, line in jsonl_lines(path):
        yield parse_json(line, f"{path}:{number}", finite=False)


def jsonl_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSON Lines file with their line numbers, read one at a time (a file
    of a million samples is never held whole), each decoded as `decode_text` does (a BOM on the
    first accepted). Lines end at ``\\n`` only (see above)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                line = decode_text(raw, path, first_line=number)
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def slug(text: str, *, keep: str = "-_") -> str:
    """``text`` as a file-name stem (plots, per-model files): letters, digits and the characters in
    ``keep``; anything else becomes '_'. The one copy: report figures, per-model submission files and
    persona context names all use it (with their own ``keep``)."""
    return "".join(c if c.isalnum() or c in keep else "_" for c in text)
