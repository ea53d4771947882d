"""The option labels of a multiple-choice prompt (``A``, ``B``...; ``1.``; ``I:``) and their styles.

On the floor, below both `probes` (which writes options under a style) and `readers` (which read a
label back out of a reply), so that neither imports the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

LETTERS = "ABCDEFGHIJKLMNOP"
ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII", "XIV", "XV", "XVI")


@dataclass(frozen=True)
class LabelStyle:
    name: str
    labels: tuple[str, ...]
    separator: str

    def take(self, n: int) -> tuple[str, ...]:
        return self.labels[:n]

    def wrap(self, label: str) -> str:
        """The label as the option block shows it before its text's separator: bare here."""
        return label

    def block(self, labels: tuple[str, ...], texts: tuple[str, ...]) -> str:
        """The option block: one labelled option per line."""
        return "\n".join(f"{label}{self.separator} {text}" for label, text in zip(labels, texts))


class Labelling(Protocol):
    """How a variant labels and lays out its options: a `LabelStyle` of the `format` family, or a
    FormatSpread grammar format of the `formats` family (`probes.formats.GrammarFormat`)."""

    @property
    def name(self) -> str: ...

    def take(self, n: int) -> tuple[str, ...]: ...

    def wrap(self, label: str) -> str: ...

    def block(self, labels: tuple[str, ...], texts: tuple[str, ...]) -> str: ...


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
BASE_STYLE = LABEL_STYLES["A."]
