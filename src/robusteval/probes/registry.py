"""Every perturbation of a prompt's text, registered in one place.

Two kinds, one interface (`probes/apply.py` `perturb_text` applies either):

- `TextPerturbation`: a pure function ``(text, rng) -> text``: the same text and seed always give
  the same output (typos, case, spacing, look-alike letters, OCR noise);
- `Rewrite`: an instruction a rewriter model follows through the engine (cached, accounted and
  resumable like every call), its output checked against invariants (still a question, no gold
  answer leaked, similar enough to the original) and asked again when it fails them.

Adding one is a function (or an instruction in `probes/rewrites.py`) and a line in `REGISTRY`
below; mcq (``--families``), consistency (``--variations``) and tree (``--lexical-kinds``,
``--paraphrase-kind``) then offer it with no other edit. Names with an argument (``language:sv``)
come from `PARAMETERISED`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from robusteval.data.language import language_problem
from robusteval.errors import UserError
from robusteval.probes import lexical, ocr, rewrites

TextFn = Callable[[str, random.Random], str]
RatedFn = Callable[[str, random.Random, float], str]  # (text, rng, probability per spot) -> text


@dataclass(frozen=True)
class Rated:
    """A `TextFn` at a probability it can be given another one of: tree's ``--typo-prob`` sets the
    rate of its lexical leaves (`TextPerturbation.at_rate`); elsewhere the default rate applies."""

    fn: RatedFn
    prob: float = 0.1

    def __call__(self, text: str, rng: random.Random) -> str:
        return self.fn(text, rng, self.prob)


@dataclass(frozen=True)
class TextPerturbation:
    """A pure perturbation: ``apply(text, rng)``."""

    name: str
    description: str
    apply: TextFn

    @property
    def kind(self) -> str:
        return "text"

    def at_rate(self, prob: float) -> TextFn:
        """``apply`` with ``prob`` as its per-spot probability (where it has one; else ``apply``)."""
        return Rated(self.apply.fn, prob) if isinstance(self.apply, Rated) else self.apply


@dataclass(frozen=True)
class Rewrite:
    """A rewrite by a model: ``instruction`` holds ``{text}``. ``same_language`` is False for
    translations (an English similarity model cannot compare across languages, and a translated
    question need not end in an English question mark)."""

    name: str
    description: str
    instruction: str
    same_language: bool = True

    @property
    def kind(self) -> str:
        return "rewrite"


Perturbation = TextPerturbation | Rewrite


@dataclass(frozen=True)
class Sampling:
    """A family that varies the decoding, not the text: the same prompt drawn several times at a
    temperature above 0, each draw its own cached request. Kept out of `REGISTRY` (which suites
    apply to texts); mcq's design (`probes.design`) offers these as families."""

    name: str
    description: str

    @property
    def kind(self) -> str:
        return "sampling"


def _lexical(kind: str, prob: float = 0.1) -> TextFn:
    """A LexEval lexical perturbation that always changes something it can change (`lexical.perturb`)."""
    return Rated(partial(lexical.perturb, kind), prob)


def _changing(fn: RatedFn, text: str, rng: random.Random, prob: float) -> str:
    for attempt in range(lexical.DRAWS):  # as lexical.perturb: a draw that changed nothing draws again
        out = fn(text, rng, min(1.0, prob * 2**attempt))
        if out != text:
            return out
    return text


def _always_changes(fn: RatedFn, prob: float = 0.1) -> TextFn:
    return Rated(partial(_changing, fn), prob)


def _rewrite(name: str, description: str) -> Rewrite:
    return Rewrite(name, description, rewrites.INSTRUCTIONS[name])


REGISTRY: dict[str, Perturbation] = {p.name: p for p in (
    TextPerturbation("typo", "keyboard typos: letters replaced by a QWERTY neighbour", _lexical("butter_fingers")),
    TextPerturbation("butter_fingers", "keyboard typos (LexEval's name for typo)", _lexical("butter_fingers")),
    TextPerturbation("swap_chars", "adjacent letters swapped inside words", _lexical("swap_chars")),
    TextPerturbation("shuffle_words", "the words in a random order", _lexical("shuffle_words")),
    TextPerturbation("random_upper", "random letters in upper case", _lexical("random_upper")),
    TextPerturbation("whitespace", "spaces dropped or words split", _lexical("whitespace")),
    TextPerturbation("visual", "letters replaced by look-alikes from other scripts", _lexical("visual")),
    TextPerturbation("ocr", "OCR misreadings: rn/m, l/1, O/0, cl/d", _always_changes(ocr.ocr_noise)),
    _rewrite("paraphrase", "the same request in other words"),
    _rewrite("formality", "a formal register"),
    _rewrite("informal", "a casual register"),
    _rewrite("politeness", "a very polite request"),
    _rewrite("impolite", "a curt request"),
    _rewrite("dialect", "a regional dialect of English"),
    _rewrite("spelling", "British <-> American spelling"),
    _rewrite("topicalisation", "the topic moved to the front"),
    _rewrite("friend", "asked on behalf of a friend"),
)}

# SCORE's non-greedy robustness: K draws at temperature T (mcq's --seeds, --seed-temperature).
SAMPLING: dict[str, Sampling] = {"seeds": Sampling("seeds", "the same prompt sampled K times at temperature T")}

PARAMETERISED: dict[str, Callable[[str], Perturbation]] = {
    "language": lambda code: Rewrite(f"language:{code}", f"translated into {code}", rewrites.translation(code),
                                     same_language=False),
}


def get(name: str) -> Perturbation:
    """The perturbation called ``name`` (``language:sv`` for parameterised ones); a `UserError`
    listing the available names otherwise."""
    if name in REGISTRY:
        return REGISTRY[name]
    head, sep, arg = name.partition(":")
    if sep and arg and head in PARAMETERISED:
        if head == "language" and (problem := language_problem(arg)):
            raise UserError(f"perturbation {name!r}: {problem}")
        return PARAMETERISED[head](arg)
    raise UserError(f"unknown perturbation {name!r}; available: {', '.join(available())}")


def available() -> list[str]:
    return [*REGISTRY, *(f"{head}:CODE" for head in PARAMETERISED)]


def is_perturbation(name: str) -> bool:
    try:
        get(name)
    except UserError:
        return False
    return True
