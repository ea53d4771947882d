"""The HalluciGen prompts: generate hyp+/hyp−, detect the hallucinated hypothesis, judge one hypothesis.

Pure functions from an item to chat messages; the only randomness (which hypothesis is shown
first) comes from a ``random.Random`` seeded by the run seed and the item.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from robusteval.data.hallucigen import HALLUCINATION_TYPES, LANGUAGE_NAMES, HalluItem
from robusteval.types import Message

GEN_MODES = ("joint", "separate")
DETECTION_PROMPTS = ("incorrect", "meaning", "support")
# --hallucination-types: "item" (the item's own type), "none" (no type named), "all", or a list of types
TYPE_CHOICES = ("item", "none", "all")

TYPE_INSTRUCTIONS = {
    "addition": "add a piece of information that is not in the source",
    "named-entity": "replace a name of a person, place or organisation with another one",
    "number": "change a number",
    "conversion": "change a unit of measurement (for example kilometres to miles) but keep the number",
    "date": "change a date, a day or a time",
    "gender": "change the gender of a person",
    "pronoun": "change a pronoun (for example we to they)",
    "antonym": "replace a word with its opposite",
    "tense": "change the tense of the verb (for example past to future)",
    "negation": "negate the statement",
    "natural": "change the meaning in a subtle way that still sounds natural",
}
assert tuple(TYPE_INSTRUCTIONS) == HALLUCINATION_TYPES


def language(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def _task(item: HalluItem) -> tuple[str, str]:
    """(noun, description of the output) for the item's scenario: a paraphrase or a translation."""
    if item.scenario == "translation":
        return "translation", f"translation into {language(item.target_lang)}"
    return "paraphrase", f"paraphrase in {language(item.source_lang)}"


def requested_types(item: HalluItem, choice: tuple[str, ...]) -> tuple[str, ...]:
    """The hallucination types the generator is asked for: () means "any hallucination"."""
    if choice == ("none",):
        return ()
    if choice == ("item",):
        return (item.type,) if item.type in TYPE_INSTRUCTIONS else ()
    if choice == ("all",):
        return HALLUCINATION_TYPES
    return tuple(choice)


def _hallucination_instruction(types: tuple[str, ...]) -> str:
    if not types:
        return "contains a hallucination: information that is changed, added or not supported by the source"
    if len(types) == 1:
        return f"contains a hallucination of type {types[0]}: {TYPE_INSTRUCTIONS[types[0]]}"
    listed = "; ".join(f"{t}: {TYPE_INSTRUCTIONS[t]}" for t in types)
    return f"contains a hallucination of one of these types ({listed})"


def _source_line(item: HalluItem) -> str:
    return f"Source ({language(item.source_lang)}): {item.source}"


# A worked example of the two-line format, per language: (sentence, paraphrase, the paraphrase with
# a changed number, the sentence with that changed number). Our own sentences.
EXAMPLES = {
    "en": ("The shop opens at eight.", "The shop opens its doors at eight.", "The shop opens its doors at ten.",
           "The shop opens at ten."),
    "sv": ("Affären öppnar klockan åtta.", "Butiken öppnar sina dörrar klockan åtta.",
           "Butiken öppnar sina dörrar klockan tio.", "Affären öppnar klockan tio."),
    "de": ("Der Laden öffnet um acht Uhr.", "Der Laden macht um acht Uhr auf.", "Der Laden macht um zehn Uhr auf.",
           "Der Laden öffnet um zehn Uhr."),
    "fr": ("Le magasin ouvre à huit heures.", "Le magasin ouvre ses portes à huit heures.",
           "Le magasin ouvre ses portes à dix heures.", "Le magasin ouvre à dix heures."),
}


def format_example(item: HalluItem) -> str:
    """The example shown with the joint prompt (a number hallucination; it shows the format only)."""
    source_lang, target_lang = item.source_lang, item.target_lang
    if source_lang not in EXAMPLES or target_lang not in EXAMPLES:
        source_lang = target_lang = "en"
    source = EXAMPLES[source_lang][0]
    if item.scenario == "translation":
        plus, minus = EXAMPLES[target_lang][0], EXAMPLES[target_lang][3]
    else:
        plus, minus = EXAMPLES[source_lang][1], EXAMPLES[source_lang][2]
    return f"Source ({language(source_lang)}): {source}\nhyp+: {plus}\nhyp-: {minus}"


def generation_joint(item: HalluItem, types: tuple[str, ...]) -> tuple[Message, ...]:
    """One prompt asking for both hypotheses in a strict two-line format, with a worked example."""
    _, output = _task(item)
    text = (f"Write two versions of the source sentence.\n"
            f"hyp+: a faithful {output} with exactly the same meaning as the source.\n"
            f"hyp-: a {output} that looks similar but {_hallucination_instruction(types)}.\n"
            f"Reply with exactly two lines, hyp+: and hyp-:, and nothing else.\n\n"
            f"Example of the format:\n{format_example(item)}\n\nNow your turn.\n{_source_line(item)}")
    return (Message("user", text),)


def generation_faithful(item: HalluItem) -> tuple[Message, ...]:
    """The baseline's first prompt: a faithful paraphrase/translation alone."""
    noun, output = _task(item)
    text = (f"Write a faithful {output} of the source sentence below, with exactly the same meaning. "
            f"Reply with the {noun} only.\n\n{_source_line(item)}")
    return (Message("user", text),)


def generation_hallucinated(item: HalluItem, types: tuple[str, ...]) -> tuple[Message, ...]:
    """The baseline's second prompt: a paraphrase/translation with a hallucination."""
    noun, output = _task(item)
    text = (f"Write a {output} of the source sentence below that {_hallucination_instruction(types)}. "
            f"Reply with the {noun} only.\n\n{_source_line(item)}")
    return (Message("user", text),)


@dataclass(frozen=True)
class Shown:
    """A pair as shown to a detector: ``swapped`` means the item's hyp2 is shown first."""

    first: str
    second: str
    swapped: bool

    @property
    def order(self) -> str:
        return "21" if self.swapped else "12"

    def original(self, position: int) -> str:
        """The item's label (hyp1/hyp2) of the hypothesis shown at ``position`` (1 or 2)."""
        return f"hyp{3 - position if self.swapped else position}"


def seeded_swap(seed: int, *keys: str) -> bool:
    """Whether to show hyp2 first: a fair coin per (seed, keys), the same on every run."""
    return random.Random(":".join((str(seed), *keys))).random() < 0.5


def shown(item: HalluItem, swapped: bool) -> Shown:
    assert item.hyp1 is not None and item.hyp2 is not None
    return Shown(item.hyp2, item.hyp1, True) if swapped else Shown(item.hyp1, item.hyp2, False)


DETECTION_QUESTIONS = {
    "incorrect": "Which hypothesis is an incorrect {noun} of the source?",
    "meaning": "Which hypothesis has a different meaning from the source?",
    "support": "Which hypothesis contains information that is not supported by the source?",
}


def detection(item: HalluItem, pair: Shown, variant: str) -> tuple[Message, ...]:
    """Source and two hypotheses; the reply must be hyp1 or hyp2 (the positions as shown)."""
    noun, _ = _task(item)
    target = language(item.target_lang)
    question = DETECTION_QUESTIONS[variant].format(noun=noun)
    text = (f"{_source_line(item)}\nhyp1 ({target}): {pair.first}\nhyp2 ({target}): {pair.second}\n\n"
            f"One of the two hypotheses is a hallucinated {noun}. {question} "
            f"Answer with exactly one word: hyp1 or hyp2.")
    return (Message("user", text),)


def judge(item: HalluItem, hypothesis: str) -> tuple[Message, ...]:
    """The fixed yes/no prompt of the LLM judge: yes = faithful, no = hallucinated."""
    noun, _ = _task(item)
    text = (f"{_source_line(item)}\n{noun.capitalize()} ({language(item.target_lang)}): {hypothesis}\n\n"
            f"Does the {noun} say exactly the same as the source, with nothing added, removed or changed? "
            f"Answer yes or no.")
    return (Message("user", text),)


__all__ = [
    "DETECTION_PROMPTS",
    "GEN_MODES",
    "TYPE_CHOICES",
    "TYPE_INSTRUCTIONS",
    "Shown",
    "detection",
    "generation_faithful",
    "generation_hallucinated",
    "generation_joint",
    "judge",
    "requested_types",
    "seeded_swap",
    "shown",
]
