"""Prompts for open-answer math (mcq with ``--data gsm8k``, ``math``, ``math500`` or a file of that
schema): the problem under the `prompt` family's templates and the `seeds` family's draws.

There are no options, so the option formats, orders, few-shot examples (whose examples are
multiple-choice) and text perturbations of `probes.design` do not apply; the suite refuses them.
A variant's ``labels`` and ``order`` are empty; its answer is read by `readers.math`.
"""

from __future__ import annotations

from typing import Protocol

from robusteval.errors import UserError
from robusteval.probes.design import Design, seed_settings
from robusteval.probes.templates import Template, read_template_file, unique_names
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
    where, entries = read_template_file(path, "math_templates.yaml")
    out = []
    for name, text, fields in entries:
        if unknown := fields - PLACEHOLDERS:
            raise UserError(f"{where}: template {name!r} uses {sorted(unknown)}, which open-answer math has not "
                            f"(allowed: {sorted(PLACEHOLDERS)}; an mcq template file does not fit math)")
        if "question" not in fields:
            raise UserError(f"{where}: template {name!r} lacks {{question}}")
        out.append(Template(name, text))
    return unique_names(where, out)


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
