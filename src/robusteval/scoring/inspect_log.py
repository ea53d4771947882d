"""inspect_ai evaluation logs, as ``inspect eval`` writes them (``--log-format eval``: a zip of
``header.json`` and one ``samples/<id>_epoch_<n>.json`` per sample; ``--log-format json``: one object
with ``eval``, ``results`` and ``samples``), read with the standard library: inspect_ai is not needed.

A multiple-choice sample (``choices`` and a one-letter ``target``, as the ``multiple_choice`` solver
and ``choice`` scorer use them) is one reply: the item is the sample (its id, input, choices and
target), the family the log's task, one variant ``base`` (the options as listed: where the solver
shuffled them, inspect rewrites a read reply and the prompt back to the listed order), and the epoch
is the sample index (epoch 1 -> 0), so ``score`` gives the accuracy and the consistency across
epochs. Samples that are not single-answer multiple choice are counted in the data audit, with the
log's own figures (``results.scores``) as a note beside.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robusteval.data.audit import DataAudit, SourceAudit
from robusteval.data.mcq import Unusable, parse_row
from robusteval.errors import UserError
from robusteval.files import decode_text, parse_json, read_text
from robusteval.scoring.replies import ITEM_DIFFERS, MAX_ZIP_MEMBER, Placed, identity_variant, sample_index
from robusteval.types import Item, Variant

READER = "inspect"  # the reader an inspect log is read with unless --reader says otherwise
VARIANT = "base"
NOT_MCQ = "no 'choices' (not a multiple-choice sample)"
MANY_TARGETS = "more than one correct choice in 'target' (a multiple-answer question; robusteval scores one gold)"
BAD_TARGET = "'target' names no one of the sample's choices"
NO_INPUT = "no question text in 'input'"
NO_SAMPLES = "the log holds no samples (written with --no-log-samples?): nothing to score"
SAMPLE_ERROR = "the sample ended in an error (no reply): counted failed"
# how ``inspect eval --log-format json`` begins a log: {"version": N, "status": ...
JSON_LOG = re.compile(rb'^(?:\xef\xbb\xbf)?\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
ZIP_ZSTANDARD = 93  # the zip method number of zstd (APPNOTE 4.4.5)
SAMPLE_MEMBER = re.compile(r"^samples/.+_epoch_\d+\.json$")


def is_inspect_log(path: Path) -> bool:
    """An ``.eval`` file, or a ``.json`` that begins as inspect's JSON logs do."""
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return True
    if suffix != ".json":
        return False
    try:
        with path.open("rb") as f:
            return bool(JSON_LOG.match(f.read(512)))
    except OSError:  # unreadable: the reader that opens it says so, in one line
        return False


def read_inspect_log(path: Path, audit: DataAudit, model: str | None) -> Iterator[Placed]:
    """Each multiple-choice sample of the log at ``path`` as a reply (see the module's docstring);
    ``model`` names the model in the results (default: the log's ``eval.model``)."""
    header, samples = _eval_log(path) if path.suffix.lower() == ".eval" else _json_log(path)
    spec = _object(header.get("eval"), path, "'eval'")
    task, label = str(spec.get("task") or path.stem), model or str(spec.get("model") or path.stem)
    source = audit.source(str(path))
    source.note(_summary(header, spec, task))
    if not samples:
        source.note(NO_SAMPLES)
    dataset = spec["dataset"] if isinstance(spec.get("dataset"), dict) else {}
    order = {str(sid): n for n, sid in enumerate(dataset.get("sample_ids") or [])}
    samples.sort(key=lambda s: (s[1].get("epoch") if isinstance(s[1].get("epoch"), int) else 0,
                                order.get(str(s[1].get("id")), len(order)), str(s[1].get("id"))))
    items: dict[str, Item] = {}
    for _, sample in samples:
        source.rows_read += 1
        where = f"sample {sample.get('id')} epoch {sample.get('epoch')}"
        placed = _placed(sample, where, f"{path} {where}", task, items, source)
        if placed is not None:
            source.rows_used += 1
            yield Placed(label, placed[0], placed[1], placed[2], placed[3], where, str(path))


def _placed(sample: dict[str, Any], where: str, at: str, task: str, items: dict[str, Item],
            source: SourceAudit) -> tuple[Item, Variant, str | None, int] | None:
    """(item, variant, reply, sample index) of one sample, or None where it is left out (counted)."""
    choices = sample.get("choices")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        source.leave_out(NOT_MCQ, where)
        return None
    gold = _target(sample.get("target"), len(choices), source, where)
    question = _text(sample.get("input"))
    if gold is None:
        return None
    if not question:
        source.leave_out(NO_INPUT, where)
        return None
    metadata = sample["metadata"] if isinstance(sample.get("metadata"), dict) else {}
    category = next((str(metadata[k]) for k in ("category", "subject") if isinstance(metadata.get(k), str)), None)
    row = {"id": str(sample.get("id")), "question": question, "options": choices, "answer_index": gold,
           **({"category": category} if category else {})}
    try:
        parsed = parse_row(row, at, f"{task}-{sample.get('id')}", min_options=1)
    except Unusable as exc:
        source.leave_out(exc.reason, where)
        return None
    if parsed.item.id not in items:  # the loader's anomalies (repeated option texts...), once per question
        for kind in parsed.anomalies:
            source.anomaly(kind, where)
    item = items.setdefault(parsed.item.id, parsed.item)
    if (item.options, item.answer) != (parsed.item.options, parsed.item.answer):
        source.anomaly(ITEM_DIFFERS, where)
    epoch = sample.get("epoch", 1)
    index = sample_index(epoch - 1 if isinstance(epoch, int) and not isinstance(epoch, bool) else epoch, at)
    if sample.get("error"):
        source.anomaly(SAMPLE_ERROR, where)
        reply = None
    else:
        reply = _reply(sample.get("output"))
    variant = identity_variant(item, task, VARIANT, _prompt(sample.get("messages")))
    return item, variant, reply, index


def _target(target: Any, n: int, source: SourceAudit, where: str) -> int | None:
    """The gold option of a ``target`` as the ``choice`` scorer reads it (each letter of each target
    string, a number as one token: ``answer_index``), or None, counted, where it names not exactly one."""
    targets = [target] if isinstance(target, str) else target if isinstance(target, list) else []
    tokens: list[str] = []
    for value in targets:
        for token in str(value).replace(",", " ").split():
            tokens += [token] if token.isnumeric() else list(token)
    if len(tokens) > 1:
        source.leave_out(MANY_TARGETS, where)
        return None
    token = tokens[0].upper() if tokens else ""
    # inspect's answer_index: a letter by its place in the alphabet, a number N as option 25 + N
    index = 25 + int(token) if token.isnumeric() else ord(token) - ord("A") if token.isalpha() else -1
    if not 0 <= index < n:
        source.leave_out(BAD_TARGET, where)
        return None
    return index


def _text(content: Any) -> str:
    """The text of a message's content, or of a sample's input (a string, or chat messages: the last
    user message)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(m, dict) and "role" in m for m in content):
        users = [m for m in content if m.get("role") == "user"]
        return _text(users[-1].get("content")) if users else ""
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _reply(output: Any) -> str | None:
    """The model's reply: ``output.completion``, else the first choice's message text; None where the
    sample has no output (never scored as a wrong answer)."""
    if not isinstance(output, dict):
        return None
    if isinstance(output.get("completion"), str):
        return str(output["completion"])
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return _text(message.get("content"))
    return None


def _prompt(messages: Any) -> str:
    """The question as the model was asked it: the sample's first user message."""
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, dict) and m.get("role") == "user":
                return _text(m.get("content"))
    return ""


def _summary(header: dict[str, Any], spec: dict[str, Any], task: str) -> str:
    """One audit line: the log's task, model, epochs and status, and inspect's own figures with why
    one may differ from robusteval's (epochs reduced otherwise than by their mean, another scorer
    than ``choice``, a log that did not finish)."""
    config = spec["config"] if isinstance(spec.get("config"), dict) else {}
    epochs = config.get("epochs") or 1
    line = f"inspect_ai log: task {task}, model {spec.get('model')}, {epochs} epoch(s), status {header.get('status')}"
    if header.get("status") != "success":
        line += " (not finished: the samples it holds are read)"
    results = header["results"] if isinstance(header.get("results"), dict) else {}
    figures, why = [], []
    for score in results.get("scores") or []:
        metrics = score.get("metrics") if isinstance(score, dict) else None
        if not isinstance(metrics, dict):
            continue
        reducer = score.get("reducer") or "mean"
        shown = [f"{score.get('name')} {name} {m['value']:.4f}" for name, m in metrics.items()
                 if isinstance(m, dict) and isinstance(m.get("value"), (int, float))]
        if reducer != "mean" and epochs != 1:
            shown = [f"{f} (epochs reduced by {reducer})" for f in shown]
            why.append(f"inspect reduces each question's {epochs} epochs by {reducer} before its accuracy; "
                       "robusteval's averages every epoch's reply")
        if score.get("scorer", score.get("name")) != "choice":
            why.append(f"scorer {score.get('scorer', score.get('name'))} is not inspect's choice scorer, whose "
                       "reading the inspect reader reproduces")
        figures += shown
    if not figures:
        return line + "; no results in the log"
    return line + f"; inspect's own figures: {', '.join(figures)}" + "".join(f"; {w}" for w in dict.fromkeys(why))


def _object(value: Any, path: Path, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{path}: {what} is not an object; expected an inspect_ai log as `inspect eval` writes it")
    return value


def _json_log(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    log = _object(parse_json(read_text(path), path, finite=False), path, "the log")
    samples = log.get("samples") or []
    if not isinstance(samples, list):
        raise UserError(f"{path}: 'samples' is not a list; expected an inspect_ai log as `inspect eval` writes it")
    return log, [(f"samples[{i}]", _object(s, path, f"samples[{i}]")) for i, s in enumerate(samples)]


def _eval_log(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """An ``.eval`` zip: ``header.json`` (or, for a log still being written, ``_journal/start.json``)
    and every ``samples/*_epoch_N.json``."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            head = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
            if head is None:
                raise UserError(f"{path}: no header.json in the zip; expected an inspect_ai .eval log")
            header = _object(_member(z, head, path), path, head)
            if head != "header.json":
                header = {**header, "status": "started"}
            samples = [(n, _object(_member(z, n, path), path, n)) for n in names if SAMPLE_MEMBER.match(n)]
    except zipfile.BadZipFile:
        raise UserError(f"{path}: not a zip file (an inspect_ai .eval log is one)") from None
    return header, samples


def _member(z: zipfile.ZipFile, name: str, path: Path) -> Any:
    info = z.getinfo(name)
    if info.file_size > MAX_ZIP_MEMBER:
        raise UserError(f"{path}: {name} unpacks to more than {MAX_ZIP_MEMBER:,} bytes; not read")
    try:
        with z.open(info) as member:
            raw = member.read(MAX_ZIP_MEMBER + 1)
    except NotImplementedError:  # zstd before Python 3.14: inspect_ai writes .eval members so
        if info.compress_type != ZIP_ZSTANDARD:
            raise UserError(f"{path}: {name} is compressed with zip method {info.compress_type}, which "
                            "cannot be read here") from None
        raw = _unzstd(_stored_bytes(path, info), info, path)
    if len(raw) > MAX_ZIP_MEMBER:
        raise UserError(f"{path}: {name} unpacks to more than {MAX_ZIP_MEMBER:,} bytes; not read")
    where = f"{path}:{name}"
    return parse_json(decode_text(raw, where), where, finite=False)


def _stored_bytes(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A member's compressed bytes, after its local header (zip's layout: 30 bytes, then the name and
    the extra field, whose lengths are at bytes 26-29)."""
    with path.open("rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise UserError(f"{path}: {info.filename}: no zip entry where the index puts it (a damaged file)")
        name_length, extra_length = struct.unpack("<HH", head[26:30])
        f.seek(info.header_offset + 30 + name_length + extra_length)
        return f.read(info.compress_size)


def _unzstd(data: bytes, info: zipfile.ZipInfo, path: Path) -> bytes:
    """A zstd member unpacked by ``zstandard`` (``pip install robusteval[inspect]``), else pyarrow's
    codec; its CRC checked as zipfile checks it."""
    try:
        import zstandard
    except ImportError:
        zstandard = None
    # pyarrow's ArrowInvalid is a ValueError
    errors: tuple[type[Exception], ...] = (zstandard.ZstdError,) if zstandard is not None else (ValueError,)
    try:
        if zstandard is not None:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
                raw = reader.read(MAX_ZIP_MEMBER + 1)
        else:
            raw = _pyarrow_unzstd(data, info.file_size, path)
    except errors as exc:
        raise UserError(f"{path}: {info.filename}: not valid zstd ({exc})") from None
    if zlib.crc32(raw) != info.CRC:
        raise UserError(f"{path}: {info.filename}: its unpacked bytes fail the zip's CRC check (a damaged file)")
    return raw


def _pyarrow_unzstd(data: bytes, size: int, path: Path) -> bytes:
    try:
        import pyarrow as pa
    except ImportError:
        raise UserError(f"{path}: this .eval log is zstd-compressed (as inspect_ai writes them) and neither "
                        "zstandard nor pyarrow is installed: `pip install zstandard` (robusteval[inspect]), or "
                        "convert it with `inspect log convert --to json`") from None
    return bytes(pa.decompress(data, decompressed_size=size, codec="zstd", asbytes=True))


__all__ = ["READER", "is_inspect_log", "read_inspect_log"]
