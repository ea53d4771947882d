"""Any OpenAI-compatible HTTP endpoint (OpenAI, vLLM, llama.cpp server, Ollama, TGI), via the official SDK.

Spec: ``openai:MODEL?base_url=URL&api_key_env=VAR&max_concurrency=N&timeout=S``.
The API key is read from the environment variable named by ``api_key_env`` (default
``OPENAI_API_KEY``) and is never stored, logged or written to results.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from urllib.parse import urlparse

import openai

from robusteval.errors import BackendError, UserError
from robusteval.models.chat_format import chat_body, parse_chat_completion, plain_prompt
from robusteval.models.spec import ModelSpec
from robusteval.types import Completion, GenParams, Message

OPENAI_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


@dataclass
class OpenAIBackend:
    model: str
    base_url: str
    api_key_env: str
    key_required: bool
    max_concurrency: int = 16
    timeout_s: float = 600.0
    fingerprint: str = ""
    loglik_text = True

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIBackend:
        base_url = spec.option("base_url") or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        host = urlparse(base_url).hostname or ""
        # Local servers usually need no key; a hosted API or an explicitly named key variable does.
        key_required = "api_key_env" in spec.options or host not in LOCAL_HOSTS
        return cls(
            model=spec.name,
            base_url=base_url.rstrip("/"),
            api_key_env=spec.option("api_key_env", "OPENAI_API_KEY"),
            key_required=key_required,
            max_concurrency=spec.int_option("max_concurrency", 16),
            timeout_s=spec.float_option("timeout", 600.0),
        )

    async def start(self) -> None:
        key = os.environ.get(self.api_key_env)
        if not key and self.key_required:
            raise UserError(
                f"no API key for {self.base_url}: set the environment variable {self.api_key_env} "
                f"(or name another one with ?api_key_env=VAR in --model)"
            )
        # The engine owns retries and timeouts, so the SDK's own are off.
        self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key or "no-key", max_retries=0,
                                          timeout=self.timeout_s, http_client=_http_client(self.timeout_s))
        server_id = await self._server_model_id()
        self.fingerprint = f"openai:{self.base_url}:{self.model}:{server_id}"

    async def _server_model_id(self) -> str:
        """The id the server reports for the model (fingerprint); also proves the endpoint answers."""
        try:
            models = await self._client.models.list()
        except openai.APIConnectionError as exc:
            raise UserError(f"cannot reach {self.base_url} ({exc}); is the server running and "
                            "base_url right?") from None
        except openai.AuthenticationError:
            raise UserError(f"{self.base_url} rejected the API key in {self.api_key_env}") from None
        except openai.APIError:
            return "unlisted"  # some servers have no /models; the endpoint answered, which is enough
        ids = [m.id for m in models.data]
        if self.model in ids:
            return self.model
        return ids[0] if len(ids) == 1 else "unlisted"

    async def _post(self, path: str, body: dict) -> dict:
        """POST through the SDK's low-level client and decode the JSON; every failure becomes a
        BackendError the engine knows how to retry (or not). The raw bytes skip the SDK's per-call
        TypedDict transform and pydantic parsing: about 40% of the client's CPU per request
        (benchmarks/engine_throughput.py)."""
        try:
            raw = await self._client.post(path, body=body, cast_to=bytes)
        except openai.RateLimitError as exc:
            raise BackendError(f"429 rate limited: {_short(exc)}", rate_limited=True,
                               retry_after=_retry_after(exc.response)) from None
        except openai.APIStatusError as exc:
            retryable = exc.status_code >= 500 or exc.status_code in (408, 409)
            raise BackendError(f"HTTP {exc.status_code} from {path}: {_short(exc)}", retryable=retryable) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}") from None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise BackendError(f"bad response: invalid JSON ({exc})") from None

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        out = await self._post("/chat/completions", {"model": self.model, **chat_body(messages, params)})
        return parse_chat_completion(out, source=self.base_url)

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        """log P(continuation | plain-text prompt + prefix) from a completions endpoint that echoes
        prompt log-probabilities (vLLM, TGI and others; not OpenAI's chat models, nor llama.cpp)."""
        context = plain_prompt(messages) + prefix
        out = await self._post("/completions", {"model": self.model, "prompt": context + continuation,
                                                "max_tokens": 0, "echo": True, "logprobs": 1, "temperature": 0})
        try:
            lp = out["choices"][0]["logprobs"]
            offsets, tokens, values = lp["text_offset"], lp["tokens"], lp["token_logprobs"]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"bad /completions response (no echoed log-probabilities): {_short(exc)}") from None
        picked = [i for i, off in enumerate(offsets) if off >= len(context) and values[i] is not None]
        if not picked:
            raise BackendError("the server echoed no log-probabilities for the continuation", retryable=False)
        top = lp.get("top_logprobs") or [None] * len(tokens)
        greedy = all(top[i] and max(top[i], key=top[i].get) == tokens[i] for i in picked)
        return Completion(text="", loglik=float(sum(values[i] for i in picked)), greedy=greedy)

    async def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            await client.close()


def _http_client(timeout_s: float):
    """The SDK's aiohttp transport when installed: at 64 connections httpx's pool spends a third of
    the client's CPU scanning idle connections (measured in benchmarks/engine_throughput.py)."""
    try:
        return openai.DefaultAioHttpClient(timeout=timeout_s)
    except RuntimeError:  # the SDK was installed without its aiohttp extra
        return None


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP-date: fall back to exponential backoff


def _short(exc: Exception, limit: int = 200) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."
