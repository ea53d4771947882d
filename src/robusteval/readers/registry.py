"""The answer readers by name (``--reader``): one file each, one `Reader` record, one lookup.

A reader turns a reply's text and the labels shown into an `Answer` (a shown position, invalid, or
failed); the default also reads the shown options' texts (`read_reply`, `readers.content`). Which
reader is used moves the headline number as much as the model does (MMLU-Pro's released replies:
accuracy 0.00 under one rule, 0.2-0.7 under the authors'), so every run records its reader, and
every template is checked against it before any request (`probes.templates`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from robusteval.errors import UserError
from robusteval.readers import content, inspect_ai, lenient, mmlu_pro, robusteval, score
from robusteval.types import Answer


@dataclass(frozen=True)
class Reader:
    """A named reading rule: ``read(text, labels) -> Answer``; ``summary`` is one line for help and reports.

    ``read`` is the rule for the label a template asks for (what `probes.template_check` checks);
    ``read_options``, where a reader has one, reads a reply with the shown options' texts too."""

    name: str
    summary: str
    read: Callable[[str | None, tuple[str, ...]], Answer]
    read_options: Callable[[str | None, tuple[str, ...], tuple[str, ...]], Answer] | None = None

    def read_reply(self, text: str | None, labels: tuple[str, ...], options: tuple[str, ...] = ()) -> Answer:
        """A model's reply to the shown ``labels`` and ``options`` (their texts), as a run reads it."""
        if self.read_options is not None:
            return self.read_options(text, labels, options)
        return self.read(text, labels)


DEFAULT_READER = robusteval.NAME
READERS: dict[str, Reader] = {
    module.NAME: Reader(module.NAME, module.SUMMARY, reader, by_options)
    for module, reader, by_options in ((robusteval, robusteval.read_label, content.read), (score, score.read, None),
                                       (mmlu_pro, mmlu_pro.read, None), (lenient, lenient.read, None),
                                       (inspect_ai, inspect_ai.read, None))
}


def get_reader(name: str | None = None) -> Reader:
    """The reader called ``name`` (the default, `robusteval`, for None); an unknown name is a user error."""
    reader = READERS.get(name or DEFAULT_READER)
    if reader is None:
        raise UserError(f"unknown --reader {name!r}; available: {', '.join(READERS)}")
    return reader
