"""The `formats` family: plausible prompt formats sampled from FormatSpread's grammar (Sclar et al.,
ICLR 2024, "Quantifying Language Models' Sensitivity to Spurious Features in Prompt Design").

A multiple-choice question is laid out as FormatSpread lays out its multiple-choice tasks
(Question / Options / Answer, options enumerated after an "Options" descriptor):

    {Question}{S}{question}{O}{Options}{S}{I}{W(N(1))}{P}{text 1}{E}{W(N(2))}{P}{text 2}...{O}{Answer}{S}

where each letter is one atomic choice of the grammar (`GrammarFormat`'s fields): ``S`` the
descriptors' separator, the descriptors' casing, ``O`` the spacing between fields, ``I`` the space
between "Options" and its enumeration, ``E`` the spacing between options, ``P`` the separator between
an option's label and its text, ``W`` the item wrapper and ``N`` the numbering. The value lists are
the grammar's; the consistency rules (`is_valid`) are its sanity checks, applied to this layout: a
descriptor needs a separator, fields need a spacing, "Options" is followed by whitespace only, and a
line break inside a field (a separator) needs line breaks in the spacings around it. The grammar's
``chosen_separator_text_and_option`` does not arise: the options carry no descriptor word.

`sample_formats` draws formats as FormatSpread's sampler does (every choice uniform, invalid ones
refused, formats that render the same kept once), seeded by the run's seed: the same N formats for
every model of a run, and the first N of a longer draw are the shorter one. A format is asked under
robusteval's instruction ("End your reply with 'The best answer is [label]'"), so its reader reads
its own label style: a reply may give the label bare or wrapped as the format wraps it (``(iv)``,
``<B>``, ``Ⅲ``), which `probes.template_check` checks before any request.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from robusteval.errors import UserError
from robusteval.labels import LETTERS, ROMAN
from robusteval.probes.templates import INSTRUCTION, Template

# the grammar's value lists (grammar_definition.py); ' -- ' is listed twice in the spacings, as there
SEPARATORS = ("", "::: ", ":: ", ": ", " \n\t", "\n    ", " : ", " - ", " ", "\n ", "\n\t", ":", "::", "- ", "\t")
SPACES = ("", " ", "\n", " \n", " -- ", "  ", "; \n", " || ", " <sep> ", " -- ", ", ", " \n ", " , ", "\n ", ". ",
          " ,  ")
CASINGS: dict[str, Callable[[str], str]] = {"as-is": str, "title": str.title, "upper": str.upper, "lower": str.lower}
WRAPPERS = ("({})", "{}.", "{})", "{} )", "[{}]", "<{}>")
# numbering -> the labels it gives (FormatSpread's: x + 1, A, a, the Unicode roman numerals, i, I)
NUMBERINGS: dict[str, tuple[str, ...]] = {
    "1": tuple(str(i) for i in range(1, 17)),
    "A": tuple(LETTERS),
    "a": tuple(LETTERS.lower()),
    "Ⅰ": tuple(chr(0x2160 + i) for i in range(12)),  # U+2160..216B: twelve characters, so at most 12 options
    "i": tuple(r.lower() for r in ROMAN),
    "I": ROMAN,
}
DESCRIPTORS = ("Question", "Options", "Answer")
DEFAULT_COUNT = 20
FAMILY = "formats"


@dataclass(frozen=True)
class GrammarFormat:
    """One format: its atomic choices (the covariates a search can read, `describe`) and a name
    (``f01``, ``f02``... in the order drawn)."""

    name: str
    separator: str  # after each descriptor: "Question: "
    casing: str  # a `CASINGS` key, applied to the descriptors
    field_space: str  # between the fields (question, options, answer)
    options_space: str  # between the "Options" descriptor and the first option
    option_space: str  # between two options
    option_separator: str  # between an option's label and its text
    wrapper: str  # a `WRAPPERS` pattern around the label: "({})"
    numbering: str  # a `NUMBERINGS` key

    def descriptor(self, word: str) -> str:
        return CASINGS[self.casing](word) + self.separator

    def take(self, n: int) -> tuple[str, ...]:
        """The labels of ``n`` options (bare: "iv", not "(iv)"), as readers match them."""
        return NUMBERINGS[self.numbering][:n]

    def wrap(self, label: str) -> str:
        return self.wrapper.format(label)

    def block(self, labels: tuple[str, ...], texts: tuple[str, ...]) -> str:
        """The options enumerated: wrapped label, separator, text, joined by the option spacing."""
        return self.option_space.join(f"{self.wrap(label)}{self.option_separator}{text}"
                                      for label, text in zip(labels, texts))

    def layout(self) -> str:
        """The format with ``{question}`` and ``{options}`` placeholders, ending in the answer descriptor."""
        q, o, a = (self.descriptor(w) for w in DESCRIPTORS)
        return f"{q}{{question}}{self.field_space}{o}{self.options_space}{{options}}{self.field_space}{a}"

    def template(self) -> Template:
        """The prompt: robusteval's instruction, a blank line, the format (as FormatSpread puts its
        task definition before the formatted input; its code leaves three blank lines there with no
        examples, an empty block of demonstrations between them, which we do not copy)."""
        return Template(self.name, f"{INSTRUCTION}\n\n{self.layout()}")

    def describe(self) -> dict[str, str]:
        """The atomic choices by name (results.json ``design.formats``; covariates of a search)."""
        return {k: v for k, v in asdict(self).items() if k != "name"}

    def capacity(self) -> int:
        """The most options the numbering can label."""
        return len(NUMBERINGS[self.numbering])


def is_valid(f: GrammarFormat) -> bool:
    """FormatSpread's sanity checks (``holistic_node_format_sanity_checks``) on this layout."""
    if f.separator == "" or f.field_space == "":  # a descriptor needs a separator; fields a spacing
        return False
    if not f.options_space.isspace():  # the "Options" descriptor is followed by whitespace only
        return False
    if "\n" in f.option_separator and "\n" not in f.option_space:  # options broken inside need breaks between
        return False
    if "\n" not in f.field_space and ("\n" in f.separator or "\n" in f.option_separator):
        return False  # a line break inside a field only where the fields are on lines of their own
    return not ("\n" not in f.options_space and "\n" in f.option_separator)


def draw(rng: random.Random, name: str) -> GrammarFormat:
    """One format with every choice drawn uniformly (valid or not)."""
    return GrammarFormat(name, rng.choice(SEPARATORS), rng.choice(tuple(CASINGS)), rng.choice(SPACES),
                         rng.choice(SPACES), rng.choice(SPACES), rng.choice(SEPARATORS), rng.choice(WRAPPERS),
                         rng.choice(tuple(NUMBERINGS)))


def sample_formats(n: int, seed: int, max_options: int = 4) -> tuple[GrammarFormat, ...]:
    """``n`` distinct valid formats whose numbering labels ``max_options`` options, seeded by ``seed``
    (the run's). Two formats that render the same (casing ``as-is`` and ``title`` on "Question")
    count once, as FormatSpread keeps one node per rendered format."""
    rng = random.Random(f"formats:{seed}")
    out: dict[str, GrammarFormat] = {}
    for _ in range(max(1000, 200 * n)):
        if len(out) == n:
            break
        f = draw(rng, f"f{len(out) + 1:02d}")
        if is_valid(f) and f.capacity() >= max_options and f.layout() not in out:
            out[f.layout()] = canonical(f)
    if len(out) < n:
        raise UserError(f"formats:{n}: only {len(out)} distinct formats were found for {max_options} options; "
                        "ask for fewer")
    return tuple(out.values())


def canonical(f: GrammarFormat) -> GrammarFormat:
    """``f`` with a casing that changes nothing named ``as-is`` ("Question".title() is "Question"), so
    a format's recorded choices say what it shows (covariates of a search)."""
    if f.casing != "as-is" and all(CASINGS[f.casing](w) == w for w in DESCRIPTORS):
        return replace(f, casing="as-is")
    return f


def formats_count(family: str) -> int | None:
    """N of a ``formats`` or ``formats:N`` family name; None for any other name. A bad N is a `UserError`."""
    head, sep, arg = family.partition(":")
    if head != FAMILY:
        return None
    if not sep:
        return DEFAULT_COUNT
    if not arg.isdigit() or not 1 <= int(arg) <= 1000:
        raise UserError(f"--families {family}: N of formats:N is a whole number from 1 to 1000, e.g. formats:20")
    return int(arg)


def example(f: GrammarFormat, question: str, options: tuple[str, ...]) -> str:
    """The format rendered on one question (the report shows the best and worst format this way)."""
    labels = f.take(len(options))
    return f.layout().format(question=question, options=f.block(labels, options))
