"""A deterministic OpenAI-compatible chat server on loopback, with injectable faults and hit counters.

Tests and benchmarks need an endpoint whose answers are known in advance, whose latency is fixed,
that misbehaves on demand and that counts what it was asked:

- ``POST /v1/chat/completions``: a well-formed ``chat.completion`` with usage. The reply text is a pure
  function of the request (model, messages, temperature, top_p, max_tokens, seed, stop), so two runs
  can be compared exactly: ``"Let me think. The best answer is X."`` with X in A-D picked by its hash
  (`answer_for`, or `expected_answer` from the engine's own types); to a prompt that asks for "the
  final answer" or a ``\boxed{}`` (open-answer math), ``"Let me think. The final answer is N."`` with
  N in 0-9 picked the same way.
- ``GET /v1/models``: one model id (with ``max_model_len`` where ``max_model_len`` is set, as vLLM
  reports it; a request whose prompt words and max_tokens exceed it is then refused with vLLM's 400).
  ``echo_auth``: a server that leaks the key, in the model id and/or each reply (`StubConfig`).
- ``POST /v1/completions`` with ``echo``: prompt log-probabilities, as vLLM returns them (loglik scoring).

Batch mode (the OpenAI Batch API, as `models.openai_batch` uses it): ``POST /v1/files`` (multipart,
purpose "batch") stores a JSONL of requests, ``POST /v1/batches`` makes a batch of it, ``GET
/v1/batches/{id}`` reports "in_progress" until the batch has been polled ``batch_polls`` times and is
``batch_delay_s`` old, then "completed" with an output file, ``GET /v1/files/{id}/content`` returns
it: one line per request with its ``custom_id`` and the same chat completion the chat endpoint gives
(``batch_p_error``: a seeded share of lines answered with a 500 error instead; ``batch_final``: the
batch ends "failed", "expired" or "cancelled" instead, without output); ``GET /v1/batches`` lists
the batches, newest first, with the ``metadata`` they were created with. Hostile batch faults:
``batch_output`` "dup" (each custom_id on two lines, the second naming another letter) or
"status-string" (``status_code: "200"``); ``batch_create_500``: the first N ``POST /v1/batches``
create the batch, then answer 500 (an ambiguous failure); ``batch_list`` False: no listing;
`StubServer.forget_batches` (the server
no longer knows any batch: 404). Each answered line counts as an "ok" hit of its request;
``batches``, ``uploads`` and ``downloads`` count batches and files created and file downloads.

Faults are drawn per hit from a seeded RNG, so a retry of the same request can succeed: 429 with
Retry-After, 500, "slow" (waits ``slow_s``, longer than the client's timeout, then answers 504) and
"malformed" (status 200 with a body that is not JSON). ``rpm`` enforces a request rate server-side
(token bucket holding one second's worth; 429 with the Retry-After the bucket needs). ``storm_s``: a
429 storm, every chat hit answered 429 *without* Retry-After for that many seconds from the first
chat hit (the client must find its own pace, and find the storm's end); ``StubState.storm_began`` and
``last_429`` say when, on the stub's monotonic clock.

Hostile mode (``hostile``: shape names, or ``--hostile all``): the first ``hostile_hits`` hits of each
request are answered with a reply that is valid JSON or HTTP but not a valid chat completion, the
shapes dealt round-robin over requests in order of arrival, so each shape is served and a retry gets
the good answer. `HOSTILE_SHAPES` lists them; `TOLERATED_SHAPES` are the ones a client may accept
(the answer is intact, only the token counts are missing).

Counters: total hits, hits by outcome (ok, 429, 500, slow, malformed, hostile:SHAPE), hits per request hash
(``hits``, every attempt) and completed answers per request hash (``requests``: a value above 1 means
a request that had already been answered was sent again).

In this process (a background thread with its own event loop, or the running loop)::

    with StubServer(StubConfig(latency_s=0.01, p_500=0.1)) as stub:   # or: async with ...
        ... stub.base_url ...; stub.counters()["outcomes"]

As a subprocess (the port is the first stdout line; the hits file holds `StubState.snapshot` as JSON,
rewritten at most every ``--hits-interval`` seconds while hits arrive, 0 = at every hit, and on exit)::

    python -m robusteval.testing.openai_stub --port 0 --latency 0.05 --p-429 0.1 --rpm 600 --hits-file hits.json
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import random
import re
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aiohttp import web

LETTERS = "ABCD"
OUTCOMES = ("ok", "429", "500", "slow", "malformed")  # and "hostile:SHAPE" for each hostile shape served
# Replies that are valid JSON (or a well-formed HTTP error) but not a valid chat completion.
HOSTILE_SHAPES = (
    "content-list",  # message.content as a list of parts
    "content-number",  # message.content: 42
    "content-null",  # message.content: null
    "tool-call",  # content null with a tool call nobody offered
    "content-surrogate",  # a lone surrogate: valid JSON, text SQLite cannot store
    "usage-null",  # usage: null
    "usage-fields-null",  # usage: {"prompt_tokens": null, ...}
    "usage-garbage",  # usage: {"prompt_tokens": "many", ...}
    "no-choices",  # no "choices"
    "empty-choices",  # "choices": []
    "no-message",  # a choice without "message"
    "finish-number",  # finish_reason: 7
    "content-filter",  # finish_reason "content_filter": the text is not the answer
    "retry-after-nan",  # 429 with Retry-After: nan
    "retry-after-inf",  # 429 with Retry-After: inf
    "retry-after-negative",  # 429 with Retry-After: -5
    "retry-after-garbage",  # 429 with Retry-After: soon
    "echo-auth",  # 500 whose error message echoes the Authorization header
)
# Shapes whose answer is intact (no token counts): a client may store it as an answer.
TOLERATED_SHAPES = ("usage-null", "usage-fields-null")
HASHED_FIELDS = ("model", "messages", "temperature", "top_p", "max_tokens", "seed", "stop")


def request_hash(body: dict) -> str:
    """Identity of a request as the server sees it: model, messages and the parameters that matter."""
    key = {k: body.get(k) for k in HASHED_FIELDS}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def answer_for(body: dict) -> str:
    """The deterministic reply to a request body: a label picked by the request hash."""
    return _answer(request_hash(body), body)


def _answer(h: str, body: dict | None = None) -> str:
    if body is not None and _asks_math(body):
        return f"Let me think. The final answer is {int(h, 16) % 10}."
    return f"Let me think. The best answer is {LETTERS[int(h, 16) % 4]}."


def _asks_math(body: dict) -> bool:
    messages = body.get("messages") or ()
    last = str(messages[-1].get("content", "")) if messages and isinstance(messages[-1], dict) else ""
    return "final answer" in last.lower() or "\\boxed" in last


def expected_answer(model: str, messages, params=None) -> str:
    """The reply the stub gives to ``engine.chat`` with an ``openai:MODEL`` backend (same body builder)."""
    from robusteval.models.chat_format import chat_body
    from robusteval.types import GenParams

    return answer_for({"model": model, **chat_body(tuple(messages), params or GenParams())})


def token_logprob(token: str) -> float:
    """The stub's log-probability of a token: fixed by its text, in (-5, 0)."""
    return -(int(hashlib.sha256(token.encode()).hexdigest()[:6], 16) % 500) / 100 - 0.01


@dataclass
class StubConfig:
    latency_s: float = 0.0  # added to every reply that is not a fault
    jitter_s: float = 0.0  # the latency is drawn uniformly from latency_s ± jitter_s
    p_429: float = 0.0
    p_500: float = 0.0
    p_slow: float = 0.0
    p_malformed: float = 0.0
    slow_s: float = 5.0  # how long a "slow" reply waits before its 504
    retry_after_s: float = 0.05  # Retry-After of an injected 429
    rpm: float | None = None
    storm_s: float = 0.0  # every chat hit answered 429 without Retry-After for this long from the first one
    seed: int = 0
    hits_file: str | None = None
    hits_interval_s: float = 0.1
    model_id: str = "stub-model"
    hostile: tuple[str, ...] = ()  # shapes from HOSTILE_SHAPES served to each request's first hits
    hostile_hits: int = 1  # how many hits of each request get a hostile shape
    batch_polls: int = 1  # status requests a batch answers "in_progress" before it is "completed"
    batch_delay_s: float = 0.0  # and the least time from its creation to "completed"
    batch_p_error: float = 0.0  # share of a batch's lines answered with an error (seeded)
    batch_final: str = "completed"  # or "failed", "expired", "cancelled": then no output file
    batch_output: str = "normal"  # or "dup": each custom_id twice; "status-string": status_code "200"
    batch_create_500: int = 0  # the first N batch creations create the batch, then answer 500
    batch_list: bool = True  # False: no GET /v1/batches (405), as some Batch API servers
    max_model_len: int | None = None  # the context window /v1/models reports, in the stub's tokens (words)
    # A server that leaks the key: "models", the /v1/models id ends with the request's Authorization
    # header; "reply", so does each chat reply's text.
    echo_auth: tuple[str, ...] = ()


class StubState:
    """Hit counters; thread-safe, so a test can read them while the server thread writes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0
        self.outcomes: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()  # request hash -> every hit
        self.requests: Counter[str] = Counter()  # request hash -> hits answered ok
        self.batches = 0  # batches created
        self.uploads = 0  # files uploaded
        self.downloads = 0  # batch files downloaded
        self.batch_store: dict[str, dict] = {}  # the Batch API's batches (`StubServer.forget_batches` empties it)
        self.changes = 0  # hits and creations: what the hits file's flusher watches
        self.storm_began: float | None = None  # monotonic time of the first chat hit (storm_s)
        self.last_429: float | None = None  # monotonic time of the last 429 served

    def record(self, outcome: str, request_hash: str | None) -> None:
        with self._lock:
            self.total += 1
            self.changes += 1
            self.outcomes[outcome] += 1
            if request_hash is not None:
                self.hits[request_hash] += 1
                if outcome == "ok":
                    self.requests[request_hash] += 1

    def snapshot(self) -> dict:
        with self._lock:
            return {"total": self.total, "outcomes": dict(self.outcomes), "hits": dict(self.hits),
                    "requests": dict(self.requests), "batches": self.batches, "uploads": self.uploads,
                    "downloads": self.downloads}

    def begin_storm(self, now: float) -> float:
        """When the storm began: at the first chat hit (this one, if it is the first)."""
        with self._lock:
            if self.storm_began is None:
                self.storm_began = now
            return self.storm_began

    def created(self, what: str) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)
            self.changes += 1


class RateLimit:
    """Server-side RPM: a token bucket holding one second's worth (at least one), refilled at rpm/60 per
    second. `take` returns 0 when a request may pass, else the seconds until one may."""

    def __init__(self, rpm: float):
        self.rate = rpm / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def take(self) -> float:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.level >= 1:
            self.level -= 1
            return 0.0
        return (1 - self.level) / self.rate


def make_app(config: StubConfig, state: StubState) -> web.Application:
    rng = random.Random(config.seed)
    limiter = RateLimit(config.rpm) if config.rpm else None
    unknown = set(config.hostile) - set(HOSTILE_SHAPES)
    if unknown:
        raise ValueError(f"unknown hostile shapes {sorted(unknown)}; known: {', '.join(HOSTILE_SHAPES)}")
    first_shape: dict[str, int] = {}  # request hash -> index of the first shape it is served
    hostile_served: Counter[str] = Counter()  # request hash -> hostile replies served to it
    each_hit_file = config.hits_file if config.hits_interval_s <= 0 else None  # else a flusher task writes it

    def record(outcome: str, h: str | None) -> None:
        state.record(outcome, h)
        if each_hit_file:
            write_hits(state, each_hit_file)

    async def models(request: web.Request) -> web.Response:
        model_id = config.model_id
        if "models" in config.echo_auth:
            model_id += "-" + request.headers.get("Authorization", "")
        entry: dict[str, object] = {"id": model_id, "object": "model", "owned_by": "robusteval-stub"}
        if config.max_model_len is not None:
            entry["max_model_len"] = config.max_model_len
        return web.json_response({"object": "list", "data": [entry]})

    async def chat(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            h = request_hash(body)
        except (ValueError, TypeError, AttributeError):
            return _error(400, "the body is not a JSON object")
        now = time.monotonic()
        if config.storm_s and now - state.begin_storm(now) < config.storm_s:
            record("429", h)
            state.last_429 = now
            return _error(429, "rate limited (a storm)")
        if limiter is not None and (wait := limiter.take()):
            record("429", h)
            return _error(429, "rate limit exceeded", {"Retry-After": f"{math.ceil(wait * 1000) / 1000:g}"})
        if config.hostile and hostile_served[h] < config.hostile_hits:
            start = first_shape.setdefault(h, len(first_shape))
            shape = config.hostile[(start + hostile_served[h]) % len(config.hostile)]
            hostile_served[h] += 1
            record(f"hostile:{shape}", h)
            return hostile_reply(shape, h, body, request.headers.get("Authorization", ""))
        if config.max_model_len is not None:  # vLLM's check: the prompt and max_tokens must fit
            n, reply = prompt_tokens(body), body.get("max_tokens") or 0
            if isinstance(reply, int) and n + max(1, reply) > config.max_model_len:
                record("too_long", h)
                return _error(400, f"This model's maximum context length is {config.max_model_len} tokens. "
                                   f"However, you requested {n + reply} tokens ({n} in the messages, "
                                   f"{reply} in the completion).")
        roll = rng.random()
        if roll < config.p_429:
            record("429", h)
            return _error(429, "injected rate limit", {"Retry-After": f"{config.retry_after_s:g}"})
        roll -= config.p_429
        if roll < config.p_500:
            record("500", h)
            return _error(500, "injected server error")
        roll -= config.p_500
        if roll < config.p_slow:
            record("slow", h)
            await asyncio.sleep(config.slow_s)
            return _error(504, "injected slow reply")
        roll -= config.p_slow
        if config.latency_s or config.jitter_s:
            await asyncio.sleep(max(0.0, config.latency_s + config.jitter_s * (2 * rng.random() - 1)))
        if roll < config.p_malformed:
            record("malformed", h)
            return web.Response(text='{"id": "chatcmpl-x", "choices": [', content_type="application/json")
        record("ok", h)
        reply = completion_body(body, h, config.model_id)
        if "reply" in config.echo_auth:
            reply["choices"][0]["message"]["content"] += " " + request.headers.get("Authorization", "")
        return web.json_response(reply)

    async def completions(request: web.Request) -> web.Response:
        """Echoed prompt log-probabilities: one token per whitespace-led word, each with a
        log-probability fixed by its text."""
        body = await request.json()
        if not body.get("echo"):
            return _error(400, "this stub only echoes prompt log-probabilities")
        record("ok", request_hash(body | {"messages": body.get("prompt")}))
        prompt = body["prompt"]
        tokens = re.findall(r"\s*\S+", prompt)
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
        values = [None] + [token_logprob(t) for t in tokens[1:]]
        return web.json_response({
            "object": "text_completion", "model": body.get("model"),
            "choices": [{"index": 0, "text": prompt, "finish_reason": "length", "logprobs": {
                "tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                "top_logprobs": [None] + [{t: token_logprob(t)} for t in tokens[1:]]}}],
        })

    files: dict[str, bytes] = {}
    batches = state.batch_store
    polls: Counter[str] = Counter()

    async def upload(request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(upload, web.FileField):
            return _error(400, "expected a multipart form with purpose=batch and a file")
        file_id = f"file-{len(files) + 1}"
        files[file_id] = upload.file.read()
        state.created("uploads")
        if each_hit_file:
            write_hits(state, each_hit_file)
        return web.json_response({"id": file_id, "object": "file", "bytes": len(files[file_id]),
                                  "filename": upload.filename, "purpose": "batch", "created_at": int(time.time())})

    async def create_batch(request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("input_file_id") not in files or body.get("endpoint") != "/v1/chat/completions":
            return _error(400, "unknown input_file_id, or an endpoint other than /v1/chat/completions")
        batch_id = f"batch_{state.batches + 1}"
        batches[batch_id] = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                             "input_file_id": body["input_file_id"], "status": "in_progress",
                             "completion_window": body.get("completion_window", "24h"),
                             "metadata": body.get("metadata"),
                             "created_at": int(time.time()), "output_file_id": None, "error_file_id": None,
                             "_created": time.monotonic()}
        state.created("batches")
        if each_hit_file:
            write_hits(state, each_hit_file)
        if state.batches <= config.batch_create_500:  # created all the same: the client cannot know
            return _error(500, "internal error")
        return web.json_response(_public(batches[batch_id]))

    async def list_batches(request: web.Request) -> web.Response:
        newest_first = list(reversed(batches.values()))
        after = request.query.get("after")
        if after in batches:
            newest_first = newest_first[[b["id"] for b in newest_first].index(after) + 1:]
        limit = int(request.query.get("limit", "20"))
        return web.json_response({"object": "list", "data": [_public(b) for b in newest_first[:limit]],
                                  "has_more": len(newest_first) > limit})

    async def get_batch(request: web.Request) -> web.Response:
        batch = batches.get(request.match_info["batch_id"])
        if batch is None:
            return _error(404, "no such batch")
        polls[batch["id"]] += 1
        if (batch["status"] == "in_progress" and polls[batch["id"]] >= config.batch_polls
                and time.monotonic() - batch["_created"] >= config.batch_delay_s):
            if config.batch_final != "completed":
                batch["status"] = config.batch_final
                if config.batch_final == "failed":
                    batch["errors"] = {"object": "list", "data": [{"code": "invalid_request",
                                                                   "message": "injected batch failure"}]}
                return web.json_response(_public(batch))
            lines = []
            for raw in files[batch["input_file_id"]].decode().splitlines():
                line = json.loads(raw)
                h = request_hash(line["body"])
                if rng.random() < config.batch_p_error:
                    record("500", h)
                    response = {"status_code": 500, "body": {"error": {"message": "injected batch error"}}}
                else:
                    record("ok", h)
                    response = {"status_code": "200" if config.batch_output == "status-string" else 200,
                                "request_id": f"req-{h}", "body": completion_body(line["body"], h, config.model_id)}
                lines.append(json.dumps({"id": f"batch_req_{h}", "custom_id": line["custom_id"],
                                         "response": response, "error": None}))
                if config.batch_output == "dup":  # the same custom_id again, another answer
                    other = completion_body(line["body"], h, config.model_id)
                    other["choices"][0]["message"]["content"] = f"The best answer is {LETTERS[(int(h, 16) + 1) % 4]}."
                    lines.append(json.dumps({"id": f"batch_req2_{h}", "custom_id": line["custom_id"],
                                             "response": {"status_code": 200, "body": other}, "error": None}))
            output_id = f"file-{len(files) + 1}"
            files[output_id] = ("\n".join(lines) + "\n").encode()
            batch |= {"status": "completed", "output_file_id": output_id}
        return web.json_response(_public(batch))

    async def file_content(request: web.Request) -> web.Response:
        content = files.get(request.match_info["file_id"])
        if content is None:
            return _error(404, "no such file")
        state.created("downloads")
        return web.Response(body=content, content_type="application/jsonl")

    app = web.Application()
    app.router.add_post("/v1/files", upload)
    app.router.add_get("/v1/files/{file_id}/content", file_content)
    app.router.add_post("/v1/batches", create_batch)
    if config.batch_list:
        app.router.add_get("/v1/batches", list_batches)
    app.router.add_get("/v1/batches/{batch_id}", get_batch)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", completions)
    return app


def completion_body(body: dict, h: str, model_id: str) -> dict:
    """The chat.completion the stub answers to a request body with hash ``h``."""
    text = _answer(h, body)
    prompt = prompt_tokens(body)
    completion_tokens = len(text.split())
    return {
        "id": f"chatcmpl-{h}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model") or model_id, "system_fingerprint": "stub",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens},
    }


def prompt_tokens(body: dict) -> int:
    """The stub's token count of a chat request's prompt: its messages' words."""
    return sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or ())


def _public(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def hostile_reply(shape: str, h: str, body: dict, authorization: str) -> web.Response:
    """The reply of one hostile shape to the request with hash ``h``."""
    retry_after = {"retry-after-nan": "nan", "retry-after-inf": "inf", "retry-after-negative": "-5",
                   "retry-after-garbage": "soon"}
    if shape in retry_after:
        return _error(429, "hostile rate limit", {"Retry-After": retry_after[shape]})
    if shape == "echo-auth":
        return _error(500, f"invalid request; headers were Authorization: {authorization or '(none)'}")
    text = _answer(h, body)
    reply: dict[str, Any] = {
        "id": f"chatcmpl-{h}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": len(text.split()), "total_tokens": 7 + len(text.split())},
    }
    choice: dict[str, Any] = reply["choices"][0]
    message: dict[str, Any] = choice["message"]
    if shape == "content-list":
        message["content"] = [{"type": "text", "text": text}]
    elif shape == "content-number":
        message["content"] = 42
    elif shape == "content-null":
        message["content"] = None
    elif shape == "tool-call":
        message["content"] = None
        message["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": "answer", "arguments": "{}"}}]
        choice["finish_reason"] = "tool_calls"
    elif shape == "content-surrogate":
        message["content"] = text[:-1] + "\ud800"
    elif shape == "usage-null":
        reply["usage"] = None
    elif shape == "usage-fields-null":
        reply["usage"] = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    elif shape == "usage-garbage":
        reply["usage"] = {"prompt_tokens": "many", "completion_tokens": -3, "total_tokens": 1.5}
    elif shape == "no-choices":
        del reply["choices"]
    elif shape == "empty-choices":
        reply["choices"] = []
    elif shape == "no-message":
        del choice["message"]
    elif shape == "finish-number":
        choice["finish_reason"] = 7
    elif shape == "content-filter":
        choice["finish_reason"] = "content_filter"
    return web.Response(text=json.dumps(reply), content_type="application/json")


def _error(status: int, message: str, headers: dict | None = None) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "stub_error", "code": status}},
                             status=status, headers=headers)


def write_hits(state: StubState, path: str) -> None:
    """Replace the hits file atomically (a reader never sees half a file)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(state.snapshot(), f)
    os.replace(tmp, path)


async def _flush_hits(state: StubState, path: str, interval_s: float) -> None:
    """Rewrite the hits file whenever hits arrived, at most every ``interval_s`` (rewriting the whole
    file at every hit is quadratic in the run's size; interval 0 does that, from the handlers)."""
    seen = -1
    while True:
        if state.changes != seen:
            seen = state.changes
            write_hits(state, path)
        await asyncio.sleep(interval_s)


async def _start_site(config: StubConfig, state: StubState, port: int = 0) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(make_app(config, state), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    return runner, runner.addresses[0][1]


class StubServer:
    """The stub in this process.

    ``with StubServer(cfg) as s`` serves from a background thread with its own event loop (a client
    using ``asyncio.run`` in the test's thread then does not share a loop with it); ``async with``
    serves on the running loop. Either way ``s.port``, ``s.base_url`` and ``s.counters()``.
    """

    def __init__(self, config: StubConfig | None = None, port: int = 0):
        self.config = config or StubConfig()
        self.state = StubState()
        self.port = port
        self._runner: web.AppRunner | None = None
        self._flusher: asyncio.Task | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model(self, name: str = "stub") -> str:
        """``--model`` for this stub: ``openai:NAME?base_url=...`` (the stub answers any model name)."""
        return f"openai:{name}?base_url={self.base_url}"

    def forget_batches(self) -> None:
        """Lose every batch, as a server reset would: their ids are answered 404 from now on."""
        self.state.batch_store.clear()

    def counters(self) -> dict:
        """``{"total", "outcomes", "hits", "requests"}`` as of now (a copy)."""
        return self.state.snapshot()

    async def start(self) -> None:
        self._runner, self.port = await _start_site(self.config, self.state, self.port)
        if self.config.hits_file:
            write_hits(self.state, self.config.hits_file)  # the file exists once the server answers
        if self.config.hits_file and self.config.hits_interval_s > 0:
            self._flusher = asyncio.create_task(_flush_hits(self.state, self.config.hits_file,
                                                            self.config.hits_interval_s))

    async def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.config.hits_file:
            write_hits(self.state, self.config.hits_file)

    async def __aenter__(self) -> StubServer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def __enter__(self) -> StubServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:  # e.g. no socket: report it in the caller's thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            await self._stop.wait()
            await self.stop()

        self._thread = threading.Thread(target=asyncio.run, args=(serve(),), name="openai-stub", daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the stub server did not start within 30 s")
        if failure:
            raise failure[0]
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply that is not a fault")
    parser.add_argument("--jitter", type=float, default=0.0, help="latency varies uniformly by ± this many seconds")
    parser.add_argument("--p-429", type=float, default=0.0, help="share of hits answered 429 with Retry-After")
    parser.add_argument("--p-500", type=float, default=0.0, help="share of hits answered 500")
    parser.add_argument("--p-slow", type=float, default=0.0, help="share of hits that wait --slow seconds, then 504")
    parser.add_argument("--p-malformed", type=float, default=0.0, help="share of hits answered 200 with invalid JSON")
    parser.add_argument("--slow", type=float, default=5.0, help="seconds a slow reply takes")
    parser.add_argument("--retry-after", type=float, default=0.05, help="Retry-After of an injected 429, seconds")
    parser.add_argument("--rpm", type=float, default=None, help="enforce this many requests per minute")
    parser.add_argument("--storm", type=float, default=0.0,
                        help="answer every chat hit 429 without Retry-After for this many seconds from the first")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault RNG")
    parser.add_argument("--model-id", default="stub-model", help="the id /v1/models reports")
    parser.add_argument("--hostile", default="", help="comma-separated shapes (or 'all') served to each request's "
                        f"first hits: {', '.join(HOSTILE_SHAPES)}")
    parser.add_argument("--hostile-hits", type=int, default=1, help="how many hits of each request get a hostile shape")
    parser.add_argument("--batch-polls", type=int, default=1, help="status requests before a batch completes")
    parser.add_argument("--batch-delay", type=float, default=0.0, help="least seconds from a batch's creation "
                        "to its completion")
    parser.add_argument("--batch-final", default="completed", help="the status a batch ends in: completed, "
                        "failed, expired or cancelled (then without output)")
    parser.add_argument("--batch-p-error", type=float, default=0.0, help="share of batch lines answered with an error")
    parser.add_argument("--max-model-len", type=int, default=None, help="the context window /v1/models reports "
                        "(words); a prompt and max_tokens over it are refused with vLLM's 400")
    parser.add_argument("--echo-auth", default="", help="comma-separated: models (the /v1/models id ends with "
                        "the Authorization header), reply (so does each chat reply)")
    parser.add_argument("--hits-file", help="write the counters here as JSON")
    parser.add_argument("--hits-interval", type=float, default=0.1,
                        help="seconds between hits-file rewrites; 0 rewrites it at every hit")
    args = parser.parse_args(argv)
    config = StubConfig(latency_s=args.latency, jitter_s=args.jitter, p_429=args.p_429, p_500=args.p_500,
                        p_slow=args.p_slow, p_malformed=args.p_malformed, slow_s=args.slow,
                        retry_after_s=args.retry_after, rpm=args.rpm, storm_s=args.storm, seed=args.seed,
                        hits_file=args.hits_file, hits_interval_s=args.hits_interval, model_id=args.model_id,
                        hostile=(HOSTILE_SHAPES if args.hostile == "all"
                                 else tuple(filter(None, args.hostile.split(",")))),
                        hostile_hits=args.hostile_hits, batch_polls=args.batch_polls,
                        batch_delay_s=args.batch_delay, batch_p_error=args.batch_p_error, batch_final=args.batch_final,
                        max_model_len=args.max_model_len, echo_auth=tuple(filter(None, args.echo_auth.split(","))))

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        server = StubServer(config, port=args.port)
        await server.start()
        print(server.port, flush=True)
        await stop.wait()
        await server.stop()  # writes the hits file a last time

    from robusteval.engine.loop import run

    run(serve())  # uvloop where installed: the stub must not be the bottleneck of a throughput benchmark


if __name__ == "__main__":
    main()
