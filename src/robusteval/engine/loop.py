"""The event loop every run uses: uvloop where it is installed, asyncio's own otherwise.

Why: at high concurrency against a fast server the client's CPU per request bounds throughput
(docs/performance.md), and most of that CPU is event-loop and transport work that uvloop does in
C. ``ROBUSTEVAL_LOOP=asyncio`` falls back to the standard loop (to compare, or to debug).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    """The loop `run` will use: "uvloop" or "asyncio"."""
    if os.environ.get("ROBUSTEVAL_LOOP", "").lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(coro: Coroutine[Any, Any, T], loop: str | None = None) -> T:
    """Run ``coro`` to completion on ``loop`` ("uvloop" or "asyncio"; default: `loop_name()`)."""
    if (loop or loop_name()) == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


__all__ = ["loop_name", "run"]
