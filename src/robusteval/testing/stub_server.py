"""A deterministic OpenAI-compatible chat server on loopback, with injectable faults.

Tests and benchmarks need an endpoint whose answers are known in advance, whose latency is fixed,
that misbehaves on demand (429 with Retry-After, 500, replies slower than the client's timeout,
malformed JSON) and that counts what it was asked. The answer to a request is a pure function of its
content, so two runs can be compared exactly.

    python -m robusteval.testing.stub_server --port 0 --latency 0.05 --rpm 600 --hits-file hits.json

prints the port on its first stdout line and serves until killed; ``--hits-file`` is rewritten at
every 0.1 s and on exit with ``{"total": N, "outcomes": {...}, "requests": {hash: hits}}``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from aiohttp import web

LETTERS = "ABCD"


def request_hash(body: dict) -> str:
    """Identity of a request as the server sees it: messages plus the parameters that matter."""
    key = {k: body.get(k) for k in ("model", "messages", "temperature", "top_p", "max_tokens", "seed", "stop")}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def token_logprob(token: str) -> float:
    """The stub's log-probability of a token: fixed by its text, in (-5, 0)."""
    return -(int(hashlib.sha256(token.encode()).hexdigest()[:6], 16) % 500) / 100 - 0.01


def answer_for(body: dict) -> str:
    """The deterministic reply: a label picked by the request hash (and by the labels it shows)."""
    h = request_hash(body)
    return f"Let me think. The best answer is {LETTERS[int(h, 16) % 4]}."


@dataclass
class StubConfig:
    latency_s: float = 0.0
    p_429: float = 0.0
    p_500: float = 0.0
    p_slow: float = 0.0
    p_malformed: float = 0.0
    slow_s: float = 5.0
    retry_after_s: float = 0.05
    rpm: float | None = None
    seed: int = 0
    hits_file: str | None = None


@dataclass
class StubState:
    total: int = 0
    outcomes: Counter = field(default_factory=Counter)
    requests: Counter = field(default_factory=Counter)  # hash -> hits that were answered ok

    def snapshot(self) -> dict:
        return {"total": self.total, "outcomes": dict(self.outcomes), "requests": dict(self.requests)}


class _RateLimit:
    """Server-side RPM: a token bucket holding one second's worth, refilled at rpm/60 per second."""

    def __init__(self, rpm: float):
        self.rate = rpm / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def allow(self) -> bool:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.level >= 1:
            self.level -= 1
            return True
        return False


def make_app(config: StubConfig, state: StubState) -> web.Application:
    rng = random.Random(config.seed)
    limiter = _RateLimit(config.rpm) if config.rpm else None

    def record(outcome: str, h: str | None = None) -> None:
        state.total += 1
        state.outcomes[outcome] += 1
        if h is not None:
            state.requests[h] += 1

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        if limiter is not None and not limiter.allow():
            record("429")
            return _error(429, "rate limit", {"Retry-After": f"{config.retry_after_s:g}"})
        roll = rng.random()
        if roll < config.p_429:
            record("429")
            return _error(429, "injected rate limit", {"Retry-After": f"{config.retry_after_s:g}"})
        roll -= config.p_429
        if roll < config.p_500:
            record("500")
            return _error(500, "injected server error")
        roll -= config.p_500
        if roll < config.p_slow:
            record("slow")
            await asyncio.sleep(config.slow_s)
            return _error(504, "too slow")
        roll -= config.p_slow
        if config.latency_s:
            await asyncio.sleep(config.latency_s)
        if roll < config.p_malformed:
            record("malformed")
            return web.Response(text='{"id": "x", "choices": [', content_type="application/json")
        h = request_hash(body)
        record("ok", h)
        text = answer_for(body)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return web.json_response({
            "id": f"chatcmpl-{h}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "stub-model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                      "total_tokens": prompt_tokens + len(text.split())},
        })

    async def completions(request: web.Request) -> web.Response:
        """Echoed prompt log-probabilities, as vLLM returns them for loglik scoring: one token per
        whitespace-led word, each with a log-probability fixed by its text."""
        body = await request.json()
        if not body.get("echo"):
            return _error(400, "this stub only echoes prompt log-probabilities")
        record("ok", request_hash(body))
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

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", completions)
    return app


def _error(status: int, message: str, headers: dict | None = None) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "stub", "code": status}}, status=status,
                             headers=headers)


def write_hits(state: StubState, path: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(state.snapshot(), f)
    os.replace(tmp, path)


async def _flush_hits(state: StubState, path: str) -> None:
    """Rewrite the hits file when something changed (per hit would be quadratic in the run size)."""
    seen = -1
    while True:
        if state.total != seen:
            seen = state.total
            write_hits(state, path)
        await asyncio.sleep(0.1)


class StubServer:
    """The stub in a background thread of this process: ``with StubServer(cfg) as s: s.base_url``."""

    def __init__(self, config: StubConfig | None = None):
        self.config = config or StubConfig()
        self.state = StubState()
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> StubServer:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("stub server did not start")
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner = web.AppRunner(make_app(self.config, self.state), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every ok reply")
    parser.add_argument("--p-429", type=float, default=0.0)
    parser.add_argument("--p-500", type=float, default=0.0)
    parser.add_argument("--p-slow", type=float, default=0.0)
    parser.add_argument("--p-malformed", type=float, default=0.0)
    parser.add_argument("--slow", type=float, default=5.0, help="seconds a slow reply takes")
    parser.add_argument("--retry-after", type=float, default=0.05)
    parser.add_argument("--rpm", type=float, default=None, help="enforce this many requests per minute")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hits-file")
    args = parser.parse_args()
    config = StubConfig(args.latency, args.p_429, args.p_500, args.p_slow, args.p_malformed, args.slow,
                        args.retry_after, args.rpm, args.seed, args.hits_file)

    state = StubState()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    async def serve() -> None:
        runner = web.AppRunner(make_app(config, state), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port, backlog=1024)
        await site.start()
        print(site._server.sockets[0].getsockname()[1], flush=True)
        if config.hits_file:
            await _flush_hits(state, config.hits_file)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        if config.hits_file:
            write_hits(state, config.hits_file)


if __name__ == "__main__":
    main()
