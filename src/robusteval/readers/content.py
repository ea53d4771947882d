"""The default reader's whole rule: the requested sentence, else a label stated in another common
phrasing, else the one option whose text the reply names; each answer says which (``read_as``).

A small model often answers without the requested sentence: "A) enforceable ... The answer is A." or
just an option's text, "unenforceable, because the agreement was violative of the parol evidence
rule." Read by the sentence alone such replies are invalid and count as wrong, so the figures
measure the reading rule more than the model. Here, in order:

1. ``label``: the label after the last "The best answer is" (`readers.robusteval`), as before;
2. ``phrase``: a label stated as `lenient` reads it ("the answer is B", "Answer: (B)", a reply that
   starts with "B." or "(B)"), unless the reply names another option's text (or several);
3. ``text``: the reply names exactly one shown option's text (`readers.option_text`) and no label;
4. ``invalid``: none of these, or they disagree (two options' texts, a label and another option's
   text): nothing is guessed.

The share read each way is kept beside the figures (samples, terminal, results.json, report), so the
rule stays visible. The named readers (`score`, `mmlu-pro`, `lenient`, `inspect`) keep their rules.
"""

from __future__ import annotations

from dataclasses import replace

from robusteval.readers.lenient import stated_label
from robusteval.readers.option_text import named_options, same_option
from robusteval.readers.robusteval import read_label
from robusteval.types import READ_AS, Answer

__all__ = ["READ_AS", "read"]


def read(text: str | None, labels: tuple[str, ...], options: tuple[str, ...] = ()) -> Answer:
    """A reply to the shown ``labels`` (and the shown ``options``' texts, in the same order), read by
    the rules above; without ``options`` the texts are not read."""
    strict = read_label(text, labels)
    if text is None or strict.status == "failed":
        return strict
    if strict.status == "ok":
        return replace(strict, read_as="label")
    named = named_options(text, options, labels) if options else frozenset()
    stated = stated_label(text, labels)
    if stated is not None and stated.position is not None:
        agrees = stated.position >= len(options) or named <= {same_option(options, stated.position, labels)}
        if agrees:
            return replace(stated, read_as="phrase")
    elif len(named) == 1:
        (position,) = named
        return Answer(position, labels[position], "ok", read_as="text")
    return replace(strict, read_as="invalid")
