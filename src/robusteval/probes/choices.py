"""Option perturbations (SCORE style): how the options are labelled, and where the gold one sits.

- label styles: ``A:``, ``A)``, ``A.``, ``1.``, ``a:``, ``I:`` (the `format` family);
- cyclic rotations: every rotation of the option list (the `circular` family);
- gold swaps: for each label position L, the correct option swaps places with the option at L, so
  the gold moves to L and everything else stays put (the `order` family). A question with n options
  yields n swaps: fewer than a question with more options, never padded or invented. A swap that
  shows the same texts as an earlier one (the gold's text repeated at L, as in some AGIEval rows)
  is left out: it would be the same prompt scored against another gold.

Both keep the option *content*; `Variant.order` records where each original option went, so an
answer can be mapped back to content before consistency is computed.
"""

from __future__ import annotations

from robusteval.labels import LETTERS, Labelling
from robusteval.types import Item


def identity(item: Item) -> tuple[int, ...]:
    return tuple(range(len(item.options)))


def gold_swaps(item: Item) -> list[tuple[str, tuple[int, ...]]]:
    """(name, order) for each position the gold can be swapped to: ``gold@A``, ``gold@B``, ...;
    a swap that would show the same option texts as another (the published order first) is left out."""
    repeated = len(set(item.options)) < len(item.options)  # else every swap shows other texts
    out, shown = [], set()
    for position in range(len(item.options)):
        order = list(identity(item))
        order[item.answer], order[position] = order[position], order[item.answer]
        if repeated:
            texts = tuple(item.options[i] for i in order)
            if position != item.answer and (texts == item.options or texts in shown):
                continue
            shown.add(texts)
        out.append((f"gold@{LETTERS[position]}", tuple(order)))
    return out


def rotations(item: Item) -> list[tuple[str, tuple[int, ...]]]:
    """(name, order) for every cyclic rotation of the options (the `circular` family, OpenCompass's
    CircularEval): rotation k moves each option k places down, the last ones wrapping to the top, as
    OpenCompass's pattern k (``BCDA`` for k=1 of four: A's text is shown at B), so ``rot0`` is the
    published order and the gold visits every position once."""
    n = len(item.options)
    return [(f"rot{k}", tuple((p - k) % n for p in range(n))) for k in range(n)]


def format_options(item: Item, style: Labelling, order: tuple[int, ...]) -> tuple[tuple[str, ...], str]:
    """The labels shown and the option block in ``style``'s layout, options in ``order``."""
    labels = style.take(len(order))
    return labels, style.block(labels, tuple(item.options[i] for i in order))
