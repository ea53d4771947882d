"""The OpenAI chat-completions wire format, shared by every backend that speaks it.

llama.cpp in-process returns the same JSON an OpenAI-compatible server sends, so one builder and one
parser serve both; keeping them in one place keeps the two backends' answers identical.
"""

from __future__ import annotations

from robusteval.errors import BackendError
from robusteval.types import Completion, GenParams, Message, TokenLogprob


def chat_body(messages: tuple[Message, ...], params: GenParams) -> dict:
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


def parse_chat_completion(out: object, *, source: str = "server") -> Completion:
    """Turn a chat.completion JSON object into a Completion; anything malformed is a BackendError."""
    if not isinstance(out, dict) or "error" in out or not out.get("choices"):
        error = out.get("error") if isinstance(out, dict) else out
        message = error.get("message") if isinstance(error, dict) else error
        raise BackendError(f"{source}: bad response: {str(message)[:200]}", retryable=not isinstance(out, dict)
                           or "error" not in out)
    try:
        choice = out["choices"][0]
        text = choice["message"]["content"]
        if text is None:
            raise BackendError(f"{source}: bad response: no message content")
        logprobs = None
        content = (choice.get("logprobs") or {}).get("content")
        if content is not None:
            logprobs = tuple(
                TokenLogprob(t["token"], t["logprob"],
                             tuple((a["token"], a["logprob"]) for a in t.get("top_logprobs") or ()))
                for t in content
            )
        usage = out.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens(out),
            completion_tokens=usage.get("completion_tokens", 0),
            finish_reason=choice.get("finish_reason"),
            logprobs=logprobs,
        )
    except (KeyError, IndexError, TypeError) as exc:
        raise BackendError(f"{source}: bad response: missing {exc}") from None


def prompt_tokens(out: dict) -> int:
    """The whole prompt's length in tokens, including tokens a server reused from its prompt cache.

    Some llama.cpp versions count only the tokens they evaluated in ``usage.prompt_tokens``; their
    ``timings`` split the prompt into ``prompt_n`` (evaluated) and ``cache_n`` (reused). The store
    keeps the full length, so the accounting does not depend on what happened to be cached and the
    estimate's tokens-per-character is measured on whole prompts."""
    reported = (out.get("usage") or {}).get("prompt_tokens", 0) or 0
    timings = out.get("timings") or {}
    return max(reported, (timings.get("prompt_n") or 0) + (timings.get("cache_n") or 0))


def plain_prompt(messages: tuple[Message, ...]) -> str:
    """The conversation as plain text, for base models scored through a completions endpoint."""
    return "\n\n".join(m.content for m in messages) + "\n"
