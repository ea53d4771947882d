"""Every prompt template in use is checked against the chosen reader before any request.

A template asks for its answer in some words ("The best answer is [label]", SCORE's "The best answer
is (the_answer_letter)", MMLU-Pro's "The answer is (X)"); a reader reads some words. When the two do
not meet, every reply is invalid and the run reports accuracy 0.000 after paying for every request.
So, per (template, label style) the design shows:

- the template's **own example answer** (its answer phrase with the placeholder replaced by a
  label, `example_answer`) must read back to that label, for every label of the options shown;
- under a format that wraps its labels (the `formats` family's ``(iv)``, ``<B>``, ``[3]``), that
  answer with the label wrapped as the options show it must read back too;
- its **placeholder parroted** ("The best answer is X", where X is roman 10) must not read as a label.

A template without an answer phrase is checked with a reply that is just the label. A mismatch
stops the run with one message naming the template, the label style, the reader, and the readers
that would read it.
"""

from __future__ import annotations

from collections.abc import Iterable

from robusteval.errors import UserError
from robusteval.labels import Labelling
from robusteval.probes.templates import Template, answer_phrases, example_answer
from robusteval.readers.registry import READERS, Reader


def _problem(template: Template, style: Labelling, n: int, reader: Reader) -> str | None:
    labels = style.take(n)
    phrases = answer_phrases(template.text)
    for position, label in enumerate(labels):
        for shown in dict.fromkeys((label, style.wrap(label))):
            example = example_answer(template, shown)
            got = reader.read(example, labels)
            if got.position != position:
                read_as = f"label {got.label!r}" if got.position is not None else "invalid"
                return f"its own example answer {example!r} reads as {read_as}, not {label!r}"
    for phrase in phrases:
        parrot = f"{phrase.lead}{phrase.slot}"
        got = reader.read(parrot, labels)
        if got.status == "ok" and got.position is not None:
            return (f"a model that repeats {parrot!r} would be read as choosing option {got.position + 1} "
                    f"(label {got.label!r}): write the placeholder as a word, e.g. [label]")
    return None


def check_templates(pairs: Iterable[tuple[Template, Labelling]], reader: Reader, n_options: int) -> None:
    """Refuse the run (`UserError`) when ``reader`` cannot read what a (template, label style) pair
    asks for, with up to ``n_options`` options shown (every label of them is checked)."""
    for template, style in dict.fromkeys(pairs):
        problem = _problem(template, style, n_options, reader)
        if problem is None:
            continue
        others = [r.name for r in READERS.values() if r.name != reader.name and
                  _problem(template, style, n_options, r) is None]
        hint = (f"--reader {' or '.join(others)} reads it" if others else
                'no reader reads it: ask for "The best answer is [label]"')
        raise UserError(f"template {template.name!r} ({style.name} labels) does not match --reader {reader.name}: "
                        f"{problem}; {hint}, or change the template")

