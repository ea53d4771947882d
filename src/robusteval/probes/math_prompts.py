"""Prompts for open-answer math (mcq with ``--data gsm8k``, ``math``, ``math500`` or a file of that
schema): the problem under the `prompt` family's templates and the `seeds` family's draws.

There are no options, so the option formats, orders, few-shot examples (whose examples are
multiple-choice) and text perturbations of `probes.design` do not apply; the suite refuses them.
A variant's ``labels`` and ``order`` are empty; its answer is read by `readers.math`.
"""

from __future__ import annotations

import string
from importlib import resources
from pathlib import Path
from typing import Protocol

import yaml

from robusteval.errors import UserError
from robusteval.probes.design import Design, seed_settings
from robusteval.probes.templates import Template
from robusteval.types import Message, Variant

PLACEHOLDERS = {"question", "category"}
FAMILIES = ("prompt", "seeds")


class Problem(Protocol):
    """What a prompt reads of a problem (`data.math.MathItem`)."""

    @property
    def id(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def category(self) -> str | None: ...


def load_math_templates(path: str | None = None) -> tuple[Template, ...]:
    """The templates of a YAML file ``{templates: [{name, template}, ...]}`` with ``{question}``
    (and optionally ``{category}``); the bundled set (`data/math_templates.yaml`) by default. The
    first is the base prompt the seeds family samples."""
    where = path or "robusteval/data/math_templates.yaml"
    try:
        text = (Path(path).read_text(encoding="utf-8") if path else
                resources.files("robusteval.data").joinpath("math_templates.yaml").read_text(encoding="utf-8"))
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
        name = str(entry.get("name") or f"t{n}")
        fields = {f for _, f, _, _ in string.Formatter().parse(entry["template"]) if f}
        if unknown := fields - PLACEHOLDERS:
            raise UserError(f"{where}: template {name!r} uses {sorted(unknown)}, which open-answer math has not "
                            f"(allowed: {sorted(PLACEHOLDERS)}; an mcq template file does not fit math)")
        if "question" not in fields:
            raise UserError(f"{where}: template {name!r} lacks {{question}}")
        out.append(Template(name, entry["template"]))
    if len({t.name for t in out}) != len(out):
        raise UserError(f"{where}: template names must be unique")
    return tuple(out)


def _variant(problem: Problem, family: str, name: str, template: Template, draw: int | None = None) -> Variant:
    prompt = template.text.format(question=problem.question, category=problem.category or "mathematics")
    return Variant(problem.id, family, name, (), (), (Message("user", prompt),), draw=draw)


def expand_math(problem: Problem, families: tuple[str, ...], design: Design) -> list[Variant]:
    """The variants of one problem: each template (``prompt``), and the first template's draws (``seeds``)."""
    out: list[Variant] = []
    for family in families:
        if family == "prompt":
            out += [_variant(problem, family, t.name, t) for t in design.templates]
        elif family == "seeds":
            out += [_variant(problem, family, s.name, design.templates[0], s.draw) for s in seed_settings(design)]
        else:
            raise ValueError(f"family {family!r} does not apply to open-answer math")
    return out
