"""Any OpenAI-compatible HTTP endpoint (OpenAI, vLLM, llama.cpp server, Ollama, TGI), over aiohttp.

Spec: ``openai:MODEL?base_url=URL&api_key_env=VAR&max_concurrency=N&timeout=S&context_window=TOKENS``.
The model's context window is ``context_window`` where given, else what the server's ``/models`` entry
for the model reports (`reported_window`: vLLM's ``max_model_len``, ``context_length`` or
``context_window`` elsewhere), else unknown; `--estimate` warns of prompts that do not fit it.
The API key is read from the environment variable named by ``api_key_env`` (default
``OPENAI_API_KEY``) and is never stored, logged or written to results. ``OPENAI_BASE_URL``,
``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` are honoured as the official SDK honours them, and so are
the proxy variables (``HTTPS_PROXY``, ``NO_PROXY``).

Why not the official ``openai`` SDK (which DESIGN.md names for HTTP APIs): the backend needs two
requests, ``GET /models`` and ``POST`` of a JSON body, and the engine already owns retries, timeouts,
rate limits and parsing. On aiohttp alone the client costs a quarter of the SDK's CPU per
request and a cached rerun does not import it (benchmarks/engine_throughput.py; figures in
docs/performance.md). lm-evaluation-harness posts to these endpoints with aiohttp too.
"""

from __future__ import annotations

import json
import math
import os
import re
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse
from urllib.request import getproxies, proxy_bypass

import aiohttp

from robusteval import __version__
from robusteval.errors import BackendError, UserError
from robusteval.models.chat_format import chat_body, parse_chat_completion, parse_echo_loglik, plain_prompt
from robusteval.redact import add_secret, has_secret, redact
from robusteval.types import Completion, GenParams, Message

if TYPE_CHECKING:  # spec.load_backend imports the backends
    from robusteval.models.spec import ModelSpec

OPENAI_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
# Statuses worth retrying besides 429 and 5xx: request timeout and conflict, as the SDK retries them.
RETRYABLE_STATUS = {408, 409}


@dataclass
class OpenAIBackend:
    model: str
    base_url: str
    api_key_env: str
    key_required: bool
    max_concurrency: int = 16
    timeout_s: float = 600.0
    fingerprint: str = ""
    server_model: str = ""  # the model id the server reported at start (a pool compares its replicas')
    context_window: int | None = None  # tokens: the spec's context_window, else what /models reports
    window_holds_reply = True  # vLLM and OpenAI refuse a prompt + max_tokens over the window
    loglik_text = True

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIBackend:
        base_url = spec.option("base_url") or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        origin = "base_url in --model" if spec.option("base_url") else "OPENAI_BASE_URL"
        host = checked_host(base_url, origin)
        # Local servers usually need no key; a hosted API or an explicitly named key variable does.
        key_required = "api_key_env" in spec.options or host not in LOCAL_HOSTS
        return cls(
            model=spec.name,
            base_url=base_url.rstrip("/"),
            api_key_env=spec.option("api_key_env", "OPENAI_API_KEY"),
            key_required=key_required,
            max_concurrency=spec.int_option("max_concurrency", 16),
            timeout_s=spec.float_option("timeout", 600.0),
            context_window=spec.int_option("context_window", 0) or None,
        )

    async def start(self) -> None:
        key = os.environ.get(self.api_key_env)
        add_secret(key)  # from now on no error text shows it, whatever a server echoes
        if not key and self.key_required:
            raise UserError(
                f"no API key for {self.base_url}: set the environment variable {self.api_key_env} "
                f"(or name another one with ?api_key_env=VAR in --model)"
            )
        # One session, one connection per concurrent request. The engine's limit is the only one
        # (`--concurrency` may exceed max_concurrency): a connector limit would queue requests
        # unseen, inside their timeout. The connector only keeps connections alive.
        self._session: aiohttp.ClientSession | None = aiohttp.ClientSession(
            headers=_headers(key), proxy=_env_proxy(self.base_url),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            connector=aiohttp.TCPConnector(limit=0,
                                           ssl=_ssl_context() if self.base_url.startswith("https:") else True),
        )
        try:
            server_id = await self._server_model_id()
        except BaseException:
            await self.close()  # no unclosed session left behind by a failed start
            raise
        # The id is the server's text: one that echoes the Authorization header would put the key
        # into the fingerprint, and so into the store, the ledgers, results.json and the report. Only
        # the key's exact value is replaced: any other id (every honest server's) keeps the fingerprint,
        # and the cache keys made of it, as they were; an echoing server's keys no longer change with the key.
        self.server_model = server_id = redact(server_id, patterns=False)
        self.fingerprint = f"openai:{self.base_url}:{self.model}:{server_id}"

    async def server_model_id(self) -> str:
        """Ask the server again which model it serves (a pool's probe of a replica it put aside);
        a failure is a BackendError, not a UserError: the run goes on without that replica."""
        try:
            return await self._server_model_id(probe=True)
        except UserError as exc:
            raise BackendError(str(exc), unavailable=True) from None

    async def _server_model_id(self, probe: bool = False) -> str:
        """The id the server reports for the model (fingerprint); also proves the endpoint answers."""
        assert self._session is not None  # started, not closed
        try:
            async with self._session.get(f"{self.base_url}/models") as response:
                status, raw = response.status, await response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise UserError(f"cannot reach {self.base_url} ({_describe(exc)}); is the server running and "
                            "base_url right?") from None
        if status in (401, 403):
            raise UserError(f"{self.base_url} rejected the API key in {self.api_key_env}")
        if probe and status >= 500:
            raise UserError(f"{self.base_url}/models answered HTTP {status}")
        if status == 404 and not probe and await self._answers_under_v1():
            raise UserError(f"{self.base_url}/models answered HTTP 404, and {self.base_url}/v1/models answers: "
                            f"the API is under /v1; use base_url={self.base_url}/v1 in --model")
        try:
            entries = json.loads(raw)["data"] if status == 200 else []
            ids = [m["id"] for m in entries]
        except (ValueError, KeyError, TypeError):
            entries, ids = [], []  # some servers have no /models; the endpoint answered, which is enough
        served = self.model if self.model in ids else ids[0] if len(ids) == 1 else "unlisted"
        if self.context_window is None and served in ids:
            self.context_window = reported_window(entries[ids.index(served)])
        return served

    async def _answers_under_v1(self) -> bool:
        """Whether the server answers ``/v1/models`` where ``/models`` was 404: a base_url without
        its ``/v1`` (vLLM, OpenAI), which would otherwise fail every request with a 404 that only
        results.json shows."""
        assert self._session is not None
        if self.base_url.rstrip("/").endswith("/v1"):
            return False
        try:
            async with self._session.get(f"{self.base_url}/v1/models") as response:
                return response.status == 200
        except (TimeoutError, aiohttp.ClientError, OSError):
            return False

    async def _post(self, path: str, body: dict[str, Any]) -> object:
        """POST a JSON body and decode the JSON reply; every failure becomes a BackendError the
        engine knows how to retry (or not). Any JSON value: the parsers check its shape."""
        raw = await self.send("POST", path, json_body=body)
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise BackendError(f"bad response: invalid JSON ({exc})") from None

    def _check_status(self, path: str, status: int, raw: bytes, retry_after: str | None) -> None:
        if status == 429:
            raise BackendError(f"429 rate limited: {_error_message(raw)}", rate_limited=True,
                               retry_after=_seconds(retry_after))
        if status >= 400:
            if status in (401, 403):
                raise BackendError(f"HTTP {status} from {path}: the server rejected the API key in "
                                   f"{self.api_key_env}: {_error_message(raw)}", retryable=False)
            raise BackendError(f"HTTP {status} from {path}: {_error_message(raw)}", status=status,
                               retryable=status >= 500 or status in RETRYABLE_STATUS, unavailable=status >= 500)

    async def send(self, method: str, path: str, *, json_body: dict[str, Any] | None = None,
                   multipart: aiohttp.MultipartWriter | None = None) -> bytes:
        """Any other request to the API (the Batch API's files and batches), its errors mapped as a
        chat request's are; returns the body's bytes."""
        assert self._session is not None  # started, not closed
        data = multipart if multipart is not None else None if json_body is None else json.dumps(json_body).encode()
        # the multipart Content-Type (with its boundary) replaces the session's JSON one
        headers = {"Content-Type": multipart.content_type} if multipart is not None else None
        try:
            async with self._session.request(method, self.base_url + path, data=data, headers=headers) as response:
                status, raw = response.status, await response.read()
                retry_after = response.headers.get("retry-after")
        except TimeoutError:
            raise BackendError(f"timed out after {self.timeout_s:g} s waiting for {path}", unavailable=True) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise BackendError(f"connection failed: {_describe(exc)}", unavailable=True) from None
        self._check_status(path, status, raw, retry_after)
        return raw

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        out = await self._post("/chat/completions", {"model": self.model, **chat_body(messages, params)})
        return parse_chat_completion(out, source=self.base_url)

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        """log P(continuation | plain-text prompt + prefix) from a completions endpoint that echoes
        prompt log-probabilities (vLLM, TGI and others; not OpenAI's chat models, nor llama.cpp)."""
        context = plain_prompt(messages) + prefix
        out = await self._post("/completions", {"model": self.model, "prompt": context + continuation,
                                                "max_tokens": 0, "echo": True, "logprobs": 1, "temperature": 0})
        return parse_echo_loglik(out, len(context), source=self.base_url)

    async def close(self) -> None:
        session, self._session = getattr(self, "_session", None), None
        if session is not None:
            await session.close()


def reported_window(entry: object) -> int | None:
    """The context window a ``/models`` entry reports, where it reports one: ``max_model_len`` (vLLM),
    ``context_length`` (OpenRouter, LM Studio), ``context_window`` (Groq); OpenAI's own says nothing."""
    if isinstance(entry, dict):
        for name in ("max_model_len", "context_length", "context_window"):
            value = entry.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _headers(key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": f"robusteval/{__version__}"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    for header, variable in (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID")):
        if os.environ.get(variable):
            headers[header] = os.environ[variable]
    return headers


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``/``HTTP_PROXY``, unless ``NO_PROXY``
    covers the host), looked up once. aiohttp's ``trust_env`` looks it up, and reads ~/.netrc, on
    every request, which costs more CPU than the rest of the client together."""
    parts = urlparse(url)
    proxy = getproxies().get(parts.scheme)
    return proxy if proxy and not proxy_bypass(parts.hostname or "") else None


def _ssl_context() -> ssl.SSLContext:
    """Verify TLS against certifi's CA bundle where installed (as the SDK did through httpx), so a
    Python without system certificates (python.org's macOS build) still reaches hosted APIs."""
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def checked_host(base_url: str, origin: str) -> str:
    """The host of ``base_url``; a URL that cannot be an endpoint is a UserError saying what is wrong
    (without a scheme, ``localhost:8080/v1`` parses as scheme "localhost" and no host).

    A URL that may carry a credential is refused before anything else, by a message that does not
    echo it: the base URL is written into results.json, the report, the fingerprint and the ledgers.
    That is user:password@, any query or fragment (``?key=...``, ``?api_key=...``: the paths robusteval
    appends would follow it, so no query can work anyway), and a registered key's value."""
    keep = "put the key in an environment variable and name it with api_key_env=VAR"
    if "@" in base_url.split("://", 1)[-1].split("/", 1)[0]:
        raise UserError(f"{origin} must not hold credentials (user:password@): they would be written into the "
                        f"results; {keep}")
    if "?" in base_url or "#" in base_url or has_secret(base_url):
        head = re.split(r"[?#]", base_url, maxsplit=1)[0]
        shown = redact(head, patterns=False) + ("..." if head != base_url else "")
        raise UserError(f"{origin} {shown!r} must not carry a "
                        f"query, a fragment or a key: the URL is written into the results, and robusteval appends "
                        f"its paths (/chat/completions) to it; {keep}")
    try:
        parts = urlparse(base_url)
    except ValueError as exc:  # an unclosed IPv6 bracket: http://[::1:8000/v1
        raise UserError(f"{origin} {base_url!r} is not a URL ({exc}); e.g. http://[::1]:8000/v1") from None
    if parts.scheme not in ("http", "https"):
        raise UserError(f"{origin} {base_url!r} does not start with http:// or https://; write it as "
                        f"http://{base_url.split('://')[-1]} (a local server) or https://... (a hosted API)")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise UserError(f"{origin} {base_url!r}: the port is not a number in 0-65535") from None
    if not parts.hostname:
        raise UserError(f"{origin} {base_url!r} names no host; e.g. http://127.0.0.1:8080/v1")
    return parts.hostname


def _seconds(value: str | None) -> float | None:
    """Retry-After in seconds; None for an HTTP-date, nothing, or a value that is not a finite
    non-negative number ("nan", "inf", "-5"): the engine then backs off on its own."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def _error_message(raw: bytes, limit: int = 200) -> str:
    """The server's own error message where the body is OpenAI's ``{"error": {"message": ...}}``,
    else the body's start."""
    text = raw.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        text = (error.get("message") if isinstance(error, dict) else error) or text
    except (ValueError, AttributeError):
        pass
    text = redact(str(text).strip())
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}") if str(exc) else type(exc).__name__
