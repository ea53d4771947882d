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

Resume: each request's ``custom_id`` is a hash of the endpoint and the request body (with an
occurrence number for identical bodies, which are distinct samples), and ``custom_id -> batch id`` is
written to ``responses.batches.sqlite`` beside the response store as soon as the batch is created.
A process that exits while a batch is pending (Ctrl-C, a closed laptop, a job's time limit) loses
nothing: the rerun asks the same requests, finds them in that table and polls the pending batch
instead of submitting them again. A mapping is forgotten once its answer was handed to the engine
(which stores it before use). The one gap: a process killed between the server creating a batch and
the table recording it (one local SQLite write) submits those requests again on rerun.

Cost: the engine charges ``price_factor`` = 0.5 of ``--price-in``/``--price-out``, in the usage and
in ``--estimate``. The fingerprint is the ``openai`` backend's for the same URL and model: a model
answers the same through either door, so both share one cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
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
DONE = ("completed", "failed", "expired", "cancelled")
POLL_FAILURES = 10  # consecutive failed status requests before the waiting requests fail (the batch is kept)
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


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
        uploaded = _json(await self.api.send("POST", "/files", multipart=form), "/files")
        batch = _json(await self.api.send("POST", "/batches", json_body={
            "input_file_id": uploaded["id"], "endpoint": ENDPOINT, "completion_window": "24h",
            "metadata": {"source": "robusteval"}}), "/batches")
        self._ledger.record(batch["id"], self.api.base_url, [w.custom_id for w in group])
        return str(batch["id"])  # `_json` checked that it is a string

    async def _watch(self, batch_id: str) -> None:
        """Poll until the batch is done, then hand each waiting request its answer or error."""
        failures = 0
        while True:
            try:
                batch = _json(await self.api.send("GET", f"/batches/{batch_id}"), f"/batches/{batch_id}")
                failures = 0
            except BackendError as exc:
                failures += 1
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
        try:
            results: dict[str, dict[str, Any]] = {}
            for key in ("output_file_id", "error_file_id"):  # OpenAI writes failed lines to the error file
                if batch.get(key):
                    results |= _lines(await self.api.send("GET", f"/files/{batch[key]}/content"))
        except BackendError as exc:
            _fail(self._watched.pop(batch_id, []), BackendError(f"batch {batch_id}: cannot download its answers "
                                                                f"({exc}); a rerun tries again"))
            return
        waiting = self._watched.pop(batch_id, [])
        assert self._ledger is not None  # started
        self._ledger.forget(batch_id, [w.custom_id for w in waiting])
        why = _batch_problem(batch)
        for w in waiting:
            if w.future.done():
                continue
            try:
                w.future.set_result(_answer(results.get(w.custom_id), batch_id, batch.get("status"), why,
                                            self.api.base_url))
            except BackendError as exc:
                w.future.set_exception(exc)
                w.future.exception()  # retrieved here: a caller gone (Ctrl-C) must not log it

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._ledger is not None:
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


def _lines(raw: bytes) -> dict[str, dict[str, Any]]:
    """custom_id -> result line of a batch output (or error) file; unreadable lines are skipped (their
    requests then count as unanswered and are asked again)."""
    out = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
            out[str(item["custom_id"])] = item
        except (ValueError, KeyError, TypeError):
            continue
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
    return parse_chat_completion(output_body(line, f"batch {batch_id}: "), source=source)


def output_body(line: dict[str, Any], prefix: str = "", *, status_if_absent: int | None = None) -> object:
    """The response body of one batch output line (OpenAI's or vLLM run-batch's shape); a line with an
    error, or an HTTP status of 400 or more, is a BackendError (retryable as the status says).
    ``status_if_absent``: the status of a line with a body and no ``status_code`` (None: an error)."""
    response = line.get("response")
    if not isinstance(response, dict):
        response = {}
    code = response.get("status_code", status_if_absent if "body" in response else None)
    if line.get("error") or not isinstance(code, int) or code >= 400:
        body = response.get("body")
        error = line.get("error") or (body.get("error") if isinstance(body, dict) else None) or "no response body"
        message = error.get("message") if isinstance(error, dict) else error
        retryable = not isinstance(code, int) or code >= 500 or code == 429 or code in RETRYABLE_STATUS
        raise BackendError(f"{prefix}HTTP {code}: {message}", retryable=retryable)
    return response.get("body")
