"""Transforms of a whole multiple-choice item (promptbench's DyVal 2 / MPA "option" perturbations):
what changes is the options or what comes before the question, never which option is right.

- ``add_distractor``: one more option, the text of an option of another question of the same
  subject, never equal (case and spacing aside) to any option already shown, and never one that
  speaks of the other options ("All of the above", "Both A and B": shown with other options it
  could be right); appended after the others, so the gold keeps its label and the copy differs from
  the original by that option alone;
- ``irrelevant_context``: a passage on another topic before the question.

Each is a pure function of the item, the pool of items it may draw from, and a seeded generator;
a copy that cannot be made (no other question of the subject, every candidate already an option)
is refused with a reason, and counted with the other refused copies (`suites.mcq.copies`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from robusteval.types import Item

# passages on topics no benchmark question turns on, written for robusteval
PASSAGES = (
    "The town library reopened last spring after a renovation that added a reading garden and a small cafe.",
    "Autumn migrations bring thousands of cranes to the wetlands, where they rest for a few weeks each year.",
    "A local bakery became known for its rye bread, baked every morning in a wood-fired oven.",
    "The hiking trail climbs gently through pine forest before opening onto a wide meadow near the ridge.",
    "Volunteers repainted the community hall in bright colours and planted tulips along the path.",
    "The museum's new exhibit displays old maps of the harbour alongside photographs of its lighthouses.",
    "Every summer the village holds a music festival on the green, with stalls selling lemonade and pies.",
    "The river ferry has carried passengers between the two banks for more than a century.",
)


@dataclass(frozen=True)
class Transformed:
    """A copy of an item's text: its question and options, or None with the reason it was refused."""

    question: str | None
    options: tuple[str, ...] = ()
    reason: str | None = None


# an option that speaks of the others: "All of the above", "None of these", "Both A and B", "A and C"
_REFERS = re.compile(r"\b(?:above|below|these|the options|answers?)\b|^\s*(?:both|neither|none|all)\b|"
                     r"^\s*\(?[A-J]\)?\s*(?:,|and|or|&)\s*\(?[A-J]\)?\b", re.IGNORECASE)


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def add_distractor(item: Item, pool: Sequence[Item], rng: random.Random) -> Transformed:
    """``item`` with one more option drawn from another question of its subject."""
    shown = {_key(o) for o in item.options}
    candidates = sorted({o for other in pool if other.id != item.id and other.category == item.category
                         for o in other.options if _key(o) not in shown and o.strip() and not _REFERS.search(o)})
    if not candidates:
        return Transformed(None, reason="no_distractor")
    return Transformed(item.question, (*item.options, rng.choice(candidates)))


def irrelevant_context(item: Item, pool: Sequence[Item], rng: random.Random) -> Transformed:
    """``item`` with a passage on another topic before its question."""
    return Transformed(f"{rng.choice(PASSAGES)}\n\n{item.question}", item.options)
