"""Requests out to a batch file, answers back into the store: a run answered by an engine robusteval
does not drive (``vllm run-batch`` with no server, Ray Data across a cluster, a provider's batch API).

`robusteval run ... --export-requests FILE` runs the suite against a dry-run engine and writes every
request the store lacks as one line of the OpenAI batch input format: ``custom_id`` is the request's
cache key, chat requests go to ``/v1/chat/completions`` and log-likelihood requests to
``/v1/completions`` with echoed prompt log-probabilities, as `OpenAIBackend` would send them. Each
exported request is recorded (key, model fingerprint, request) in ``responses.exports.sqlite``
beside the store, so that `import_results` can check an output line against what was asked and store
its answer under the same key and fingerprint a live run would have used. The same ``run`` command
then finds every answer in the store and asks nothing.

Why a ledger and not the input file: the output file is all a batch engine gives back, and an answer
may only be stored with the request it answers (the store keeps both, checksummed). A line whose
``custom_id`` the ledger does not know, whose body is not a chat completion (or has no echoed
log-probabilities), or that carries an error, is counted with its file and line number and never
stored; the rest of the file is stored.

A suite that asks in stages (an oracle rating answers, the next turn of a conversation) exports
the stage it can reach; after the import, the same export writes the next stage, until nothing is
left to ask.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robusteval.engine.store import Store, StoreRow, cache_key
from robusteval.errors import BackendError, UserError
from robusteval.files import atomic_write_chunks
from robusteval.ledger import LEDGERS, Ledger, beside, sqlite_files
from robusteval.models.chat_format import chat_body, parse_chat_completion, parse_echo_loglik, plain_prompt
from robusteval.models.openai_batch import output_body
from robusteval.redact import redact
from robusteval.types import Completion, GenParams, Message, Request

CHAT_URL = "/v1/chat/completions"
COMPLETIONS_URL = "/v1/completions"


def ledger_path(store_path: Path | str) -> Path:
    """``responses.exports.sqlite`` beside ``responses.sqlite``."""
    return beside(store_path, "exports")


def export_target_problem(path: Path, store_path: Path, *, overwrite: bool) -> str | None:
    """Why ``--export-requests path`` must not be written (None: it may). Nothing an export writes replaces
    a store, a ledger or a file SQLite keeps beside one (whatever the flags), nor any other existing
    file but an earlier export's request file, unless ``overwrite``."""
    if path.is_dir():
        return "is a folder; name a .jsonl file"
    kept = [f for own in (store_path, *(beside(store_path, kind) for kind in LEDGERS)) for f in sqlite_files(own)]
    if path.resolve() in {f.resolve() for f in kept} or _sqlite_kept(path):
        return "is a response store or ledger (or a file SQLite keeps beside one); name a new .jsonl file"
    if path.exists() and not overwrite and not is_request_file(path):
        return ("exists and is not a request file an export wrote; name a new file, or add --overwrite to "
                "replace it")
    return None


def _sqlite_kept(path: Path) -> bool:
    """An SQLite database (by its header), or the -wal/-shm/-journal file beside one."""
    try:
        with path.open("rb") as f:
            if f.read(16) == b"SQLite format 3\x00":
                return True
    except OSError:
        pass
    return any(path.name.endswith(suffix) and path.with_name(path.name[:-len(suffix)]).is_file()
               for suffix in ("-wal", "-shm", "-journal"))


def is_request_file(path: Path) -> bool:
    """Whether ``path`` starts with a batch input line (as an export writes): an earlier export, not answers."""
    try:
        with path.open(encoding="utf-8") as f:
            line = json.loads(f.readline(1 << 22))
    except (OSError, ValueError):
        return False
    return isinstance(line, dict) and {"custom_id", "url", "body"} <= line.keys() and "response" not in line


@dataclass(frozen=True)
class Exported:
    """One request written to a batch file: what its answer must be stored with."""

    custom_id: str
    fingerprint: str
    request: Request
    run: str  # the command that exported it, said back on import
    model: str | None = None  # the model name its line's body asks for (None: exported by an earlier version)


def request_json(request: Request) -> str:
    return json.dumps({"messages": request.messages_as_dicts(), "params": request.params.as_dict(),
                       "sample": request.sample, "continuation": request.continuation, "prefix": request.prefix},
                      ensure_ascii=False, sort_keys=True)


def request_from_json(text: str) -> Request:
    data = json.loads(text)
    p = data["params"]
    params = GenParams(temperature=float(p["temperature"]), top_p=float(p["top_p"]), max_tokens=int(p["max_tokens"]),
                       seed=p["seed"], stop=tuple(p["stop"]), logprobs=bool(p["logprobs"]),
                       top_logprobs=int(p["top_logprobs"]))
    return Request(tuple(Message(m["role"], m["content"]) for m in data["messages"]), params,
                   int(data["sample"]), data["continuation"], data["prefix"])


def batch_line(custom_id: str, model_name: str, request: Request) -> dict[str, Any]:
    """One OpenAI batch input line (the shape ``vllm run-batch`` and the OpenAI Batch API accept)."""
    if request.continuation is None:
        return {"custom_id": custom_id, "method": "POST", "url": CHAT_URL,
                "body": {"model": model_name, **chat_body(request.messages, request.params)}}
    prompt = plain_prompt(request.messages) + request.prefix + request.continuation
    return {"custom_id": custom_id, "method": "POST", "url": COMPLETIONS_URL,
            "body": {"model": model_name, "prompt": prompt, "max_tokens": 0, "echo": True, "logprobs": 1,
                     "temperature": 0}}


class ExportLedger(Ledger):
    """The requests exported and not yet answered: a small SQLite file beside the response store.

    A request several exports asked (two runs sharing prompts) is one row of ``exported`` and one row
    of ``export_runs`` per command, so an import credits its answer to each command that asked it."""

    def __init__(self, path: Path | str):
        super().__init__(Path(path), """
            CREATE TABLE IF NOT EXISTS exported (custom_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
                request TEXT NOT NULL, run TEXT NOT NULL, exported_at REAL NOT NULL, model TEXT);
            CREATE TABLE IF NOT EXISTS export_runs (custom_id TEXT NOT NULL, run TEXT NOT NULL,
                PRIMARY KEY (custom_id, run));
        """, "export ledger")
        if not self._has_model():  # a ledger of an earlier version; checked again under the write lock,
            with self.transaction() as db:  # since another process may be adding it too
                if not self._has_model():
                    db.execute("ALTER TABLE exported ADD COLUMN model TEXT")

    def _has_model(self) -> bool:
        return "model" in {r[1] for r in self.query("PRAGMA table_info(exported)")}

    def record(self, items: Iterable[Exported]) -> None:
        now = time.time()
        items = list(items)
        with self.transaction() as db:
            rows = [(e.custom_id, redact(e.fingerprint, patterns=False), request_json(e.request),
                     redact(e.run, patterns=False), now, e.model) for e in items]  # no key on disk
            db.executemany("INSERT INTO exported (custom_id, fingerprint, request, run, exported_at, model) "
                           "VALUES (?,?,?,?,?,?) ON CONFLICT (custom_id) DO UPDATE SET "
                           "exported_at = excluded.exported_at, model = excluded.model", rows)
            db.executemany("INSERT OR IGNORE INTO export_runs VALUES (?,?)", [(r[0], r[3]) for r in rows])

    def lookup(self, custom_ids: list[str]) -> dict[str, Exported]:
        rows = self.rows_for("SELECT custom_id, fingerprint, request, run, model FROM exported "
                             "WHERE custom_id IN ({})", custom_ids)
        return {c: Exported(c, f, request_from_json(r), run, model) for c, f, r, run, model in rows}

    def runs_of(self, custom_ids: list[str]) -> dict[str, list[str]]:
        """custom_id -> every command that exported it (the first one first)."""
        runs: dict[str, list[str]] = {}
        for custom_id, run, _ in self.rows_for(f"{ASKED} WHERE custom_id IN ({{}}) ORDER BY first", custom_ids):
            runs.setdefault(custom_id, []).append(run)
        return runs

    def forget(self, custom_ids: Iterable[str]) -> None:
        ids = [(c,) for c in custom_ids]
        with self.transaction() as db:
            db.executemany("DELETE FROM exported WHERE custom_id = ?", ids)
            db.executemany("DELETE FROM export_runs WHERE custom_id = ?", ids)

    def forget_answered(self, store: Store) -> None:
        """Forget every exported request the store answers, however it was answered (this import, another
        one, a live run of the same spec): what is left is what still waits."""
        ids = [c for (c,) in self.query("SELECT custom_id FROM exported")]
        self.forget(store.holds(ids))

    def pending(self) -> dict[str, int]:
        """run -> exported requests still waiting for their answer."""
        return dict(self.query(f"SELECT run, COUNT(*) FROM ({ASKED}) GROUP BY run ORDER BY MIN(first)"))


# (custom_id, run, first) for each command that exported a request still in the ledger; `first`: 0 for the
# command that exported it first (`exported.run`: also a ledger of an earlier version, without export_runs)
ASKED = ("SELECT * FROM (SELECT custom_id, run, 0 AS first FROM exported UNION SELECT r.custom_id, r.run, 1 "
         "FROM export_runs r JOIN exported e ON e.custom_id = r.custom_id AND e.run != r.run)")


@dataclass(frozen=True)
class ExportSummary:
    path: Path
    requests: dict[str, int]  # model label -> requests written
    loglik: int  # of them, log-likelihood requests (to /v1/completions)
    names: dict[str, str] = field(default_factory=dict)  # model label -> the model name each line's body sends


def write_export(path: Path, planned: dict[str, dict[str, Request]], models: dict[str, tuple[str, str]],
                 store_path: Path, run: str) -> ExportSummary:
    """Write ``planned`` (model label -> cache key -> request, from a dry run) to ``path`` as batch input
    lines and record them in the export ledger. ``models``: label -> (fingerprint, model name sent in
    the body). The file is written atomically; the ledger is written first, so an answer to any line of
    the file can be imported."""
    lines: list[str] = []
    items: list[Exported] = []
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    loglik = 0
    for label, requests in planned.items():
        fingerprint, name = models[label]
        for key, request in requests.items():
            items.append(Exported(key, fingerprint, request, run, name))
            lines.append(json.dumps(batch_line(key, name, request), ensure_ascii=False))
            loglik += request.continuation is not None
        counts[label] = len(requests)
        if requests:
            names[label] = name
    ledger = ExportLedger(ledger_path(store_path))
    store = Store(store_path, readonly=True)
    try:
        ledger.forget_answered(store)  # answered meanwhile: waits no more
        ledger.record(items)
    finally:
        store.close()
        ledger.close()
    atomic_write_chunks(path, (line + "\n" for line in lines))
    return ExportSummary(path, counts, loglik, names)


@dataclass
class ImportReport:
    """What `import_results` did with each line of the output files."""

    answers: int = 0  # answers stored
    stored: Counter[str] = field(default_factory=Counter)  # run -> of them, answers to its requests
    already: int = 0  # lines whose answer the store held already (imported before, or asked live)
    bad: list[str] = field(default_factory=list)  # "file:line: why", one per line not stored
    unknown: int = 0  # of the bad lines, those whose custom_id no export recorded
    waiting: dict[str, int] = field(default_factory=dict)  # run -> exported requests still unanswered
    given: dict[str, str] = field(default_factory=dict, repr=False)  # custom_id -> "file:line" that answered it

    @property
    def lines_bad(self) -> int:
        return len(self.bad)


def completion_of(line: object, exported: Exported) -> Completion:
    """The answer one output line gives to ``exported``, checked as the backend boundary checks a
    live reply, and given by the model it was exported for; anything else is a BackendError saying why."""
    if not isinstance(line, dict):
        raise BackendError(f"not a JSON object but a JSON {type(line).__name__}")
    if "response" not in line and "error" not in line and "body" in line:
        raise BackendError("a request line (as --export-requests writes), not an answer: import the file your "
                           "engine wrote")
    body = output_body(line, status_if_absent=200)  # vLLM and Ray lines may leave the status out
    if isinstance(body, dict) and exported.model is not None and "model" in body \
            and not same_model(body["model"], exported.model):
        raise BackendError(f"answered by model {str(body['model'])[:80]!r}, not by {exported.model!r} it was "
                           "exported for")
    if exported.request.continuation is None:
        return parse_chat_completion(body, source="batch output")
    request = exported.request
    return parse_echo_loglik(body, len(plain_prompt(request.messages) + request.prefix), source="batch output")


def same_model(answered: object, exported: str) -> bool:
    """Whether a body's ``model`` names the exported model: the same name, or a dated snapshot of it (a
    provider answers ``gpt-4o-mini`` as ``gpt-4o-mini-2024-07-18``)."""
    if not isinstance(answered, str):
        return False
    return answered == exported or (answered.startswith(exported + "-")
                                    and re.fullmatch(r"[0-9][0-9-]*", answered[len(exported) + 1:]) is not None)


def import_results(paths: list[Path], store: Store) -> ImportReport:
    """Store every valid answer of the batch output files ``paths`` under its exported request's key."""
    report = ImportReport()
    ledger = ExportLedger(ledger_path(store.path))
    try:
        for path in paths:
            _import_file(path, store, ledger, report)
        ledger.forget_answered(store)
        report.waiting = ledger.pending()
    finally:
        ledger.close()
    return report


def _import_file(path: Path, store: Store, ledger: ExportLedger, report: ImportReport, chunk: int = 2000) -> None:
    try:  # a gzip-compressed output (answers.jsonl.gz, as engines often write) is read as it is
        with path.open("rb") as probe:
            packed = probe.read(2) == b"\x1f\x8b"
        handle = (gzip.open(path, "rt", encoding="utf-8-sig")  # noqa: SIM115 (closed by the `with` below)
                  if packed else path.open(encoding="utf-8-sig"))
    except OSError as exc:
        raise UserError(f"import-results: cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        pending: list[tuple[int, object, str]] = []
        try:
            for number, text in enumerate(handle, 1):
                if not text.strip():
                    continue
                try:
                    line = json.loads(text)
                except ValueError as exc:
                    report.bad.append(f"{path}:{number}: not JSON ({exc})")
                    continue
                custom_id = line.get("custom_id") if isinstance(line, dict) else None
                if not isinstance(custom_id, str):
                    report.bad.append(f"{path}:{number}: no custom_id")
                    continue
                pending.append((number, line, custom_id))
                if len(pending) >= chunk:
                    _store_chunk(path, pending, store, ledger, report)
                    pending = []
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream: keep what was read
            _store_chunk(path, pending, store, ledger, report)
            raise UserError(f"import-results: {path}: {exc}; the lines read before it were stored") from None
        except UnicodeDecodeError as exc:
            raise UserError(f"import-results: {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                            "give the batch output file (JSONL)") from None
        _store_chunk(path, pending, store, ledger, report)


def _store_chunk(path: Path, pending: list[tuple[int, object, str]], store: Store, ledger: ExportLedger,
                 report: ImportReport) -> None:
    """Store the answers of ``pending`` lines: each custom_id once (the first line that answers it), for
    the model it was exported for, never over an answer the store holds; every other line is counted."""
    known = ledger.lookup([custom_id for _, _, custom_id in pending])
    rows: list[StoreRow] = []
    numbers: dict[str, int] = {}
    for number, line, custom_id in pending:
        if (first := report.given.get(custom_id)) is not None:
            report.bad.append(f"{path}:{number}: custom_id {custom_id[:16]}... answered again (first by {first}); "
                              "an answers file gives each request once")
            continue
        exported = known.get(custom_id)
        if exported is None and store.get(custom_id) is not None:  # imported before (the ledger forgot it)
            report.already += 1
            report.given[custom_id] = f"{path}:{number}"
            continue
        if exported is None:
            report.unknown += 1
            report.bad.append(f"{path}:{number}: custom_id {custom_id[:16]}... was not exported from this store "
                              "(another --cache-dir?)")
            continue
        if cache_key(exported.fingerprint, exported.request) != custom_id:  # the ledger row was altered
            report.bad.append(f"{path}:{number}: custom_id does not match its recorded request")
            continue
        try:
            completion = completion_of(line, exported)
        except BackendError as exc:
            report.bad.append(f"{path}:{number}: {exc}")
            continue
        report.given[custom_id] = f"{path}:{number}"
        numbers[custom_id] = number
        rows.append(StoreRow(custom_id, exported.fingerprint, exported.request, completion, 0.0))
    if not rows:
        return
    written = store.put_many(rows)  # durable before the ledger forgets them
    report.already += len(written.same)
    for custom_id in written.conflicts:  # stored meanwhile (a live run), or imported before with another text
        report.bad.append(f"{path}:{numbers[custom_id]}: the store holds another answer to this request "
                          "(kept; asked live or imported before)")
    report.answers += len(written.stored)
    runs = ledger.runs_of(list(written.stored))
    report.stored.update(run for custom_id in written.stored for run in runs.get(custom_id, ()))
    ledger.forget(written.stored + written.same + written.conflicts)
