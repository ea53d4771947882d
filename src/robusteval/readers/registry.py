"""The answer readers by name (``--reader``): one file each, one `Reader` record, one lookup.

A reader turns a reply's text and the labels shown into an `Answer` (a shown position, invalid, or
failed). Which reader is used moves the headline number as much as the model does (MMLU-Pro's
released replies: accuracy 0.00 under one rule, 0.2-0.7 under the authors'), so every run records
its reader, and every template is checked against it before any request (`probes.templates`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from robusteval.errors import UserError
from robusteval.readers import inspect_ai, lenient, mmlu_pro, robusteval, score
from robusteval.types import Answer


@dataclass(frozen=True)
class Reader:
    """A named reading rule: ``read(text, labels) -> Answer``; ``summary`` is one line for help and reports."""

    name: str
    summary: str
    read: Callable[[str | None, tuple[str, ...]], Answer]


DEFAULT_READER = robusteval.NAME
READERS: dict[str, Reader] = {
    module.NAME: Reader(module.NAME, module.SUMMARY, reader)
    for module, reader in ((robusteval, robusteval.read_label), (score, score.read), (mmlu_pro, mmlu_pro.read),
                           (lenient, lenient.read), (inspect_ai, inspect_ai.read))
}


def get_reader(name: str | None = None) -> Reader:
    """The reader called ``name`` (the default, `robusteval`, for None); an unknown name is a user error."""
    reader = READERS.get(name or DEFAULT_READER)
    if reader is None:
        raise UserError(f"unknown --reader {name!r}; available: {', '.join(READERS)}")
    return reader
