"""The OpenAI Batch API as a backend: the same requests, answered within 24 hours at half the price.

Spec: ``openai:NAME?batch=1`` (with ``base_url``, ``api_key_env``, ``timeout`` as for ``openai``), and
``batch_window=S`` (default 2), ``batch_poll=S`` (default 30).

How a suite's requests become batches, without the suite knowing: the engine hands every request to
the backend at once (a `DeferredBackend`: no concurrency cap below a batch's 50,000, no per-attempt
timeout). ``chat`` only queues the request and waits; a collector submits the queue as one batch
once no new request has arrived for ``batch_window`` seconds (or it holds 50,000). A one-stage suite
(mcq) is then one batch; a multi-stage one (an oracle rating answers, the next turn of a
conversation) is one batch per stage, each submitted when the previous one's answers have let the
suite ask its next requests.

A batch: upload the requests as JSONL (``POST /files``, purpose "batch"), create the batch (``POST
/batches``), poll ``GET /batches/{id}`` every ``batch_poll`` seconds, download the output file and
map each line back to its request by ``custom_id``; a line with an error, or a request the output
lacks (a batch that failed, expired or was cancelled), fails that request with a `BackendError`, and
the engine's retry sends it again in a later batch.

Money is spent once. Each request's ``custom_id`` is a hash of the endpoint and the request body
(with an occurrence number for identical bodies, which are distinct samples), and ``custom_id ->
batch`` is written to ``responses.batches.sqlite`` beside the response store BEFORE the batch is
created: first under a mark (a random id, sent as the batch's ``metadata``, which the server keeps),
then, once ``POST /batches`` answers, under the batch id. A process that exits while a batch is
pending (Ctrl-C, SIGKILL, a job's time limit) loses nothing: the rerun asks the same requests, finds
them in that table and polls the pending batch instead of submitting them again; requests found under
a mark (a creation that failed ambiguously: a 500, a timeout, a kill) are looked for by listing ``GET
/batches`` and submitted again only if no batch carries their mark. A request is forgotten only
AFTER the engine has committed its answer to the store (`committed`), or when its line failed (it is
then asked again in a new batch); a batch the server no longer knows (404) is dropped with one
message and its requests are asked again.

Cost: the engine charges ``price_factor`` = 0.5 of ``--price-in``/``--price-out``, in the usage and
in ``--estimate``. The fingerprint is the ``openai`` backend's for the same URL and model: a model
answers the same through either door, so both share one cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from robusteval.errors import BackendError, UserError
from robusteval.ledger import Ledger
from robusteval.models.chat_format import chat_body, parse_chat_completion
from robusteval.models.openai_compat import RETRYABLE_STATUS, OpenAIBackend
from robusteval.types import Completion, GenParams, Message

if TYPE_CHECKING:  # spec.load_backend imports the backends
    from robusteval.models.spec import ModelSpec

BATCH_LIMIT = 50_000  # OpenAI's most requests in one batch
ENDPOINT = "/v1/chat/completions"
DUPLICATE = "duplicate lines"  # `_lines`: how many output lines gave one custom_id
DONE = ("completed", "failed", "expired", "cancelled")
LIST_PAGES = 50  # pages of GET /batches searched for a mark (100 batches each, newest first)
MARK = "mark:"  # the ledger's batch id for a batch whose creation is not confirmed: "mark:" + its metadata mark
MARK_KEY = "robusteval_mark"  # the metadata key that carries it
POLL_FAILURES = 10  # consecutive failed status requests before the waiting requests fail (the batch is kept)
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
log = logging.getLogger(__name__)


def batch_requested(spec: ModelSpec) -> bool:
    """Whether ``batch=`` in an openai spec asks for the Batch API."""
    value = spec.option("batch", "0").strip().lower()
    if value not in TRUE + FALSE:
        raise UserError(f"--model {spec.label!r}: batch={value!r} is not a yes or no; write batch=1 or batch=0")
    return value in TRUE


class BatchLedger(Ledger):
    """Which batch each submitted request is in: a small SQLite file beside the response store."""

    def __init__(self, path: Path | str):
        super().__init__(path, """
            CREATE TABLE IF NOT EXISTS batches (batch_id TEXT PRIMARY KEY, base_url TEXT NOT NULL,
                requests INTEGER NOT NULL, created_at REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS batch_requests (custom_id TEXT PRIMARY KEY, batch_id TEXT NOT NULL);
        """, "batch ledger")

    def lookup(self, custom_ids: list[str]) -> dict[str, str]:
        return dict(self.rows_for("SELECT custom_id, batch_id FROM batch_requests WHERE custom_id IN ({})",
                                  custom_ids))

    def record(self, batch_id: str, base_url: str, custom_ids: list[str]) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO batches VALUES (?,?,?,?)",
                       (batch_id, base_url, len(custom_ids), time.time()))
            db.executemany("INSERT OR REPLACE INTO batch_requests VALUES (?,?)", [(c, batch_id) for c in custom_ids])

    def confirm(self, placeholder: str, batch_id: str) -> None:
        """The batch recorded under ``placeholder`` (a mark) exists on the server as ``batch_id``."""
        with self.transaction() as db:
            db.execute("UPDATE OR REPLACE batches SET batch_id = ? WHERE batch_id = ?", (batch_id, placeholder))
            db.execute("UPDATE OR REPLACE batch_requests SET batch_id = ? WHERE batch_id = ?", (batch_id, placeholder))

    def drop(self, batch_id: str) -> None:
        """A batch that does not exist (any more): its requests are no longer waited on."""
        with self.transaction() as db:
            db.execute("DELETE FROM batch_requests WHERE batch_id = ?", (batch_id,))
            db.execute("DELETE FROM batches WHERE batch_id = ?", (batch_id,))

    def created_at(self, batch_id: str) -> float | None:
        row = self.query("SELECT created_at FROM batches WHERE batch_id = ?", (batch_id,))
        return float(row[0][0]) if row else None

    def forget(self, batch_id: str, custom_ids: Iterable[str]) -> None:
        """Drop answered requests; a batch with none left is dropped too."""
        with self.transaction() as db:
            db.executemany("DELETE FROM batch_requests WHERE custom_id = ? AND batch_id = ?",
                           [(c, batch_id) for c in custom_ids])
            db.execute("DELETE FROM batches WHERE batch_id = ? AND NOT EXISTS "
                       "(SELECT 1 FROM batch_requests WHERE batch_id = ?)", (batch_id, batch_id))

    def pending(self) -> dict[str, int]:
        """batch id -> requests still waiting for their answer."""
        return dict(self.query("SELECT batch_id, COUNT(*) FROM batch_requests GROUP BY batch_id"))


@dataclass
class _Waiting:
    custom_id: str
    body: dict[str, Any]
    future: asyncio.Future[Completion]


@dataclass
class OpenAIBatchBackend:
    api: OpenAIBackend
    window_s: float = 2.0
    poll_s: float = 30.0
    max_batch: int = BATCH_LIMIT
    deferred = True
    price_factor = 0.5
    window_holds_reply = True  # the Batch API checks each line as its chat endpoint does
    ledger_path: Path | None = None
    _queue: list[_Waiting] = field(default_factory=list)
    _arrived: int = 0
    _outstanding: set[str] = field(default_factory=set)
    _collector: asyncio.Task[None] | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _watched: dict[str, list[_Waiting]] = field(default_factory=dict)
    _ledger: BatchLedger | None = None
    # answers handed to the engine and not yet committed: id(completion) -> (completion, batch id, custom_id)
    _delivered: dict[int, tuple[Completion, str, str]] = field(default_factory=dict)
    _committed: dict[str, list[str]] = field(default_factory=dict)  # batch id -> custom_ids to forget

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIBatchBackend:
        if "," in spec.option("base_url", ""):
            raise UserError(f"--model {spec.label!r}: batch=1 sends batches to one endpoint; give one base_url")
        return cls(OpenAIBackend.from_spec(spec), window_s=spec.float_option("batch_window", 2.0),
                   poll_s=spec.float_option("batch_poll", 30.0))

    @property
    def fingerprint(self) -> str:
        return self.api.fingerprint

    @property
    def context_window(self) -> int | None:
        return self.api.context_window

    @property
    def max_concurrency(self) -> int:
        return self.max_batch

    def attach_store(self, store_path: Path) -> None:
        self.ledger_path = Path(store_path).with_name(Path(store_path).stem + ".batches.sqlite")

    async def start(self) -> None:
        await self.api.start()
        self._ledger = BatchLedger(self.ledger_path if self.ledger_path is not None else ":memory:")

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        body = {"model": self.api.model, **chat_body(messages, params)}
        digest = hashlib.sha256(json.dumps([self.api.base_url, body], sort_keys=True).encode()).hexdigest()[:40]
        n = 0
        while f"{digest}-{n}" in self._outstanding:  # the same body asked again at once: another sample
            n += 1
        waiting = _Waiting(f"{digest}-{n}", body, asyncio.get_running_loop().create_future())
        self._outstanding.add(waiting.custom_id)
        self._queue.append(waiting)
        self._arrived += 1
        if self._collector is None:
            self._collector = self._spawn(self._collect())
        try:
            return await waiting.future
        finally:
            self._outstanding.discard(waiting.custom_id)

    def committed(self, answer: Completion) -> None:
        """The engine has committed ``answer`` (a completion `chat` returned) to the store: its request
        may now be forgotten (in one ledger write for all the answers committed in this turn)."""
        entry = self._delivered.pop(id(answer), None)
        if entry is None:
            return
        if not self._committed:
            asyncio.get_running_loop().call_soon(self._forget_committed)
        self._committed.setdefault(entry[1], []).append(entry[2])

    def _forget_committed(self) -> None:
        committed, self._committed = self._committed, {}
        if self._ledger is not None:
            for batch_id, custom_ids in committed.items():
                self._ledger.forget(batch_id, custom_ids)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _collect(self) -> None:
        """Submit the queue once it has been quiet for ``window_s`` (or is a full batch)."""
        try:
            while self._queue:
                seen = self._arrived
                await asyncio.sleep(self.window_s)
                if self._arrived != seen and len(self._queue) < self.max_batch:
                    continue  # still arriving
                group, self._queue = self._queue[:self.max_batch], self._queue[self.max_batch:]
                self._spawn(self._dispatch(group))
        finally:
            self._collector = None

    async def _dispatch(self, group: list[_Waiting]) -> None:
        """Requests already in a batch (submitted by an earlier process) wait for it; the rest form a new one."""
        assert self._ledger is not None  # started
        known = self._ledger.lookup([w.custom_id for w in group])
        by_batch: dict[str, list[_Waiting]] = {}
        for w in group:
            if w.custom_id in known:
                by_batch.setdefault(known[w.custom_id], []).append(w)
        new = [w for w in group if w.custom_id not in known]
        for placeholder in [b for b in by_batch if b.startswith(MARK)]:  # a creation not confirmed
            waiting = by_batch.pop(placeholder)
            try:
                found = await self._find(placeholder)
            except BackendError as exc:  # not submitted again while it is unknown: money is spent once
                _fail(waiting, BackendError(
                    f"an earlier submission of these requests failed without saying whether it created a batch, "
                    f"and listing the batches to find it (metadata {MARK_KEY}={placeholder.removeprefix(MARK)}) "
                    f"failed: {exc}; they are not submitted again until it is known (the ledger "
                    f"{self._ledger.path} keeps them)", retryable=exc.retryable))
                continue
            if found is None:  # never created: submitted now
                self._ledger.drop(placeholder)
                new.extend(waiting)
            else:
                self._ledger.confirm(placeholder, found)
                by_batch.setdefault(found, []).extend(waiting)
        if new:
            try:
                batch_id = await self._submit(new)
            except Exception as exc:  # every waiting request learns why, and is retried
                _fail(new, exc if isinstance(exc, BackendError) else BackendError(f"batch submission failed: {exc}"))
            else:
                by_batch.setdefault(batch_id, []).extend(new)
        for batch_id, waiting in by_batch.items():
            if batch_id in self._watched:
                self._watched[batch_id].extend(waiting)
            else:
                self._watched[batch_id] = waiting
                self._spawn(self._watch(batch_id))

    async def _submit(self, group: list[_Waiting]) -> str:
        assert self._ledger is not None  # started
        lines = "".join(json.dumps({"custom_id": w.custom_id, "method": "POST", "url": ENDPOINT, "body": w.body},
                                   ensure_ascii=False) + "\n" for w in group)
        form = aiohttp.MultipartWriter("form-data")
        form.append("batch").set_content_disposition("form-data", name="purpose")
        form.append(lines.encode(), {"Content-Type": "application/jsonl"}).set_content_disposition(
            "form-data", name="file", filename="robusteval-batch.jsonl")
        mark = uuid.uuid4().hex
        # recorded before anything is sent: a batch created behind a failure (a 500, a timeout, a kill)
        # is found again by its mark, never paid twice
        self._ledger.record(MARK + mark, self.api.base_url, [w.custom_id for w in group])
        try:
            uploaded = _json(await self.api.send("POST", "/files", multipart=form), "/files")
            batch = _json(await self.api.send("POST", "/batches", json_body={
                "input_file_id": uploaded["id"], "endpoint": ENDPOINT, "completion_window": "24h",
                "metadata": {"source": "robusteval", MARK_KEY: mark}}), "/batches")
        except BackendError as exc:
            if not exc.retryable:  # refused: no batch was created
                self._ledger.drop(MARK + mark)
            raise
        self._ledger.confirm(MARK + mark, batch["id"])
        return str(batch["id"])  # `_json` checked that it is a string

    async def _find(self, placeholder: str) -> str | None:
        """The id of the batch created with this mark, or None when the server lists none; a server
        that cannot list its batches raises (whether the batch exists is then unknown)."""
        assert self._ledger is not None  # started
        mark = placeholder.removeprefix(MARK)
        since = (self._ledger.created_at(placeholder) or 0.0) - 3600  # a server's clock may differ
        after = ""
        for _ in range(LIST_PAGES):
            page = _json(await self.api.send("GET", f"/batches?limit=100{after}"), "/batches")
            batches = [b for b in page.get("data") or [] if isinstance(b, dict)]
            for b in batches:
                if isinstance(b.get("metadata"), dict) and b["metadata"].get(MARK_KEY) == mark:
                    return str(b.get("id"))
            oldest = batches[-1].get("created_at") if batches else None
            if not page.get("has_more") or not batches or (isinstance(oldest, (int, float)) and oldest < since):
                return None
            after = f"&after={batches[-1].get('id')}"
        raise BackendError(f"no batch with this mark among the newest {LIST_PAGES * 100}", retryable=False)

    async def _watch(self, batch_id: str) -> None:
        """Poll until the batch is done, then hand each waiting request its answer or error."""
        failures = 0
        while True:
            try:
                batch = _json(await self.api.send("GET", f"/batches/{batch_id}"), f"/batches/{batch_id}")
                failures = 0
            except BackendError as exc:
                failures += 1
                if exc.status == 404:  # gone (expired from the server's memory, another account, a reset)
                    assert self._ledger is not None  # started
                    self._ledger.drop(batch_id)
                    waiting = self._watched.pop(batch_id, [])
                    log.warning("batch %s: the server no longer knows it (HTTP 404); dropped from the batch "
                                "ledger, its %d requests are asked again", batch_id, len(waiting))
                    _fail(waiting, BackendError(f"batch {batch_id}: the server no longer knows it (HTTP 404); "
                                                "its requests are asked again"))
                    return
                if not exc.retryable or failures >= POLL_FAILURES:
                    _fail(self._watched.pop(batch_id, []),
                          BackendError(f"batch {batch_id}: cannot learn its status ({exc}); it is kept, and a rerun "
                                       "picks it up"))
                    return
                await asyncio.sleep(self.poll_s)
                continue
            if batch.get("status") in DONE:
                break
            await asyncio.sleep(self.poll_s)
        try:  # OpenAI writes failed lines to the error file
            results = _lines([await self.api.send("GET", f"/files/{batch[key]}/content")
                              for key in ("output_file_id", "error_file_id") if batch.get(key)])
        except BackendError as exc:
            _fail(self._watched.pop(batch_id, []), BackendError(f"batch {batch_id}: cannot download its answers "
                                                                f"({exc}); a rerun tries again"))
            return
        waiting = [w for w in self._watched.pop(batch_id, []) if not w.future.done()]  # done: a caller gone
        assert self._ledger is not None  # started
        why = _batch_problem(batch)
        outcomes: list[tuple[_Waiting, Completion | BackendError]] = []
        for w in waiting:
            try:
                outcomes.append((w, _answer(results.get(w.custom_id), batch_id, batch.get("status"), why,
                                            self.api.base_url)))
            except BackendError as exc:
                outcomes.append((w, exc))
        # a failed line is forgotten now (it is asked again in a new batch); an answer only once committed
        self._ledger.forget(batch_id, [w.custom_id for w, o in outcomes if isinstance(o, BackendError)])
        for w, outcome in outcomes:
            if isinstance(outcome, BackendError):
                _fail([w], outcome)
            else:
                self._delivered[id(outcome)] = (outcome, batch_id, w.custom_id)
                w.future.set_result(outcome)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._ledger is not None:
            self._forget_committed()
            self._ledger.close()
            self._ledger = None
        await self.api.close()


def _fail(waiting: list[_Waiting], exc: BackendError) -> None:
    for w in waiting:
        if not w.future.done():
            w.future.set_exception(exc)
            w.future.exception()


def _json(raw: bytes, path: str) -> dict[str, Any]:
    try:
        out = json.loads(raw)
    except ValueError as exc:
        raise BackendError(f"bad response from {path}: invalid JSON ({exc})") from None
    if not isinstance(out, dict) or not isinstance(out.get("id", ""), str):
        raise BackendError(f"bad response from {path}: not an object with an id")
    return out


def _lines(files: Iterable[bytes]) -> dict[str, dict[str, Any]]:
    """custom_id -> result line of a batch's output and error files; unreadable lines are skipped (their
    requests then count as unanswered and are asked again); a custom_id given on several lines maps to
    a line that says so (`DUPLICATE`): none of its answers is used."""
    out: dict[str, dict[str, Any]] = {}
    for line in b"\n".join(files).decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
            custom_id = str(item["custom_id"])
        except (ValueError, KeyError, TypeError):
            continue
        out[custom_id] = {DUPLICATE: out[custom_id].get(DUPLICATE, 1) + 1} if custom_id in out else item
    return out


def _batch_problem(batch: dict[str, Any]) -> str:
    status = batch.get("status")
    errors = (batch.get("errors") or {}).get("data") if isinstance(batch.get("errors"), dict) else None
    detail = f": {errors[0].get('message')}" if errors and isinstance(errors[0], dict) else ""
    return f"the batch {status}{detail}"


def _answer(line: dict[str, Any] | None, batch_id: str, status: object, why: str, source: str) -> Completion:
    """The completion of one output line, or the BackendError that says why there is none."""
    if line is None:
        # "failed": the server refused the input file; the same file would be refused again
        raise BackendError(f"batch {batch_id} has no answer for this request ({why})",
                           retryable=status != "failed")
    if DUPLICATE in line:  # which one the model gave is unknown: neither is used, and asking again costs again
        raise BackendError(f"batch {batch_id} gave {line[DUPLICATE]} answers for this request (one custom_id "
                           "on several output lines); none is used", retryable=False)
    return parse_chat_completion(output_body(line, f"batch {batch_id}: "), source=source)


def output_body(line: dict[str, Any], prefix: str = "", *, status_if_absent: int | None = None) -> object:
    """The response body of one batch output line (OpenAI's or vLLM run-batch's shape); a line with an
    error, or an HTTP status of 400 or more, is a BackendError (retryable as the status says).
    ``status_if_absent``: the status of a line with a body and no ``status_code`` (None: an error)."""
    response = line.get("response")
    if not isinstance(response, dict):
        response = {}
    code = response.get("status_code", status_if_absent if "body" in response else None)
    if isinstance(code, str) and code.strip().isdecimal():  # "200": some servers write the status as text
        code = int(code)
    if not line.get("error") and code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        raise BackendError(f"{prefix}status_code {code!r} is not an HTTP status", retryable=False)
    if line.get("error") or not isinstance(code, int) or code >= 400:
        body = response.get("body")
        error = line.get("error") or (body.get("error") if isinstance(body, dict) else None) or "no response body"
        message = error.get("message") if isinstance(error, dict) else error
        retryable = not isinstance(code, int) or code >= 500 or code == 429 or code in RETRYABLE_STATUS
        raise BackendError(f"{prefix}HTTP {code}: {message}", retryable=retryable)
    return response.get("body")
