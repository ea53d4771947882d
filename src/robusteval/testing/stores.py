"""What a response store serves, read as a run would (for tests of what was kept or replaced)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from robusteval.engine.store import Store


def served(path: Path, keys: Iterable[str]) -> list[str | None]:
    """The text the store at ``path`` serves for each key; None where it serves nothing (absent, changed)."""
    store = Store(path)
    try:
        return [None if (hit := store.get(key)) is None else hit.completion.text for key in keys]
    finally:
        store.close()
