"""Which shown option a reply names by its text: "unenforceable, because the agreement was violative of
the parol evidence rule." names that option even without its label.

Texts are compared as SQuAD normalises answers (`aliases.normalize_answer`: case, punctuation, articles
and spacing do not count), and an option's text that starts with its own label ("B) Paris" shown at B)
is compared without it. An option is named where its whole text appears in the reply as whole words,
outside the places where a longer option's text appears ("wrong, not wrong" inside "not wrong, not
wrong" is not a mention of the shorter one). Options whose texts are equal once normalised are one
answer, named by the first position that shows it.
"""

from __future__ import annotations

import re

from robusteval.readers.aliases import normalize_answer


def named_options(text: str, options: tuple[str, ...], labels: tuple[str, ...] = ()) -> frozenset[int]:
    """The positions (0-based) of the options whose text ``text`` names; more than one is ambiguous."""
    reply = f" {normalize_answer(text)} "
    norms = [_option_norm(option, labels[p] if p < len(labels) else None) for p, option in enumerate(options)]
    spans: dict[int, list[tuple[int, int]]] = {}
    for p, norm in enumerate(norms):
        if norm and norm not in norms[:p]:  # a repeated text is the first position's answer
            spans[p] = [(m.start(), m.start() + len(norm)) for m in re.finditer(rf"(?<= ){re.escape(norm)}(?= )",
                                                                                 reply)]
    named: set[int] = set()
    claimed: list[tuple[int, int]] = []
    for p in sorted(spans, key=lambda q: -len(norms[q])):  # longer texts first: they own their words
        free = [s for s in spans[p] if not any(a <= s[0] and s[1] <= b for a, b in claimed)]
        if free:
            named.add(p)
        claimed.extend(spans[p])
    return frozenset(named)


def same_option(options: tuple[str, ...], position: int, labels: tuple[str, ...] = ()) -> int:
    """The first shown position whose text equals ``position``'s (normalised): the one `named_options`
    names for that answer."""
    norms = [_option_norm(option, labels[p] if p < len(labels) else None) for p, option in enumerate(options)]
    return norms.index(norms[position]) if norms[position] else position


def _option_norm(option: str, label: str | None) -> str:
    if label:
        option = re.sub(rf"^\s*[(\[]?{re.escape(label)}[.):\]]\s+", "", option)
    return normalize_answer(option)
