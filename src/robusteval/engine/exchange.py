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
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robusteval.engine.store import Store, StoreRow, cache_key
from robusteval.errors import BackendError, UserError
from robusteval.files import atomic_write_chunks
from robusteval.ledger import Ledger
from robusteval.models.chat_format import chat_body, parse_chat_completion, parse_echo_loglik, plain_prompt
from robusteval.models.openai_batch import output_body
from robusteval.redact import redact
from robusteval.types import Completion, GenParams, Message, Request

CHAT_URL = "/v1/chat/completions"
COMPLETIONS_URL = "/v1/completions"


def ledger_path(store_path: Path | str) -> Path:
    """``responses.exports.sqlite`` beside ``responses.sqlite``."""
    store_path = Path(store_path)
    return store_path.with_name(store_path.stem + ".exports.sqlite")


@dataclass(frozen=True)
class Exported:
    """One request written to a batch file: what its answer must be stored with."""

    custom_id: str
    fingerprint: str
    request: Request
    run: str  # the command that exported it, said back on import


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
    """The requests exported and not yet imported: a small SQLite file beside the response store."""

    def __init__(self, path: Path | str):
        super().__init__(Path(path), """
            CREATE TABLE IF NOT EXISTS exported (custom_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
                request TEXT NOT NULL, run TEXT NOT NULL, exported_at REAL NOT NULL);
        """, "export ledger")

    def record(self, items: Iterable[Exported]) -> None:
        now = time.time()
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO exported VALUES (?,?,?,?,?)",
                           [(e.custom_id, redact(e.fingerprint, patterns=False), request_json(e.request),
                             redact(e.run, patterns=False), now) for e in items])  # no key on disk

    def lookup(self, custom_ids: list[str]) -> dict[str, Exported]:
        rows = self.rows_for("SELECT custom_id, fingerprint, request, run FROM exported WHERE custom_id IN ({})",
                             custom_ids)
        return {c: Exported(c, f, request_from_json(r), run) for c, f, r, run in rows}

    def forget(self, custom_ids: Iterable[str]) -> None:
        with self.transaction() as db:
            db.executemany("DELETE FROM exported WHERE custom_id = ?", [(c,) for c in custom_ids])

    def pending(self) -> dict[str, int]:
        """run -> exported requests still waiting for their answer."""
        return dict(self.query("SELECT run, COUNT(*) FROM exported GROUP BY run"))


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
            items.append(Exported(key, fingerprint, request, run))
            lines.append(json.dumps(batch_line(key, name, request), ensure_ascii=False))
            loglik += request.continuation is not None
        counts[label] = len(requests)
        if requests:
            names[label] = name
    ledger = ExportLedger(ledger_path(store_path))
    try:
        ledger.record(items)
    finally:
        ledger.close()
    atomic_write_chunks(path, (line + "\n" for line in lines))
    return ExportSummary(path, counts, loglik, names)


@dataclass
class ImportReport:
    """What `import_results` did with each line of the output files."""

    stored: Counter[str] = field(default_factory=Counter)  # run -> answers stored
    already: int = 0  # lines whose answer the store held already (imported before, or asked live)
    bad: list[str] = field(default_factory=list)  # "file:line: why", one per line not stored
    unknown: int = 0  # of the bad lines, those whose custom_id no export recorded
    waiting: dict[str, int] = field(default_factory=dict)  # run -> exported requests still unanswered

    @property
    def lines_bad(self) -> int:
        return len(self.bad)


def completion_of(line: object, exported: Exported) -> Completion:
    """The answer one output line gives to ``exported``, checked as the backend boundary checks a
    live reply; anything else is a BackendError saying why."""
    if not isinstance(line, dict):
        raise BackendError(f"not a JSON object but a JSON {type(line).__name__}")
    body = output_body(line, status_if_absent=200)  # vLLM and Ray lines may leave the status out
    if exported.request.continuation is None:
        return parse_chat_completion(body, source="batch output")
    request = exported.request
    return parse_echo_loglik(body, len(plain_prompt(request.messages) + request.prefix), source="batch output")


def import_results(paths: list[Path], store: Store) -> ImportReport:
    """Store every valid answer of the batch output files ``paths`` under its exported request's key."""
    report = ImportReport()
    ledger = ExportLedger(ledger_path(store.path))
    try:
        for path in paths:
            _import_file(path, store, ledger, report)
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
    known = ledger.lookup([custom_id for _, _, custom_id in pending])
    rows: list[StoreRow] = []
    runs: list[str] = []
    for number, line, custom_id in pending:
        exported = known.get(custom_id)
        if exported is None and store.get(custom_id) is not None:  # imported before (the ledger forgot it)
            report.already += 1
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
        if store.get(custom_id) is not None:
            report.already += 1
        else:
            rows.append(StoreRow(custom_id, exported.fingerprint, exported.request, completion, 0.0))
            runs.append(exported.run)
    if rows:
        store.put_many(rows)  # durable before the ledger forgets them
        report.stored.update(runs)
    ledger.forget(row.key for row in rows)
