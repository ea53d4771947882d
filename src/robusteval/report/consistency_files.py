"""The files a `consistency` run writes beside its results: each model's ELOQUENT 2024 submission
(the task's own layout), each model's answers with their prompts (our layout), the answers side by
side (Markdown), and a heatmap per judge.

Answers and ratings are the suite's samples, read by their fields (model, item_id, variant,
sample, response; judge, scope, score), so this module needs no suite import."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from robusteval.data.consistency import PromptSet
from robusteval.report.model import rating_text, slug
from robusteval.results.consistency import JudgeSimilarity

VARIANTS_SCOPE = "variants"


ELOQUENT_KEY = "eloquent-robustness-results"
ELOQUENT_YEAR = "2024"


def submission_name(team: str, model: str, models: Sequence[str]) -> str:
    """The ELOQUENT submission's ``source`` and file stem: named after the team, as the task asks;
    with several models under test, one file per model, the model's name after the team's."""
    return slug(team) if len(models) == 1 else f"{slug(team)}-{slug(model)}"


def submission(answers: Sequence[Any], items: list[PromptSet], model: str, source: str) -> str:
    """The model's answers in the ELOQUENT 2024 robustness submission layout:
    ``{"eloquent-robustness-results": {"source", "year", "items": [{"id", "responses": [{"response"}]}]}}``,
    one response per variant in the test file's order (sample 0; null where the model failed)."""
    return "".join(submission_chunks(((item, responses(answers, item, model)) for item in items), source))


def answers_file(answers: Sequence[Any], items: list[PromptSet], model: str, team: str) -> str:
    """The model's answers in our own layout, with each variant's language and prompt beside its
    response (readable without the test file; not what ELOQUENT asks for: see `submission`)."""
    return "".join(answers_chunks(((item, responses(answers, item, model)) for item in items), model, team))


def responses(answers: Sequence[Any], item: PromptSet, model: str) -> list[str | None]:
    """The model's sample-0 responses to the item's variants, in order (None: no answer)."""
    by_variant = {a.variant: a.response for a in answers if a.model == model and a.item_id == item.id
                  and a.sample == 0}
    return [by_variant.get(i) for i in range(len(item.variants))]


def submission_chunks(answered: Iterable[tuple[PromptSet, list[str | None]]], source: str) -> Iterator[str]:
    """`submission`'s text piece by piece, an item at a time, so a large run's file is never held
    whole; the same bytes as one `json.dumps`."""
    head = {"source": source, "year": ELOQUENT_YEAR, "items": []}
    return _chunks(ELOQUENT_KEY, head, ({"id": item.id, "responses": [{"response": r} for r in said]}
                                        for item, said in answered))


def answers_chunks(answered: Iterable[tuple[PromptSet, list[str | None]]], model: str,
                   team: str) -> Iterator[str]:
    """`answers_file`'s text piece by piece, an item at a time (each with the model's responses to
    its variants); the same bytes as one `json.dumps`."""
    head = {"team": team, "system": model, "date": time.strftime("%Y-%m-%d"), "items": []}
    return _chunks("robusteval-answers", head, (
        {"id": item.id, "variation": item.variation,
         "variants": [{"language": v.language, "prompt": v.prompt, "response": said[i]}
                      for i, v in enumerate(item.variants)]}
        for item, said in answered))


def _chunks(key: str, head: dict[str, Any], entries: Iterable[dict[str, Any]]) -> Iterator[str]:
    """``json.dumps({key: head}, indent=2)`` with ``entries`` streamed into ``head["items"]``."""
    text = json.dumps({key: head}, indent=2, ensure_ascii=False)
    before, after = text.split('"items": []')
    yield before + '"items": ['
    first = True
    for entry in entries:
        dumped = json.dumps(entry, indent=2, ensure_ascii=False).replace("\n", "\n" + " " * 6)
        yield ("\n" if first else ",\n") + " " * 6 + dumped
        first = False
    yield ("]" if first else "\n    ]") + after


def answers_markdown(answers: Sequence[Any], ratings: Sequence[Any], items: list[PromptSet],
                     models: list[str]) -> str:
    """Per item, the variants side by side with each model's answers and the judges' ratings."""
    answered = ((item, {m: responses(answers, item, m) for m in models}) for item in items)
    return "".join(answers_markdown_chunks(answered, ratings, models))


def answers_markdown_chunks(answered: Iterable[tuple[PromptSet, dict[str, list[str | None]]]],
                            ratings: Sequence[Any], models: list[str]) -> Iterator[str]:
    """`answers_markdown` piece by piece: ``answered`` gives each item with every model's sample-0
    responses to its variants, an item at a time."""
    scores = {(r.model, r.item_id, r.judge): r.score for r in ratings if r.scope == VARIANTS_SCOPE}
    judges = list(dict.fromkeys(r.judge for r in ratings))
    yield "# Answers side by side\n"
    for item, said in answered:
        lines = [f"## {item.id} ({item.variation})", ""]
        if item.hint:
            lines += [f"Judge hint: {item.hint}", ""]
        lines += ["| variant | language | prompt | " + " | ".join(models) + " |",
                  "|---|---|---|" + "---|" * len(models)]
        for i, v in enumerate(item.variants):
            cells = [_cell(said[m][i] if m in said else None) for m in models]
            label = f"{i + 1} ({_cell(v.name)})" if v.name else str(i + 1)
            lines.append(f"| {label} | {v.language} | {_cell(v.prompt)} | " + " | ".join(cells) + " |")
        rated = ", ".join(f"{m} {j}: {rating_text(scores.get((m, item.id, j)))}" for m in models for j in judges)
        lines += ["", f"Ratings (0-5): {rated}", ""]
        yield "\n" + "\n".join(lines)


def _cell(text: str | None) -> str:
    if text is None:
        return "*(failed)*"
    return text.replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def heatmap_png(judge: JudgeSimilarity, items: list[PromptSet], models: list[str], name: str) -> bytes | None:
    """The items × models table as a heatmap (missing cells grey), for reports and papers."""
    from robusteval.report.plots import heatmap

    table = np.array([[np.nan if judge.table[i.id][m] is None else judge.table[i.id][m] for m in models]
                      for i in items], dtype=float)
    if table.size == 0:
        return None
    return heatmap(table, [f"{i.id} ({i.variation})" for i in items], models, vmin=0, vmax=5, fmt="{:.1f}",
                   title=f"Similarity of answers across variants: {name}", colorbar="0 different .. 5 same content")
