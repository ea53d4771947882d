"""Which variants a run asks: families vary one axis each, ``--cross`` varies several together.

Axes: the label style (`format`), the option order (`order`), the prompt template (`prompt`), the
template with worked examples before the question (`fewshot`), the sampled draw (`seeds`: the base
prompt asked ``Design.seeds`` times at ``Design.seed_temperature``, SCORE's non-greedy robustness;
each draw a variant ``seed0``, ``seed1``... whose ``Variant.draw`` the suite turns into the request's
sample index and backend seed, so K=5 then K=10 asks only the 5 new draws), and the question's text under any
perturbation of `probes.registry` (`typo`, `paraphrase`, `language:de`, ...). A perturbation's axis
is the original question plus its copies, which are written before expanding (rewrites go through
a model) and handed in as `Design.copies`; `expand` stays pure. Everything not varied stays at the
base: style ``A.``, original order, the base template, zero-shot, the original text. Identical
requests across families (the identity order and the ``A.`` format, the base template, the
original question) come out identical, so the engine asks them once.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from robusteval.labels import BASE_STYLE, LABEL_STYLES, Labelling, LabelStyle
from robusteval.probes.choices import format_options, gold_swaps, identity, rotations
from robusteval.probes.fewshot import ShotPool, fewshot_messages
from robusteval.probes.formats import GrammarFormat, formats_count
from robusteval.probes.registry import SAMPLING
from robusteval.probes.templates import BASE, Template, example_answer, render
from robusteval.types import Item, Message, Variant

FAMILIES = ("format", "order", "prompt", "fewshot", "formats", "circular", *SAMPLING)
ORIGINAL = "original"  # the unperturbed member of a perturbation family's group


@dataclass(frozen=True)
class Copy:
    """One perturbed copy of an item's text: its question, and its options where those were
    perturbed too (``--perturb-options``; None keeps the item's own)."""

    name: str  # "typo#1": the family and the copy's number, stable across runs
    question: str
    options: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Design:
    templates: tuple[Template, ...] = (BASE,)
    shots: ShotPool | None = None
    n_shots: int = 5
    multiturn: bool = True
    seed: int = 0
    seeds: int = 5  # draws of the seeds family
    seed_temperature: float = 0.7
    # item id -> perturbation family -> the copies that passed their checks (a copy that did not
    # is absent, so its group is smaller; the suite counts it)
    copies: Mapping[str, Mapping[str, tuple[Copy, ...]]] = field(default_factory=dict)
    # the template of every family but prompt/fewshot (SCORE's option-order prompt with --templates score)
    base: Template = BASE
    # the `formats` family's formats, drawn from FormatSpread's grammar with the run's seed (`probes.formats`)
    formats: tuple[GrammarFormat, ...] = ()


@dataclass(frozen=True)
class _Setting:
    """One point on the axes, with the name its varied parts give it."""

    name: str
    style: Labelling | None = None  # None: the template's own style, else the base style
    order: tuple[int, ...] | None = None
    template: Template | None = None  # None: the design's base template
    shots: bool = False
    question: str | None = None  # a perturbed copy's question (None: the item's)
    options: tuple[str, ...] | None = None  # a perturbed copy's options (None: the item's)
    draw: int | None = None  # a sampled draw (seeds family); None: the run's decoding


_FORMATS = tuple(_Setting(name, style=style) for name, style in LABEL_STYLES.items())  # the same for every item


def _axis(family: str, item: Item, design: Design) -> list[_Setting]:
    if family == "format":
        return list(_FORMATS)
    if family == "order":
        return [_Setting(name, order=order) for name, order in gold_swaps(item)]
    if family == "circular":
        return [_Setting(name, order=order) for name, order in rotations(item)]
    if (n := formats_count(family)) is not None:
        return [_Setting(f.name, style=f, template=f.template()) for f in design.formats[:n]]
    if family == "prompt":
        return [_Setting(t.name, template=t) for t in design.templates]
    if family == "fewshot":
        return [_Setting(f"{t.name}+{design.n_shots}shot", template=t, shots=True) for t in design.templates]
    if family == "seeds":
        return seed_settings(design)
    copies = design.copies.get(item.id, {})
    if family in copies:
        return [_Setting(ORIGINAL), *(_Setting(c.name, question=c.question, options=c.options)
                                      for c in copies[family])]
    raise ValueError(f"unknown family {family!r} (a perturbation's copies are written before expanding)")


def _combine(settings: tuple[_Setting, ...]) -> _Setting:
    out = _Setting("|".join(s.name for s in settings))
    for s in settings:
        if s.style is not None:
            out = replace(out, style=s.style)
        if s.order is not None:
            out = replace(out, order=s.order)
        if s.template is not None or s.shots:
            out = replace(out, template=s.template, shots=s.shots or out.shots)
        if s.question is not None:
            out = replace(out, question=s.question, options=s.options)
        if s.draw is not None:
            out = replace(out, draw=s.draw)
    return out


def seed_settings(design: Design) -> list[_Setting]:
    """The seeds family's axis: draw ``k`` is named ``seed{k}`` (stable as K grows)."""
    return [_Setting(f"seed{k}", draw=k) for k in range(design.seeds)]


def expand(item: Item, families: list[str] | tuple[str, ...], design: Design = Design(),
           cross: tuple[str, ...] = ()) -> list[Variant]:
    """All variants of one item: each family alone, then the crossed design if asked."""
    variants = [_build(item, family, s, design) for family in families for s in _axis(family, item, design)]
    if cross:
        axes = [_axis(family, item, design) for family in cross]
        name = crossed_name(cross)
        variants += [_build(item, name, _combine(combo), design) for combo in itertools.product(*axes)]
    return variants


def crossed_name(families: Sequence[str]) -> str:
    """The family name of a crossed design, as samples and results name it: ``format×order``."""
    return "×".join(families)


def style_of(template: Template) -> LabelStyle:
    """The label style a template shows when the format family does not vary it."""
    return LABEL_STYLES[template.style] if template.style else BASE_STYLE


def is_family(name: str) -> bool:
    """Whether ``name`` is a family of the design (``formats:N`` included), not a perturbation."""
    return name in FAMILIES or formats_count(name) is not None


def template_styles(families: Sequence[str], cross: Sequence[str], design: Design
                    ) -> list[tuple[Template, Labelling]]:
    """Every (template, label style) pair the design's variants show, for the template check
    (`probes.template_check`) before any request."""
    def templates(names: Sequence[str]) -> tuple[Template, ...]:
        return design.templates if {"prompt", "fewshot"} & set(names) else (design.base,)

    pairs: list[tuple[Template, Labelling]] = []
    for family in (*families, *cross):
        if (n := formats_count(family)) is not None:
            pairs += [(f.template(), f) for f in design.formats[:n]]
    for family in families:
        for template in templates([family]):
            styles = LABEL_STYLES.values() if family == "format" else (style_of(template),)
            pairs += [(template, style) for style in styles]
    if cross:
        for template in templates(cross):
            styles = LABEL_STYLES.values() if "format" in cross else (style_of(template),)
            pairs += [(template, style) for style in styles]
    return list(dict.fromkeys(pairs))


def _build(item: Item, family: str, s: _Setting, design: Design) -> Variant:
    shown = replace(item, options=s.options) if s.options is not None else item
    order = s.order or identity(shown)  # a copy may show one more option (add_distractor)
    template = s.template or design.base
    style = s.style or style_of(template)
    labels, options = format_options(shown, style, order)
    question = item.question if s.question is None else s.question
    prompt = render(template.text, question=question, options=template.options_lead + options, labels=labels,
                    category=item.category)
    messages: tuple[Message, ...] = (Message("user", prompt),)
    if s.shots:
        if design.shots is None:
            raise ValueError("the fewshot family needs a shot pool")
        shots = design.shots.pick(item, design.n_shots, design.seed)
        examples = []
        for shot in shots:
            shot_labels, shot_options = format_options(shot, style, identity(shot))
            shot_prompt = render(template.text, question=shot.question, options=template.options_lead + shot_options,
                                 labels=shot_labels, category=shot.category)
            # the shot answers in the template's own words ("The best answer is B.", "The answer is (B).")
            examples.append((shot_prompt, example_answer(template, shot_labels[shot.answer])))
        messages = fewshot_messages(examples, prompt, multiturn=design.multiturn)
    own = tuple(shown.options[i] for i in order) if s.options is not None else ()
    return Variant(item.id, family, s.name, labels, order, messages, draw=s.draw, options=own)
