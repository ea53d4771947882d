"""The files a `consistency` run writes beside its results: each model's ELOQUENT submission, the
answers side by side (Markdown), and a heatmap per judge.

Answers and ratings are the suite's samples, read by their fields (model, item_id, variant,
sample, response; judge, scope, score), so this module needs no suite import."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from robusteval.data.consistency import PromptSet
from robusteval.report.model import rating_text, slug
from robusteval.results.consistency import JudgeSimilarity

VARIANTS_SCOPE = "variants"


def submission(answers: Sequence[Any], items: list[PromptSet], model: str, team: str) -> str:
    """The model's answers in the ELOQUENT robustness submission layout: each item's variants, each
    with its language, prompt and response (sample 0)."""
    by_key = {(a.item_id, a.variant): a for a in answers if a.model == model and a.sample == 0}
    payload = {"eloquent-robustness-submission": {
        "team": team, "system": model, "submissionid": f"{team}-{slug(model)}",
        "date": time.strftime("%Y-%m-%d"),
        "items": [{"id": item.id, "variation": item.variation,
                   "variants": [{"language": v.language, "prompt": v.prompt,
                                 "response": by_key[item.id, i].response if (item.id, i) in by_key else None}
                                for i, v in enumerate(item.variants)]} for item in items]}}
    return json.dumps(payload, indent=2, ensure_ascii=False)


def answers_markdown(answers: Sequence[Any], ratings: Sequence[Any], items: list[PromptSet],
                     models: list[str]) -> str:
    """Per item, the variants side by side with each model's answers and the judges' ratings."""
    by_key = {(a.model, a.item_id, a.variant): a for a in answers if a.sample == 0}
    scores = {(r.model, r.item_id, r.judge): r.score for r in ratings if r.scope == VARIANTS_SCOPE}
    judges = list(dict.fromkeys(r.judge for r in ratings))
    lines = ["# Answers side by side", ""]
    for item in items:
        lines += [f"## {item.id} ({item.variation})", ""]
        if item.hint:
            lines += [f"Judge hint: {item.hint}", ""]
        lines += ["| variant | language | prompt | " + " | ".join(models) + " |",
                  "|---|---|---|" + "---|" * len(models)]
        for i, v in enumerate(item.variants):
            cells = [_cell(by_key[m, item.id, i].response if (m, item.id, i) in by_key else None) for m in models]
            label = f"{i + 1} ({_cell(v.name)})" if v.name else str(i + 1)
            lines.append(f"| {label} | {v.language} | {_cell(v.prompt)} | " + " | ".join(cells) + " |")
        rated = ", ".join(f"{m} {j}: {rating_text(scores.get((m, item.id, j)))}" for m in models for j in judges)
        lines += ["", f"Ratings (0-5): {rated}", ""]
    return "\n".join(lines)


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
