"""Prompt templates. Every template asks for a fixed closing phrase so one strict reader serves all
("The best answer is [label]"), as the SCORE robustness tasks do. The `prompt` and `fewshot` families
read theirs from a YAML data file (`robusteval/data/mcq_templates.yaml`, or `--templates FILE`).

The placeholder in that phrase must never be a label: with 10 options the roman labels reach X, so
"The best answer is X" parroted by a model would read as option 10 (SCORE's own prompts say
"[the_answer_letter]"). A template whose placeholder the reader takes for a label, in any label
style with up to 16 options, is refused (`check_placeholder`)."""

from __future__ import annotations

import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from robusteval.errors import UserError

BASE_TEMPLATE = (
    "Answer the following multiple-choice question. End your reply with the sentence "
    '"The best answer is [label]", where [label] is one of {label_list}.\n\n'
    "Question: {question}\n\n{options}"
)
PLACEHOLDERS = {"question", "options", "label_list", "category"}
REQUIRED = {"question", "options"}


@dataclass(frozen=True)
class Template:
    name: str
    text: str


BASE = Template("base", BASE_TEMPLATE)


def render(template: str, *, question: str, options: str, labels: tuple[str, ...], category: str | None) -> str:
    label_list = ", ".join(labels[:-1]) + f" or {labels[-1]}"
    return template.format(question=question, options=options, label_list=label_list,
                           category=category or "general knowledge")


def check_placeholder(text: str, where: str) -> None:
    """Refuse a template whose "The best answer is ..." placeholder reads as a valid label."""
    from robusteval.probes.choices import LABEL_STYLES
    from robusteval.readers.robusteval import PHRASE, read_label

    for match in PHRASE.finditer(text):
        phrase = text[match.start():].split("\n")[0]
        for style in LABEL_STYLES.values():
            answer = read_label(phrase, style.labels)
            if answer.status == "ok" and answer.position is not None:
                raise UserError(f"{where}: a model that repeats {phrase.strip()[:60]!r} would be read as "
                                f"choosing option {answer.position + 1} (label {answer.label!r} of the "
                                f"{style.name} style): its placeholder is a label; write a word instead, e.g. "
                                '"The best answer is [label]"')


def read_template_file(path: str | None, bundled: str) -> tuple[str, list[tuple[str, str, set[str]]]]:
    """A YAML file ``{templates: [{name, template}, ...]}`` (``path``, else the package's ``bundled``
    file): where it is (for messages) and each entry's name, text and placeholders. The mcq and the
    math templates both read theirs here; each checks its own placeholders."""
    where = path or f"robusteval/data/{bundled}"
    try:
        text = (Path(path).read_text(encoding="utf-8") if path else
                resources.files("robusteval.data").joinpath(bundled).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"--templates {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise UserError(f"{where}:{mark.line + 1 if mark else '?'}: malformed YAML") from None
    entries = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{where}: expected 'templates:' with a list of {{name, template}} entries")
    out = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("template"), str):
            raise UserError(f"{where}: template #{n} needs a 'template' string")
        fields = {f for _, f, _, _ in string.Formatter().parse(entry["template"]) if f}
        out.append((str(entry.get("name") or f"t{n}"), entry["template"], fields))
    return where, out


def unique_names(where: str, templates: list[Template]) -> tuple[Template, ...]:
    if len({t.name for t in templates}) != len(templates):
        raise UserError(f"{where}: template names must be unique")
    return tuple(templates)


def load_templates(path: str | None = None) -> tuple[Template, ...]:
    """The templates of a YAML file ``{templates: [{name, template}, ...]}``; the bundled set by default."""
    where, entries = read_template_file(path, "mcq_templates.yaml")
    out = []
    for name, text, fields in entries:
        if unknown := fields - PLACEHOLDERS:
            raise UserError(f"{where}: template {name!r} uses unknown placeholder(s) {sorted(unknown)}; "
                            f"allowed: {sorted(PLACEHOLDERS)}")
        if missing := REQUIRED - fields:
            raise UserError(f"{where}: template {name!r} lacks {sorted(missing)}")
        check_placeholder(text, f"{where}: template {name!r}")
        out.append(Template(name, text))
    return unique_names(where, out)
