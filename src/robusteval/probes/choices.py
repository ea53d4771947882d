"""Option perturbations (SCORE style): how the options are labelled, and where the gold one sits.

- ``format``: the same prompt with six label styles ``A:``, ``A)``, ``A.``, ``1.``, ``a:``, ``I:``.
- ``order``: for each label position L, the correct option swaps places with the option at L, so
  the gold answer moves to L and everything else stays put. A question with n options yields n
  order variants (fewer than another question with more options; never padded or invented).

Both keep the option *content*; `Variant.order` records where each original option went, so an
answer can be mapped back to content before consistency is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from robusteval.probes.templates import BASE_TEMPLATE, render
from robusteval.types import Item, Message, Variant

LETTERS = "ABCDEFGHIJKLMNOP"
ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII", "XIV", "XV", "XVI")


@dataclass(frozen=True)
class LabelStyle:
    name: str
    labels: tuple[str, ...]
    separator: str

    def take(self, n: int) -> tuple[str, ...]:
        return self.labels[:n]


LABEL_STYLES: dict[str, LabelStyle] = {
    s.name: s
    for s in (
        LabelStyle("A:", tuple(LETTERS), ":"),
        LabelStyle("A)", tuple(LETTERS), ")"),
        LabelStyle("A.", tuple(LETTERS), "."),
        LabelStyle("1.", tuple(str(i) for i in range(1, 17)), "."),
        LabelStyle("a:", tuple(LETTERS.lower()), ":"),
        LabelStyle("I:", ROMAN, ":"),
    )
}
BASE_STYLE = "A."


def make_variant(item: Item, family: str, name: str, style: LabelStyle, order: tuple[int, ...],
                 template: str = BASE_TEMPLATE) -> Variant:
    labels = style.take(len(order))
    options = "\n".join(f"{label}{style.separator} {item.options[i]}" for label, i in zip(labels, order))
    prompt = render(template, question=item.question, options=options, labels=labels, category=item.category)
    return Variant(item.id, family, name, labels, order, (Message("user", prompt),))


def format_variants(item: Item) -> list[Variant]:
    identity = tuple(range(len(item.options)))
    return [make_variant(item, "format", name, style, identity) for name, style in LABEL_STYLES.items()]


def order_variants(item: Item) -> list[Variant]:
    style = LABEL_STYLES[BASE_STYLE]
    variants = []
    for position in range(len(item.options)):
        order = list(range(len(item.options)))
        order[item.answer], order[position] = order[position], order[item.answer]
        variants.append(make_variant(item, "order", f"gold@{style.labels[position]}", style, tuple(order)))
    return variants


FAMILIES: dict[str, Callable[[Item], list[Variant]]] = {"format": format_variants, "order": order_variants}


def expand(item: Item, families: list[str]) -> list[Variant]:
    """All variants of one item for the requested families, in a stable order."""
    return [v for family in families for v in FAMILIES[family](item)]
