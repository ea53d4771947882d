"""Every perturbation of a prompt's text, registered in one place (the only registry of them).

Two kinds, one interface (`probes/apply.py` `perturb_text` applies either):

- `TextPerturbation`: a pure function with one contract, ``(text, rng, rate) -> text``: the same
  text, generator state and rate always give the same output (typos, case, spacing, look-alike
  letters, OCR noise, HELM's and NL-Augmenter's rules, invisible characters);
- `ItemTransform`: a pure function of a multiple-choice item (its options, or what comes before
  its question: `probes.option_transforms`), mcq only;
- `Rewrite`: an instruction a rewriter model follows through the engine (cached, accounted and
  resumable like every call), its output checked against invariants (still a question, no gold
  answer leaked, similar enough to the original) and asked again when it fails them.

Adding one is a function (or an instruction in `probes/rewrites.py`) and a line in `REGISTRY`
below; mcq (``--families``), consistency (``--variations``), tree (``--lexical-kinds``,
``--paraphrase-kind``) and ``robusteval perturb`` then offer it with no other edit. Names with an
argument (``language:sv``) come from `PARAMETERISED`; any text perturbation with a rate takes
another one after ``@`` (``typo@0.3``), and one without a rate refuses it.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from robusteval.data.language import language_problem
from robusteval.errors import UserError
from robusteval.probes import helm, lexical, nlaugmenter, ocr, option_transforms, rewrites, unicode_attacks
from robusteval.types import Item

Fn = Callable[[str, random.Random, float], str]  # the one contract: (text, rng, rate) -> text
TextFn = Callable[[str, random.Random], str]  # a perturbation at a fixed rate (tree's leaves)

ORIGINS = ("robusteval", "helm", "nlaugmenter")


@dataclass(frozen=True)
class TextPerturbation:
    """A pure perturbation ``fn(text, rng, rate)``. ``rate`` is the default probability per spot
    (None: the perturbation has none, e.g. a shuffle or lowercasing, and refuses one). ``lexeval``
    marks the LexEval tree's default leaves. ``origin``: whose strings it reproduces byte for byte
    when seeded as that tool seeds (`apply.seeded_rng`). ``prepare`` loads the data it needs (a
    `UserError` naming what is missing when it cannot), called by `get` before any run starts.
    ``references``: HELM perturbs an instance's references (an item's options) before its input,
    from the same generator."""

    name: str
    description: str
    fn: Fn
    rate: float | None = 0.1
    lexeval: bool = False
    origin: str = "robusteval"
    prepare: Callable[[], object] | None = None
    references: bool = False  # HELM's should_perturb_references: an item's options go first (`apply.helm_item`)
    missing: str | None = None  # why its data is unavailable here (offline): a run makes no copy (`get`)

    @property
    def kind(self) -> str:
        return "text"

    def apply(self, text: str, rng: random.Random, rate: float | None = None) -> str:
        """``text`` perturbed at ``rate`` (the default rate when None)."""
        if rate is not None and self.rate is None:
            raise UserError(f"{self.name} has no rate ({self.description}): give it without one")
        return self.fn(text, rng, (self.rate or 0.0) if rate is None else rate)

    def at_rate(self, rate: float) -> TextFn:
        """``apply`` at ``rate`` (tree's ``--typo-prob``; refused by `check_rate` for one without a rate)."""
        return partial(_at, self, rate if self.rate is not None else None)

    def with_rate(self, rate: float) -> TextPerturbation:
        """The same perturbation under the name ``name@rate`` with ``rate`` as its default."""
        if self.rate is None:
            raise UserError(f"{self.name}@{rate:g}: {self.name} has no rate ({self.description}); "
                            f"give it as {self.name}")
        if not 0 <= rate <= 1:
            raise UserError(f"{self.name}@{rate:g}: a rate is a probability in [0, 1]")
        return replace(self, name=f"{self.name}@{rate:g}", rate=rate)


def _at(p: TextPerturbation, rate: float | None, text: str, rng: random.Random) -> str:
    return p.apply(text, rng, rate)


@dataclass(frozen=True)
class Rewrite:
    """A rewrite by a model: ``instruction`` holds ``{text}``. ``same_language`` is False for
    translations (an English similarity model cannot compare across languages, and a translated
    question need not end in an English question mark). ``options_only``: it rewrites a question's
    options, not its text (mcq's ``option_paraphrase``)."""

    name: str
    description: str
    instruction: str
    same_language: bool = True
    options_only: bool = False

    @property
    def kind(self) -> str:
        return "rewrite"


@dataclass(frozen=True)
class ItemTransform:
    """A pure transform of a multiple-choice item ``fn(item, pool, rng)``: ``pool`` is the run's
    items (a distractor is drawn from them). The gold never changes; a copy it cannot make is
    refused with a reason. Only mcq has items with options: other suites refuse it."""

    name: str
    description: str
    fn: Callable[[Item, Sequence[Item], random.Random], option_transforms.Transformed]

    @property
    def kind(self) -> str:
        return "item"


Perturbation = TextPerturbation | Rewrite | ItemTransform


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


def _changing(fn: Fn) -> Fn:
    """``fn`` redrawn, the rate doubled, while a draw changes nothing (`lexical.redraw`)."""
    return partial(lexical.redraw, fn)


def _checked(fn: Fn, text: str, rng: random.Random, rate: float) -> str:
    return unicode_attacks.unseen(text, fn(text, rng, rate))


def _unseen(name: str, description: str, fn: Fn) -> TextPerturbation:
    """An attack a person cannot see: redrawn while nothing changed, and each output checked to read
    as its input does (`unicode_attacks.reads_same`); one that would not is never used."""
    return TextPerturbation(name, description + " (reads the same)", _changing(partial(_checked, fn)))


def _lexeval(name: str, description: str, fn: Fn, rate: float | None = 0.1) -> TextPerturbation:
    return TextPerturbation(name, description, _changing(fn), rate, lexeval=True)


def _helm(name: str, description: str, fn: Fn, rate: float | None, prepare: Callable[[], object] | None = None,
          references: bool = False) -> TextPerturbation:
    return TextPerturbation(f"helm:{name}", description, fn, rate, origin="helm", prepare=prepare,
                            references=references)


def _nlaug(name: str, description: str, fn: Fn, rate: float) -> TextPerturbation:
    return TextPerturbation(f"nlaug:{name}", description, fn, rate, origin="nlaugmenter")


def _rewrite(name: str, description: str) -> Rewrite:
    return Rewrite(name, description, rewrites.INSTRUCTIONS[name])


REGISTRY: dict[str, Perturbation] = {p.name: p for p in (
    TextPerturbation("typo", "keyboard typos: letters replaced by a QWERTY neighbour",
                     _changing(lexical.butter_fingers)),
    _lexeval("butter_fingers", "keyboard typos with LexEval's map: any touching key, digits and punctuation too "
                               "('d0g', ';azy')", lexical.lexeval_typos),
    _lexeval("shuffle_words", "the words in a random order (no rate: a shuffle is all or nothing)",
             lexical.shuffle_words, rate=None),
    _lexeval("random_upper", "random letters in upper case", lexical.random_upper),
    _lexeval("swap_chars", "adjacent letters swapped inside words", lexical.swap_chars),
    _lexeval("whitespace", "spaces dropped or words split", lexical.whitespace),
    _lexeval("visual", "letters replaced by look-alikes from other scripts", lexical.visual),
    TextPerturbation("ocr", "OCR misreadings: rn/m, l/1, O/0, cl/d (robusteval's rules, not NL-Augmenter's "
                            "Tesseract OCR)", _changing(ocr.ocr_noise)),
    # attacks a person cannot see: each output reads the same (`unicode_attacks.reads_same`)
    _unseen("invisible", "zero-width characters inside words", unicode_attacks.invisible),
    _unseen("tags", "words repeated in invisible Unicode tag characters", unicode_attacks.tags),
    _unseen("bidi", "bidirectional controls: isolates, marks, and words stored reversed under right-to-left "
                    "override", unicode_attacks.bidi),
    _unseen("homoglyph", "letters replaced by Unicode confusables from Cyrillic and Greek", unicode_attacks.homoglyph),
    _unseen("unicode_forms", "compatibility and decomposed forms NFKC folds back: ligatures, no-break spaces, "
                             "combining accents", unicode_attacks.unicode_forms),
    # HELM's perturbations, byte for byte under HELM's seeding (rates: HELM's run-spec defaults)
    _helm("typos", "HELM TyposPerturbation: keyboard typos with HELM's key map", helm.typos, 0.1),
    _helm("misspelling", "HELM MisspellingPerturbation: common misspellings (Wikipedia's list)",
          helm.misspelling, 0.2, helm.misspellings),
    _helm("contraction", "HELM ContractionPerturbation: 'she is' -> \"she's\"", helm.contraction, None,
          helm.contraction_map),
    _helm("expansion", "HELM ExpansionPerturbation: \"she's\" -> 'she is'", helm.expansion, None,
          helm.contraction_map),
    _helm("lowercase", "HELM LowerCasePerturbation: the whole text in lower case", helm.lowercase, None),
    _helm("extra_space", "HELM ExtraSpacePerturbation: every space doubled", helm.extra_space, None),
    _helm("space", "HELM SpacePerturbation: every run of spaces becomes 1-3 spaces", helm.space, None),
    _helm("mild_mix", "HELM MildMixPerturbation (its robustness runs): lowercase, contraction, misspellings, "
                      "1-3 spaces", helm.mild_mix, 0.1, helm.misspellings),
    _helm("filler", "HELM FillerWordsPerturbation: filler words and hedges inserted", helm.filler, 0.3,
          helm.filler_phrases),
    _helm("synonym", "HELM SynonymPerturbation: WordNet synonyms (needs the helm-synonym extra and WordNet 3.0: "
                     "make helm-synonym)",
          helm.synonym, 0.5, helm.synonym_data),
    _helm("dialect", "HELM DialectPerturbation: Standard American English words to AAVE (HELM's word list, "
          "downloaded on first use)",
          helm.dialect, 1.0, helm.dialect_mapping, references=True),
    _helm("person_name", "HELM PersonNamePerturbation: first names, white to black American (HELM's list, "
          "downloaded on first use)",
          helm.person_name, 1.0, helm.person_names, references=True),
    _helm("gender", "HELM GenderPerturbation (pronouns): male pronouns to female", helm.gender_pronouns, 1.0,
          helm.gender_mappings, references=True),
    _helm("gender_terms", "HELM GenderPerturbation (terms): male terms to female", helm.gender_terms, 1.0,
          helm.gender_mappings, references=True),
    # NL-Augmenter's transformations, byte for byte under NL-Augmenter's seeding (seed 0)
    _nlaug("butter_fingers", "NL-Augmenter ButterFingersPerturbation: typos with its wide key map",
           nlaugmenter.butter_fingers, 0.05),
    _nlaug("whitespace", "NL-Augmenter WhitespacePerturbation: spaces removed (rate) and added (rate/2)",
           nlaugmenter.whitespace, 0.1),
    _nlaug("random_upper", "NL-Augmenter RandomUpperPerturbation: a share of the characters upper-cased",
           nlaugmenter.random_upper, 0.1),
    _rewrite("paraphrase", "the same request in other words"),
    _rewrite("formality", "a formal register"),
    _rewrite("informal", "a casual register"),
    _rewrite("politeness", "a very polite request"),
    _rewrite("impolite", "a curt request"),
    _rewrite("dialect", "a regional dialect of English"),
    _rewrite("spelling", "British <-> American spelling"),
    _rewrite("topicalisation", "the topic moved to the front"),
    _rewrite("friend", "asked on behalf of a friend"),
    # promptbench's option transforms (DyVal 2 / MPA): mcq only, the gold unchanged
    ItemTransform("add_distractor", "one more option, taken from another question of the same subject (never "
                  "equal to an option shown), after the others", option_transforms.add_distractor),
    ItemTransform("irrelevant_context", "a passage on another topic before the question",
                  option_transforms.irrelevant_context),
    Rewrite("option_paraphrase", "each option of several words in other words, the question unchanged; a rewrite "
            "that changes a number or becomes another option is refused (mcq only)",
            rewrites.INSTRUCTIONS["option_paraphrase"], options_only=True),
)}

# SCORE's non-greedy robustness: K draws at temperature T (mcq's --seeds, --seed-temperature).
SAMPLING: dict[str, Sampling] = {"seeds": Sampling("seeds", "the same prompt sampled K times at temperature T")}

PARAMETERISED: dict[str, Callable[[str], Perturbation]] = {
    "language": lambda code: Rewrite(f"language:{code}", f"translated into {code}", rewrites.translation(code),
                                     same_language=False),
}

# Known but not reproducible here, and why (asked for by name, they end in this message).
UNAVAILABLE: dict[str, str] = {
    "nlaug:ocr": "NL-Augmenter's OcrPerturbation renders the text as an image (trdg 1.6.0: a font and a textured "
                 "background drawn at random) and reads it back with Tesseract 4's LSTM engine (tesserocr); its "
                 "output is that engine's reading of that image, not a rule, so it cannot be reproduced without the "
                 "same renderer, fonts and engine; `ocr` is robusteval's rule-based OCR noise, not NL-Augmenter's",
}


def _lookup(name: str) -> Perturbation:
    if name in REGISTRY:
        return REGISTRY[name]
    base, at, rate_text = name.rpartition("@")
    if at and base in REGISTRY:
        p = REGISTRY[base]
        if not isinstance(p, TextPerturbation):
            raise UserError(f"{name}: {base} is a rewrite by a model; only text perturbations take a rate")
        try:
            rate = float(rate_text)
        except ValueError:
            raise UserError(f"{name}: the rate after @ must be a number in [0, 1]") from None
        return p.with_rate(rate)
    if name in UNAVAILABLE:
        raise UserError(f"{name} is not available: {UNAVAILABLE[name]}")
    head, sep, arg = name.partition(":")
    if sep and arg and head in PARAMETERISED:
        if head == "language" and (problem := language_problem(arg)):
            raise UserError(f"perturbation {name!r}: {problem}")
        return PARAMETERISED[head](arg)
    raise UserError(f"unknown perturbation {name!r}; available: {', '.join(available())}")


# (perturbation, data folder) -> why its run-time data is unavailable: asked, and warned about, once a process
_MISSING: dict[tuple[str, str], str] = {}
UNAVAILABLE_DATA = "data unavailable offline"  # the rejection reason of every copy of a skipped perturbation


def get(name: str, *, skip_missing: bool = True) -> Perturbation:
    """The perturbation called ``name`` (``language:sv`` for parameterised ones, ``typo@0.3`` for
    another rate), its data loaded; a `UserError` listing the available names, or saying what data
    is missing, otherwise.

    Data HELM downloads at run time (its dialect list, names, synonym table) cannot be had offline.
    A run asked for such a perturbation still runs: with ``skip_missing`` (runs) the perturbation
    comes back with ``missing`` set, a warning naming the file goes to stderr once, and every copy
    is rejected with that reason (recorded in the run's data audit); without it (``robusteval
    perturb``, whose only job is to show the copies) the `helm.DataUnavailable` error ends the command."""
    p = _lookup(name)
    if not isinstance(p, TextPerturbation) or p.prepare is None:
        return p
    key = (name, str(helm.data_dir()))
    if key not in _MISSING:
        try:
            p.prepare()
            return p
        except helm.DataUnavailable as exc:
            if not skip_missing:
                raise
            _MISSING[key] = str(exc)
            print(f"robusteval: warning: {name} SKIPPED, no copy of it is made ({UNAVAILABLE_DATA}): {exc}",
                  file=sys.stderr)
    if not skip_missing:
        raise helm.DataUnavailable(_MISSING[key])
    return replace(p, missing=_MISSING[key])


def available() -> list[str]:
    return [*REGISTRY, *(f"{head}:CODE" for head in PARAMETERISED)]


def is_perturbation(name: str) -> bool:
    """Whether ``name`` names a perturbation (without loading its data: `get` says what is missing)."""
    try:
        _lookup(name)
    except UserError:
        return False
    return True


def lexeval_defaults() -> tuple[str, ...]:
    """The LexEval tree's default lexical leaves, in registry order."""
    return tuple(n for n, p in REGISTRY.items() if isinstance(p, TextPerturbation) and p.lexeval)


def describe() -> list[tuple[str, str, str]]:
    """(name, kind, one-line description) of every perturbation, for ``--help`` and ``perturb --list``."""
    rows = []
    for name, p in REGISTRY.items():
        kind = p.kind if not isinstance(p, TextPerturbation) else (
            p.origin if p.origin != "robusteval" else "text")
        rate = f" [rate {p.rate:g}]" if isinstance(p, TextPerturbation) and p.rate is not None else ""
        rows.append((name, kind, p.description + rate))
    rows.append(("language:CODE", "rewrite", "translated into the language CODE (e.g. language:sv)"))
    return rows


def help_text() -> str:
    """The names, one line each, for ``--help``."""
    return "\n".join(f"  {name:<20} {kind:<11} {text}" for name, kind, text in describe())
