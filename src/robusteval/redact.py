"""Keeping secrets out of every text robusteval stores or shows.

Why here, in one place: error texts come from many hands (a server's error body, an exception from
the HTTP client, a backend's own message) and end in the store, ``samples.jsonl``, ``results.json``
and the terminal. A server that echoes the Authorization header must not put the key into any of
them, so every error text passes through `redact` before it is kept. The API key itself is known
only to the backend that read it from the environment; it registers the value with `add_secret`,
and from then on `redact` removes that exact value wherever it appears, beside the generic shapes
of a credential (``Bearer ...``, ``sk-...``, ``api_key=...``).

Beyond error texts, every text robusteval writes passes through a door that removes the registered
values (never the generic shapes, which would garble a model's reply or a dataset that discusses
tokens): the run folder's files (`files.atomic_write`, `files.atomic_write_chunks`, the samples
writer), the response store and the export ledger, and the terminal (`redacted_terminal`, around
every command). A command that starts no backend (``cache stats``, ``report``) still knows the keys:
`add_env_secrets` registers the values of the environment's key-named variables (``OPENAI_API_KEY``,
``HF_TOKEN``, ...) at its start.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

REDACTED = "[redacted]"
# Shorter values are not secrets anyone uses, and replacing them would garble ordinary text.
MIN_SECRET_CHARS = 6

_PATTERNS = (
    # An Authorization header value, as a server may echo it: "Bearer sk-..." (not one already redacted).
    (re.compile(r"\b(Bearer)\s+(?!\[redacted\])[^\s\"',;}\]]+", re.IGNORECASE), rf"\1 {REDACTED}"),
    # Key-shaped tokens of the common providers (OpenAI sk-/sk-proj-, Hugging Face hf_, Groq gsk_).
    (re.compile(r"\b(sk|hf|gsk|xai)([-_])[A-Za-z0-9_\-]{12,}"), rf"\1\2{REDACTED}"),
    # key=value / "api_key": "value" in echoed requests or URLs ("api_key_env=VAR" names a variable).
    (re.compile(r"((?:api[_-]?key|access[_-]?token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;}]+",
                re.IGNORECASE), rf"\1{REDACTED}"),
)

# Environment variables whose value is a credential: the name ends in KEY, TOKEN, SECRET, PASSWORD,
# CREDENTIAL(S) or PASSWD (OPENAI_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY). Their values must also look
# like one (no blank, at least ENV_SECRET_CHARS long): SORT_KEY=question must not erase "question".
SECRET_VARIABLE = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
ENV_SECRET_CHARS = 12

_secrets: tuple[str, ...] = ()  # longest first: a key may contain another
_lock = threading.Lock()


def add_secret(value: str | None) -> None:
    """Remember a secret value (an API key read from the environment) so `redact` removes it."""
    global _secrets
    if value and len(value) >= MIN_SECRET_CHARS and value not in _secrets:
        with _lock:  # a new tuple, swapped in whole: `redact` never sees a set change size under it
            _secrets = tuple(sorted({*_secrets, value}, key=len, reverse=True))


def add_env_secrets(environ: Mapping[str, str] | None = None) -> None:
    """Register the value of every key-named environment variable (`SECRET_VARIABLE`), so a command
    that starts no backend still keeps the keys out of what it prints and writes."""
    for name, value in (os.environ if environ is None else environ).items():
        if SECRET_VARIABLE.search(name) and len(value) >= ENV_SECRET_CHARS and not any(c.isspace() for c in value):
            add_secret(value)


def has_secret(text: str) -> bool:
    """Whether ``text`` contains a registered secret value verbatim."""
    return any(secret in text for secret in _secrets)


def redact(text: str, *, patterns: bool = True) -> str:
    """``text`` with every registered secret value replaced, and with ``patterns`` (error texts)
    every credential-shaped token too; a model's reply gets only the first (it may discuss tokens)."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if patterns:
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
    return text


def redact_chunks(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` redacted of the registered values (`redact` without patterns), a value split between
    two chunks included: the end of each chunk that could begin a secret waits for the next one."""
    held = ""
    for chunk in chunks:
        text = redact(held + chunk, patterns=False)
        keep = max((len(s) for s in _secrets), default=1) - 1
        cut = max(0, len(text) - keep)
        held = text[cut:]
        if cut:
            yield text[:cut]
    if held:
        yield held


class _RedactedStream:
    """A text stream (stdout, stderr) that writes through `redact` without patterns; anything else
    (``isatty``, ``fileno``, ``encoding``, ``flush``) is the wrapped stream's."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text, patterns=False))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def redacted_terminal() -> Iterator[None]:
    """Inside: everything printed to stdout or stderr (``print``, rich consoles, warnings) is redacted
    of the registered secrets, which include the environment's keys (`add_env_secrets`)."""
    add_env_secrets()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _RedactedStream(out), _RedactedStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
