"""Keeping secrets out of every text robusteval stores or shows.

Why here, in one place: error texts come from many hands (a server's error body, an exception from
the HTTP client, a backend's own message) and end in the store, ``samples.jsonl``, ``results.json``
and the terminal. A server that echoes the Authorization header must not put the key into any of
them, so every error text passes through `redact` before it is kept. The API key itself is known
only to the backend that read it from the environment; it registers the value with `add_secret`,
and from then on `redact` removes that exact value wherever it appears, beside the generic shapes
of a credential (``Bearer ...``, ``sk-...``, ``api_key=...``).
"""

from __future__ import annotations

import re
import threading

REDACTED = "[redacted]"
# Shorter values are not secrets anyone uses, and replacing them would garble ordinary text.
MIN_SECRET_CHARS = 6

_PATTERNS = (
    # An Authorization header value, as a server may echo it: "Bearer sk-...".
    (re.compile(r"\b(Bearer)\s+[^\s\"',;}\]]+", re.IGNORECASE), rf"\1 {REDACTED}"),
    # Key-shaped tokens of the common providers (OpenAI sk-/sk-proj-, Hugging Face hf_, Groq gsk_).
    (re.compile(r"\b(sk|hf|gsk|xai)([-_])[A-Za-z0-9_\-]{12,}"), rf"\1\2{REDACTED}"),
    # key=value / "api_key": "value" in echoed requests or URLs ("api_key_env=VAR" names a variable).
    (re.compile(r"((?:api[_-]?key|access[_-]?token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;}]+",
                re.IGNORECASE), rf"\1{REDACTED}"),
)

_secrets: set[str] = set()
_lock = threading.Lock()


def add_secret(value: str | None) -> None:
    """Remember a secret value (an API key read from the environment) so `redact` removes it."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _secrets.add(value)


def has_secret(text: str) -> bool:
    """Whether ``text`` contains a registered secret value verbatim."""
    return any(secret in text for secret in _secrets)


def redact(text: str, *, patterns: bool = True) -> str:
    """``text`` with every registered secret value replaced, and with ``patterns`` (error texts)
    every credential-shaped token too; a model's reply gets only the first (it may discuss tokens)."""
    for secret in sorted(_secrets, key=len, reverse=True):  # longest first: a key may contain another
        if secret in text:
            text = text.replace(secret, REDACTED)
    if patterns:
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
    return text
