"""Prompt templates. Every bundled template asks for a fixed closing phrase so one strict reader serves
all ("The best answer is [label]"), as the SCORE robustness tasks do. The `prompt` and `fewshot`
families read theirs from a YAML data file (`robusteval/data/mcq_templates.yaml`), `--templates FILE`,
or a bundled set by name (`--templates score`: SCORE's own prompts, `TEMPLATE_SETS`).

Whatever the templates ask for, the chosen reader must read it: `probes.template_check` checks each
template's own example answer (`example_answer`) and its parroted placeholder ("The best answer is X"
is option 10 in roman labels) before any request."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from importlib import resources
from typing import Any

from robusteval.errors import UserError
from robusteval.files import parse_yaml, read_text
from robusteval.labels import LABEL_STYLES

# what every bundled prompt asks (the base template and the `formats` family's formats begin with it)
INSTRUCTION = ("Answer the following multiple-choice question. End your reply with the sentence "
               '"The best answer is [label]", where [label] is one of {label_list}.')
BASE_TEMPLATE = INSTRUCTION + "\n\nQuestion: {question}\n\n{options}"
PLACEHOLDERS = {"question", "options", "label_list", "category"}
REQUIRED = {"question", "options"}


@dataclass(frozen=True)
class Template:
    name: str
    text: str
    style: str | None = None  # the label style it shows (a `LABEL_STYLES` name); None: the base style, "A."
    options_lead: str = ""  # put before the option block: "\n" where the text runs "{question}{options}" (SCORE)


BASE = Template("base", BASE_TEMPLATE)


def render(template: str, *, question: str, options: str, labels: tuple[str, ...], category: str | None) -> str:
    label_list = ", ".join(labels[:-1]) + f" or {labels[-1]}"
    return template.format(question=question, options=options, label_list=label_list,
                           category=category or "general knowledge")


# "the best answer is", "The answer is", "answer is", then the placeholder: bracketed, or a word that
# names the slot ("answer_letter", "X", "label", "letter"); "the answer is correct" holds no placeholder
PHRASE = re.compile(r"(?:the\s+(?:best\s+)?)?answer\s+is\s*:?\s*-?\s*", re.IGNORECASE)
SLOT = re.compile(r"\([^()\n]{1,40}\)|\[[^\[\]\n]{1,40}\]|[A-Za-z]*_[A-Za-z_]*|X\b|label\b|letter\b", re.IGNORECASE)


@dataclass(frozen=True)
class AnswerPhrase:
    """An answer instruction of a template: the words before the placeholder, and the placeholder."""

    lead: str  # "The best answer is "
    slot: str  # "[label]", "(X)", "answer_letter"

    def with_label(self, label: str) -> str:
        """The phrase as a model following it writes it: parentheses kept ("(X)" -> "(B)", as MMLU-Pro
        asks), a square-bracketed or bare placeholder replaced by the label alone."""
        filled = f"({label})" if self.slot.startswith("(") else label
        return f"{self.lead}{filled}."


def answer_phrases(text: str) -> list[AnswerPhrase]:
    """The answer instructions of a template's text, in order."""
    out = []
    for match in PHRASE.finditer(text):
        slot = SLOT.match(text, match.end())
        if slot:
            out.append(AnswerPhrase(match.group(0), slot.group(0)))
    return out


def example_answer(template: Template, label: str) -> str:
    """The reply ``template`` asks for, choosing ``label``: its last answer phrase filled in, or the
    bare label where it has none. Few-shot examples are answered in these words too."""
    phrases = answer_phrases(template.text)
    return phrases[-1].with_label(label) if phrases else label


def _read_yaml(path: str | None, bundled: str) -> tuple[str, Any]:
    """A YAML file (``path``, else the package's ``bundled`` file): where it is (for messages), and its data."""
    where = path or f"robusteval/data/{bundled}"
    text = (read_text(path, f"--templates {path}") if path else
            resources.files("robusteval.data").joinpath(bundled).read_text(encoding="utf-8"))
    return where, parse_yaml(text, where)


def read_template_file(path: str | None, bundled: str) -> tuple[str, list[tuple[str, str, set[str]]]]:
    """A YAML file ``{templates: [{name, template}, ...]}`` (``path``, else the package's ``bundled``
    file): where it is (for messages) and each entry's name, text and placeholders. The mcq and the
    math templates both read theirs here; each checks its own placeholders."""
    where, data = _read_yaml(path, bundled)
    return where, [(name, text, fields) for name, text, fields, _ in _entries(where, data)]


def _entries(where: str, data: Any) -> list[tuple[str, str, set[str], dict]]:
    entries = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{where}: expected 'templates:' with a list of {{name, template}} entries")
    return [_entry(where, entry, f"#{n}", f"t{n}") for n, entry in enumerate(entries, 1)]


def _entry(where: str, entry: Any, which: str, default_name: str) -> tuple[str, str, set[str], dict]:
    if not isinstance(entry, dict) or not isinstance(entry.get("template"), str):
        raise UserError(f"{where}: template {which} needs a 'template' string")
    fields = {f for _, f, _, _ in string.Formatter().parse(entry["template"]) if f}
    return str(entry.get("name") or default_name), entry["template"], fields, entry


def unique_names(where: str, templates: list[Template]) -> tuple[Template, ...]:
    if len({t.name for t in templates}) != len(templates):
        raise UserError(f"{where}: template names must be unique")
    return tuple(templates)


# bundled sets by name (--templates NAME); "score" picks SCORE's set for the dataset asked
TEMPLATE_SETS = {"score-mmlu-pro": "mcq_templates_score_mmlu_pro.yaml",
                 "score-agieval": "mcq_templates_score_agieval.yaml"}


def template_set_name(spec: str | None, data: str | None) -> str | None:
    """The bundled set ``spec`` names (``score``: SCORE's AGIEval prompts for an ``agieval-*`` dataset,
    else its MMLU-Pro prompts, as SCORE has no others), or None for a file or the default set."""
    if spec == "score":
        return "score-agieval" if (data or "").startswith("agieval") else "score-mmlu-pro"
    return spec if spec in TEMPLATE_SETS else None


def load_templates(path: str | None = None) -> tuple[Template, ...]:
    """The templates of a YAML file ``{templates: [{name, template}, ...]}``; the bundled set by default."""
    return load_template_set(path)[0]


def load_template_set(spec: str | None = None, data: str | None = None) -> tuple[tuple[Template, ...], Template]:
    """The prompt/fewshot templates and the base template (that of the other families) of ``spec``:
    a YAML file ``{templates: [{name, template, style?, options_lead?}, ...], order?: {...}}``, a
    bundled set's name (`TEMPLATE_SETS`, ``score``), or the bundled robusteval set for None.
    ``style`` is the label style the template shows (default ``A.``), ``options_lead`` text put
    before the option block (SCORE's "\\n"), ``order`` the base template (default: `BASE`)."""
    named = template_set_name(spec, data)
    where, raw = _read_yaml(None if named else spec, TEMPLATE_SETS[named] if named else "mcq_templates.yaml")
    templates = unique_names(where, [_template(where, *e) for e in _entries(where, raw)])
    order = raw.get("order") if isinstance(raw, dict) else None
    base = BASE if order is None else _template(where, *_entry(where, order, "'order'", "order"))
    return templates, base


def _template(where: str, name: str, text: str, fields: set[str], entry: dict) -> Template:
    if unknown := fields - PLACEHOLDERS:
        raise UserError(f"{where}: template {name!r} uses unknown placeholder(s) {sorted(unknown)}; "
                        f"allowed: {sorted(PLACEHOLDERS)}")
    if missing := REQUIRED - fields:
        raise UserError(f"{where}: template {name!r} lacks {sorted(missing)}")
    style = entry.get("style")
    if style is not None and style not in LABEL_STYLES:
        raise UserError(f"{where}: template {name!r} has style {style!r}; one of {', '.join(LABEL_STYLES)}")
    lead = entry.get("options_lead", "")
    if not isinstance(lead, str):
        raise UserError(f"{where}: template {name!r}: options_lead must be a string")
    return Template(name, text, style, lead)
