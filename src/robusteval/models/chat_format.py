"""The OpenAI chat-completions wire format, shared by every backend that speaks it.

llama.cpp in-process returns the same JSON an OpenAI-compatible server sends, so one builder and one
parser serve both; keeping them in one place keeps the two backends' answers identical.
"""

from __future__ import annotations

import math
import re
from typing import Any

from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message, TokenLogprob


def chat_body(messages: tuple[Message, ...], params: GenParams) -> dict[str, Any]:
    """The request body; optional fields are sent only when set, as servers differ on defaults."""
    body = {
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
    }
    if params.seed is not None:
        body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    if params.logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = params.top_logprobs
    return body


def join_stream(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The chat.completion object that a stream of chat.completion.chunk objects adds up to: the
    deltas' text and log-probabilities joined, the last finish reason, the usage and timings of the
    final chunks. An error object anywhere is returned as it came (`parse_chat_completion` reports it).

    Why: llama.cpp in-process can stop a decode only between streamed tokens (its callback says
    stop), so the embedded backend streams; joined, a stream is the reply a plain request gets."""
    text: list[str] = []
    logprobs: list[dict[str, Any]] = []
    finish_reason = None
    whole: dict[str, Any] = {"object": "chat.completion"}
    for chunk in chunks:
        if not isinstance(chunk, dict) or "error" in chunk:
            return chunk if isinstance(chunk, dict) else {"error": {"message": f"bad stream chunk {_clip(chunk)}"}}
        for key in ("usage", "timings", "model", "id"):
            if chunk.get(key) is not None:
                whole[key] = chunk[key]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            content = (choice.get("logprobs") or {}).get("content")
            if isinstance(content, list):
                logprobs.extend(content)
            finish_reason = choice.get("finish_reason") or finish_reason
    whole["choices"] = [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": "".join(text)},
                         "logprobs": {"content": logprobs} if logprobs else None}]
    return whole


def parse_chat_completion(out: object, *, source: str = "server") -> Completion:
    """Turn a chat.completion JSON object into a Completion; anything else is a BackendError.

    Why strict: whatever this returns is stored and served as the model's answer on every rerun. A
    reply that is valid JSON but not a chat completion (content a number, a list of parts or null,
    no choices, usage fields of the wrong type) is a failed attempt, retried by the engine and never
    cached. An error object in a 200 reply is not retried (the server meant it)."""
    if not isinstance(out, dict):
        raise BackendError(f"{source}: bad response: a JSON {type(out).__name__}, not an object")
    if "error" in out:
        error = out["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise BackendError(f"{source}: error in the reply: {_clip(message)}", retryable=False)
    choices = out.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BackendError(f"{source}: bad response: no choices ({_clip(choices)})")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise BackendError(f"{source}: bad response: choices[0] has no message object")
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not (isinstance(finish_reason, str) and FINISH_REASON.fullmatch(finish_reason)):
        raise BackendError(f"{source}: bad response: finish_reason {_clip(finish_reason)} is not a reason")
    text = message.get("content")
    if not isinstance(text, str):
        raise BackendError(f"{source}: bad response: {_why_no_text(message, text)}")
    if finish_reason in NOT_AN_ANSWER:
        raise BackendError(f"{source}: bad response: no answer, finish_reason {finish_reason!r}")
    return Completion(text=text, prompt_tokens=prompt_tokens(out),
                      completion_tokens=_usage_count(out, "completion_tokens"), finish_reason=finish_reason,
                      logprobs=_logprobs(choice.get("logprobs"), source))


# A finish reason is a short identifier ("stop", "length", "eos_token"); servers differ in which.
FINISH_REASON = re.compile(r"[A-Za-z0-9_\-]{1,40}")
# Reasons whose text is not the model's answer: filtered, or a tool call where none was offered.
NOT_AN_ANSWER = {"content_filter", "tool_calls", "function_call"}


def _why_no_text(message: dict[str, Any], content: object) -> str:
    if content is None and message.get("tool_calls"):
        return "the reply is a tool call, not text (no tools were offered)"
    if content is None and isinstance(message.get("refusal"), str):
        return f"the model refused: {_clip(message['refusal'])}"
    if content is None:
        return "message.content is null"
    return f"message.content is a JSON {_json_type(content)}, not a string"


def _logprobs(raw: object, source: str) -> tuple[TokenLogprob, ...] | None:
    """Token log-probabilities, checked: each token a string, each log-probability a number."""
    content = raw.get("content") if isinstance(raw, dict) else None
    if content is None:
        return None
    try:
        tokens = tuple(
            TokenLogprob(_str(t["token"]), _logprob(t["logprob"]),
                         tuple((_str(a["token"]), _logprob(a["logprob"])) for a in t.get("top_logprobs") or ()))
            for t in content
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BackendError(f"{source}: bad response: malformed logprobs ({type(exc).__name__}: {_clip(exc)})") from None
    return tokens


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"token {_clip(value)} is not a string")
    return value


def _logprob(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-3:
        raise ValueError(f"log-probability {_clip(value)} is not a number <= 0")
    return float(value)


def _usage_count(out: dict[str, Any], field: str) -> int:
    """A token count from ``usage``: missing or null (a server that does not count) is 0; anything
    but a non-negative integer is a malformed reply."""
    usage = out.get("usage")
    if usage is None:
        return 0
    if not isinstance(usage, dict):
        raise BackendError(f"bad response: usage is a JSON {_json_type(usage)}, not an object")
    return _count(usage.get(field), f"usage.{field}")


def _count(value: object, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BackendError(f"bad response: {name} is {_clip(value)}, not a token count")
    return value


def prompt_tokens(out: dict[str, Any]) -> int:
    """The whole prompt's length in tokens, including tokens a server reused from its prompt cache.

    Some llama.cpp versions count only the tokens they evaluated in ``usage.prompt_tokens``; their
    ``timings`` split the prompt into ``prompt_n`` (evaluated) and ``cache_n`` (reused). The store
    keeps the full length, so the accounting does not depend on what happened to be cached and the
    estimate's tokens-per-character is measured on whole prompts."""
    reported = _usage_count(out, "prompt_tokens")
    timings = out.get("timings")
    if not isinstance(timings, dict):  # llama.cpp's own extension: a hint, never a reason to refuse
        return reported
    split = [n for n in (timings.get("prompt_n"), timings.get("cache_n"))
             if isinstance(n, int) and not isinstance(n, bool) and n > 0]
    return max(reported, sum(split))


def _json_type(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _clip(value: object, limit: int = 200) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "..."


def parse_echo_loglik(out: object, context_chars: int, *, source: str = "server") -> Completion:
    """log P(continuation | context) from a ``/completions`` reply that echoed the prompt's token
    log-probabilities (``echo: true, logprobs: 1, max_tokens: 0``): the sum over the tokens that start
    at or after character ``context_chars``, and whether each was the most likely token. Anything else
    is a BackendError: a live reply and an imported batch line are checked alike."""
    try:
        lp = out["choices"][0]["logprobs"]  # type: ignore[index]
        offsets, tokens, values = lp["text_offset"], lp["tokens"], lp["token_logprobs"]
        picked = [i for i, off in enumerate(offsets) if off >= context_chars and values[i] is not None]
        if not picked:
            raise BackendError(f"{source}: the server echoed no log-probabilities for the continuation",
                               retryable=False)
        top = lp.get("top_logprobs") or [None] * len(tokens)
        greedy = all(top[i] and max(top[i], key=top[i].get) == tokens[i] for i in picked)
        loglik = sum(values[i] for i in picked)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise BackendError(f"{source}: bad /completions response (no echoed log-probabilities): "
                           f"{type(exc).__name__}: {_clip(exc)}") from None
    if isinstance(loglik, bool) or not isinstance(loglik, (int, float)) or not loglik <= 0:
        raise BackendError(f"{source}: bad /completions response: log-likelihood {loglik!r} is not a number <= 0")
    return Completion(text="", loglik=float(loglik), greedy=bool(greedy))


def plain_prompt(messages: tuple[Message, ...]) -> str:
    """The conversation as plain text, for base models scored through a completions endpoint."""
    return "\n\n".join(m.content for m in messages) + "\n"
