"""Prompt templates. The base prompt asks for a fixed closing phrase so the answer can be read
strictly ("The best answer is X"), as the SCORE robustness tasks do."""

from __future__ import annotations

BASE_TEMPLATE = (
    "Answer the following multiple-choice question. End your reply with the sentence "
    '"The best answer is X", where X is one of {label_list}.\n\n'
    "Question: {question}\n\n{options}"
)


def render(template: str, *, question: str, options: str, labels: tuple[str, ...], category: str | None) -> str:
    label_list = ", ".join(labels[:-1]) + f" or {labels[-1]}"
    return template.format(question=question, options=options, label_list=label_list,
                           category=category or "general knowledge")
