"""``robusteval compare RUN_A RUN_B``: did accuracy or consistency change between two runs
(two models, two prompts, two versions) on the same questions?"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from robusteval.errors import UserError
from robusteval.metrics.consistency import item_consistency
from robusteval.metrics.paired import paired_difference


def load_samples(run: str) -> list[dict]:
    path = Path(run)
    path = path / "samples.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise UserError(f"{run}: not a run folder (no samples.jsonl)")
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                raise UserError(f"{path}:{n}: not valid JSON") from None
    return rows


def _pick_model(rows: list[dict], model: str | None, run: str) -> list[dict]:
    models = sorted({r["model"] for r in rows})
    if model is None:
        if len(models) != 1:
            raise UserError(f"{run} holds several models ({', '.join(models)}): choose one with --model-a/--model-b")
        return rows
    if model not in models:
        raise UserError(f"{run} has no model {model!r}; it has {', '.join(models)}")
    return [r for r in rows if r["model"] == model]


def _per_item(rows: list[dict], item_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per question: mean correctness, and agreement of the chosen options across its variants."""
    index = {i: n for n, i in enumerate(item_ids)}
    cells = sorted({(r["variant"], r["sample"]) for r in rows})
    col = {c: n for n, c in enumerate(cells)}
    correct = np.full((len(item_ids), len(cells)), np.nan)
    answers = np.full((len(item_ids), len(cells)), np.nan)
    for r in rows:
        if r["correct"] is None:
            continue
        i, j = index[r["item_id"]], col[(r["variant"], r["sample"])]
        correct[i, j] = float(r["correct"])
        answers[i, j] = -1 if r["answer_option"] is None else r["answer_option"]
    with np.errstate(invalid="ignore"):
        acc = np.array([np.nanmean(row) if np.any(~np.isnan(row)) else np.nan for row in correct])
    return acc, item_consistency(answers)


def compare(run_a: str, run_b: str, *, model_a: str | None = None, model_b: str | None = None,
            seed: int = 0) -> dict:
    a = _pick_model(load_samples(run_a), model_a, run_a)
    b = _pick_model(load_samples(run_b), model_b, run_b)
    out = {}
    for family in [f for f in dict.fromkeys(r["family"] for r in a) if any(r["family"] == f for r in b)]:
        fa = [r for r in a if r["family"] == family]
        fb = [r for r in b if r["family"] == family]
        shared = sorted({r["item_id"] for r in fa} & {r["item_id"] for r in fb})
        cells = {(r["item_id"], r["variant"], r["sample"]) for r in fa} & {(r["item_id"], r["variant"], r["sample"]) for r in fb}
        fa = [r for r in fa if (r["item_id"], r["variant"], r["sample"]) in cells]
        fb = [r for r in fb if (r["item_id"], r["variant"], r["sample"]) in cells]
        acc_a, cr_a = _per_item(fa, shared)
        acc_b, cr_b = _per_item(fb, shared)
        out[family] = {
            "questions": len(shared),
            "accuracy": paired_difference(acc_a, acc_b, seed=seed).as_dict(),
            "consistency_rate": paired_difference(cr_a, cr_b, seed=seed).as_dict(),
        }
    if not out:
        raise UserError(f"{run_a} and {run_b} share no family to compare")
    return out
