"""Which variants a run asks: families vary one axis each, ``--cross`` varies several together.

Axes: the label style (`format`), the option order (`order`), the prompt template (`prompt`), and
the template with worked examples before the question (`fewshot`). Everything not varied stays at
the base: style ``A.``, original order, the base template, zero-shot. Identical requests across
families (the identity order and the ``A.`` format, the base template) come out identical, so the
engine asks them once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from robusteval.probes.choices import BASE_STYLE, LABEL_STYLES, LabelStyle, format_options, gold_swaps, identity
from robusteval.probes.fewshot import ShotPool, fewshot_messages
from robusteval.probes.templates import BASE, Template, render
from robusteval.types import Item, Message, Variant

FAMILIES = ("format", "order", "prompt", "fewshot")


@dataclass(frozen=True)
class Design:
    templates: tuple[Template, ...] = (BASE,)
    shots: ShotPool | None = None
    n_shots: int = 5
    multiturn: bool = True
    seed: int = 0


@dataclass(frozen=True)
class _Setting:
    """One point on the axes, with the name its varied parts give it."""

    name: str
    style: LabelStyle = BASE_STYLE
    order: tuple[int, ...] | None = None
    template: Template = BASE
    shots: bool = False


_FORMATS = tuple(_Setting(name, style=style) for name, style in LABEL_STYLES.items())  # the same for every item


def _axis(family: str, item: Item, design: Design) -> list[_Setting]:
    if family == "format":
        return list(_FORMATS)
    if family == "order":
        return [_Setting(name, order=order) for name, order in gold_swaps(item)]
    if family == "prompt":
        return [_Setting(t.name, template=t) for t in design.templates]
    if family == "fewshot":
        return [_Setting(f"{t.name}+{design.n_shots}shot", template=t, shots=True) for t in design.templates]
    raise ValueError(f"unknown family {family!r}")


def _combine(settings: tuple[_Setting, ...]) -> _Setting:
    out = _Setting("|".join(s.name for s in settings))
    for s in settings:
        if s.style is not BASE_STYLE:
            out = replace(out, style=s.style)
        if s.order is not None:
            out = replace(out, order=s.order)
        if s.template is not BASE or s.shots:
            out = replace(out, template=s.template, shots=s.shots or out.shots)
    return out


def expand(item: Item, families: list[str] | tuple[str, ...], design: Design = Design(),
           cross: tuple[str, ...] = ()) -> list[Variant]:
    """All variants of one item: each family alone, then the crossed design if asked."""
    variants = [_build(item, family, s, design) for family in families for s in _axis(family, item, design)]
    if cross:
        axes = [_axis(family, item, design) for family in cross]
        name = "×".join(cross)
        variants += [_build(item, name, _combine(combo), design) for combo in itertools.product(*axes)]
    return variants


def _build(item: Item, family: str, s: _Setting, design: Design) -> Variant:
    order = s.order or identity(item)
    labels, options = format_options(item, s.style, order)
    prompt = render(s.template.text, question=item.question, options=options, labels=labels, category=item.category)
    messages: tuple[Message, ...] = (Message("user", prompt),)
    if s.shots:
        if design.shots is None:
            raise ValueError("the fewshot family needs a shot pool")
        shots = design.shots.pick(item, design.n_shots, design.seed)
        examples = []
        for shot in shots:
            shot_labels, shot_options = format_options(shot, s.style, identity(shot))
            shot_prompt = render(s.template.text, question=shot.question, options=shot_options, labels=shot_labels,
                                 category=shot.category)
            examples.append((shot_prompt, f"The best answer is {shot_labels[shot.answer]}."))
        messages = fewshot_messages(examples, prompt, multiturn=design.multiturn)
    return Variant(item.id, family, s.name, labels, order, messages)
