"""The text a variant has before any question is put in it, for ``--budget-covariates text``: what
the budgeted estimate embeds to learn a variant's accuracy from the variants worded like it.

- ``prompt``: the template's text (what PromptEval embeds); ``fewshot``: its template's text;
- ``format``: the base template rendered on one fixed example question under the label style (a
  label style has no text of its own; rendered, ``A.`` and ``(a)`` and ``I:`` differ as shown); the
  ``formats`` family's formats likewise;
- a crossed design: its axes' texts joined, for the axes that have one;
- ``order``, ``seeds`` and perturbations of the question: no text. What sets their variants apart
  is the item's own text (moved options, a sampled draw, a perturbed copy), not a text shared by
  every item, so ``text`` tells their estimate nothing (``gold`` does, for ``order``).
"""

from __future__ import annotations

from collections.abc import Sequence

from robusteval.probes.design import Design, expand
from robusteval.probes.formats import formats_count
from robusteval.types import Item

# the fixed question a label style is shown on (any question would do; this one is never asked)
EXAMPLE = Item("variant-text-example", "Which planet is closest to the Sun?",
               ("Venus", "Mercury", "Earth", "Mars"), 1, category="astronomy")
CROSS = "×"  # `probes.design.crossed_name`'s separator


def axis_texts(family: str, design: Design) -> dict[str, str]:
    """Variant name -> text for one family (no cross); empty for a family without text."""
    if family == "prompt":
        return {t.name: t.text for t in design.templates}
    if family == "fewshot":
        return {f"{t.name}+{design.n_shots}shot": t.text for t in design.templates}
    if family == "format" or formats_count(family) is not None:
        return {v.name: v.messages[-1].content for v in expand(EXAMPLE, (family,), design)}
    return {}


def variant_texts(family: str, variants: Sequence[str], design: Design) -> list[str | None] | None:
    """Each of ``family``'s ``variants``' text (None for a variant whose text is unknown), or None
    when the family has no text at all. A crossed family (``prompt×order``) joins the texts of its
    axes that have one, name part by name part (``step-by-step|gold@B``)."""
    axes = family.split(CROSS)
    maps = [axis_texts(axis, design) for axis in axes]
    if not any(maps):
        return None
    out: list[str | None] = []
    for name in variants:
        parts = name.split("|") if len(axes) > 1 else [name]
        texts = [m.get(part) for m, part in zip(maps, parts) if m]
        out.append(None if len(parts) != len(axes) or None in texts else "\n\n".join(t for t in texts if t))
    return out
