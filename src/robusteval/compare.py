"""``robusteval compare RUN...``: headline metrics of several runs side by side (any suite), and
for mcq, did accuracy, consistency or any sensitivity measure change between two runs (two models,
two prompts, two versions) on the same questions: each measure of run A and run B with its CI, and
the paired difference where the measure is a mean of per-question values (so a paired statistic
exists)?"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from robusteval.errors import UserError
from robusteval.files import atomic_write, read_jsonl
from robusteval.metrics.consistency import item_consistency
from robusteval.metrics.mcq_sensitivity import reference_columns
from robusteval.metrics.paired import paired_mean_difference
from robusteval.metrics.sensitivity import flip_counts, item_extremes, item_prompt_sensitivity, sensitivity
from robusteval.report.table import fmt_estimate
from robusteval.results.codec import RecordError
from robusteval.results.mcq import SampleRow, read_rows
from robusteval.results.persona import PersonaBoard


def load_samples(run: str) -> list[SampleRow]:
    """The mcq sample rows of a run folder (or its samples.jsonl), typed."""
    path = Path(run)
    path = path / "samples.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise UserError(f"{run}: not a run folder (no samples.jsonl)")
    try:
        return read_rows(read_jsonl(path))
    except RecordError as exc:
        raise UserError(f"{path}: not the samples of an mcq run ({exc})") from None


def _pick_model(rows: list[SampleRow], model: str | None, run: str) -> list[SampleRow]:
    models = sorted({r.model for r in rows})
    if model is None:
        if len(models) != 1:
            raise UserError(f"{run} holds several models ({', '.join(models)}): choose one with --model-a/--model-b")
        return rows
    if model not in models:
        raise UserError(f"{run} has no model {model!r}; it has {', '.join(models)}")
    return [r for r in rows if r.model == model]


def _per_item(rows: list[SampleRow], item_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per question: mean correctness, and agreement of the chosen options across its variants."""
    index = {i: n for n, i in enumerate(item_ids)}
    cells = sorted({(r.variant, r.sample) for r in rows})
    col = {c: n for n, c in enumerate(cells)}
    correct = np.full((len(item_ids), len(cells)), np.nan)
    answers = np.full((len(item_ids), len(cells)), np.nan)
    for r in rows:
        if r.correct is None:
            continue
        i, j = index[r.item_id], col[(r.variant, r.sample)]
        correct[i, j] = float(r.correct)
        answers[i, j] = -1 if r.answer_option is None else r.answer_option
    with np.errstate(invalid="ignore"):
        acc = np.array([np.nanmean(row) if np.any(~np.isnan(row)) else np.nan for row in correct])
    return acc, item_consistency(answers)


def compare(run_a: str, run_b: str, *, model_a: str | None = None, model_b: str | None = None,
            seed: int = 0) -> dict:
    a = _pick_model(load_samples(run_a), model_a, run_a)
    b = _pick_model(load_samples(run_b), model_b, run_b)
    out = {}
    for family in [f for f in dict.fromkeys(r.family for r in a) if any(r.family == f for r in b)]:
        fa = [r for r in a if r.family == family]
        fb = [r for r in b if r.family == family]
        shared = sorted({r.item_id for r in fa} & {r.item_id for r in fb})
        cells = {(r.item_id, r.variant, r.sample) for r in fa} & {(r.item_id, r.variant, r.sample) for r in fb}
        fa = [r for r in fa if (r.item_id, r.variant, r.sample) in cells]
        fb = [r for r in fb if (r.item_id, r.variant, r.sample) in cells]
        acc_a, cr_a = _per_item(fa, shared)
        acc_b, cr_b = _per_item(fb, shared)
        out[family] = {
            "questions": len(shared),
            "accuracy": paired_mean_difference(acc_a, acc_b, seed=seed).as_dict(),
            "consistency_rate": paired_mean_difference(cr_a, cr_b, seed=seed).as_dict(),
            "sensitivity": compare_sensitivity(fa, fb, shared, seed=seed),
        }
        if categories := compare_categories(fa, shared, acc_a, acc_b, seed=seed):
            out[family]["categories"] = categories
    if not out:
        raise UserError(f"{run_a} and {run_b} share no family to compare")
    return out


def compare_categories(rows: list[SampleRow], item_ids: list[str], acc_a: np.ndarray, acc_b: np.ndarray, *,
                       seed: int = 0) -> dict[str, dict]:
    """Per category (two or more among the questions): the paired difference of the per-question
    accuracies of A and B on that category's questions (A, B, B - A with its interval, p)."""
    category = {r.item_id: r.category for r in rows if r.category}
    names = list(dict.fromkeys(category.get(i) for i in item_ids if category.get(i)))
    if len(names) < 2:
        return {}
    of = np.array([category.get(i) or "" for i in item_ids], dtype=object)
    return {str(name): paired_mean_difference(acc_a[of == name], acc_b[of == name], seed=seed).as_dict()
            for name in names}


# the sensitivity measures that are means of per-question values, so a paired difference exists
PAIRED_MEASURES = ("consistency_rate", "flip_rate", "worst_case", "best_case", "prompt_sensi_score")


def _matrices(rows: list[SampleRow], item_ids: list[str]):
    """(variants, correct items x variants (mean over samples), answers items x variants*samples)."""
    variants = list(dict.fromkeys(r.variant for r in rows))
    n_samples = max((r.sample for r in rows), default=0) + 1
    index = {i: n for n, i in enumerate(item_ids)}
    col = {v: n for n, v in enumerate(variants)}
    total = np.zeros((len(item_ids), len(variants)))
    count = np.zeros((len(item_ids), len(variants)))
    answers = np.full((len(item_ids), len(variants) * n_samples), np.nan)
    for r in rows:
        if r.correct is None:
            continue
        i, j = index[r.item_id], col[r.variant]
        total[i, j] += r.correct
        count[i, j] += 1
        answers[i, j * n_samples + r.sample] = -1 if r.answer_option is None else r.answer_option
    with np.errstate(invalid="ignore", divide="ignore"):
        correct = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return variants, correct, answers


def _per_item_measures(rows: list[SampleRow], item_ids: list[str]) -> dict[str, np.ndarray]:
    """Per question, each paired measure's value (NaN where the question gives none)."""
    variants, correct, answers = _matrices(rows, item_ids)
    worst, best, _ = item_extremes(correct)
    pss, _ = item_prompt_sensitivity(correct)
    ref, name = reference_columns(rows, variants, item_ids)
    flip = np.full(len(item_ids), np.nan)
    if name is not None:
        flips, compared = flip_counts(correct, answers, ref)
        with np.errstate(invalid="ignore", divide="ignore"):
            flip = np.where(compared.sum(axis=1) > 0, flips.sum(axis=1) / compared.sum(axis=1), np.nan)
    return {"consistency_rate": item_consistency(answers), "flip_rate": flip, "worst_case": worst,
            "best_case": best, "prompt_sensi_score": pss}


def _report(rows: list[SampleRow], item_ids: list[str], seed: int):
    variants, correct, answers = _matrices(rows, item_ids)
    ref, name = reference_columns(rows, variants, item_ids)
    return sensitivity(correct, answers=answers, reference=ref if name is not None else None, reference_name=name,
                       names=variants, seed=seed)


def compare_sensitivity(a: list[SampleRow], b: list[SampleRow], item_ids: list[str], *, seed: int = 0) -> dict:
    """Every sensitivity measure of one family in run A and run B (on the cells both answered), each
    ``{"a": estimate, "b": estimate, "difference": paired difference or None}``: the paired
    difference (mean over questions of B - A, with a CI and a permutation p-value) exists for the
    measures that are means of per-question values; the others (spread, std, drop rate, MaxP,
    AvgP, CPS, POSIX) are statistics of the whole matrix, shown side by side with their own CIs."""
    from robusteval.results.sensitivity import MEASURES

    report_a, report_b = _report(a, item_ids, seed), _report(b, item_ids, seed)
    items_a, items_b = _per_item_measures(a, item_ids), _per_item_measures(b, item_ids)
    out = {}
    for measure, _ in MEASURES:
        paired = (paired_mean_difference(items_a[measure], items_b[measure], seed=seed).as_dict()
                  if measure in PAIRED_MEASURES else None)
        out[measure] = {"a": getattr(report_a, measure).as_dict(), "b": getattr(report_b, measure).as_dict(),
                        "difference": paired}
    return out


def compare_headlines(runs: list[str], *, out_dir: str | None = None):
    """A leaderboard of the given runs (all of one suite); with ``out_dir``, also compare.md and
    one bar chart per headline metric (every run × model, with its CI)."""
    from robusteval.report.plots import bars_with_ci
    from robusteval.report.render import load_run
    from robusteval.web.leaderboard import Board, boards_from

    folders = [Path(r).parent if Path(r).is_file() else Path(r) for r in runs]
    if not all((f / "results.json").is_file() for f in folders):
        return None  # samples.jsonl only (older or hand-made runs): the paired mcq comparison still works
    loaded = [load_run(f) for f in folders]
    suites = {run.suite for run in loaded}
    if len(suites) > 1:
        raise UserError(f"these runs are of different suites ({', '.join(sorted(suites))}); "
                        "compare one suite at a time")
    board: Board = boards_from([(run.path.name, run.results) for run in loaded])[0]
    if out_dir:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        lines = ["| run | model | " + " | ".join(board.metrics) + " |", "|---|---|" + "---|" * len(board.metrics)]
        for row in board.rows:
            cells = " | ".join(fmt_estimate(row.values.get(m)) for m in board.metrics)
            lines.append(f"| {row.run_id} | {row.model} | {cells} |")
        for n, metric in enumerate(board.metrics):
            labels = [f"{row.run_id}/{row.model}" for row in board.rows]
            estimates = [_estimate(row, metric) for row in board.rows]
            values = [e["value"] for e in estimates if e and e["value"] is not None]
            top = max([1.0, *values, *[e["ci_high"] for e in estimates if e and e.get("ci_high") is not None]])
            png = bars_with_ci(labels, estimates, title=metric, ylabel=metric, ylim=(0, top * 1.05))
            atomic_write(folder / f"compare-{n + 1}.png", png)
            lines += ["", f"![{metric}](compare-{n + 1}.png)"]
        atomic_write(folder / "compare.md", "\n".join(lines) + "\n")
    return board


def persona_leaderboard(runs: list[str]) -> PersonaBoard | None:
    """The Stick To Your Role! aggregation over every run x model of persona runs: each is a
    contestant (a model, or one model under other settings), scored on the same games. None when
    the runs are not persona runs; an error when their contexts differ (the games would not match)."""
    from robusteval.metrics.persona import persona_board
    from robusteval.results.codec import RecordError, decode
    from robusteval.results.persona import ContextInfo
    from robusteval.results.records import run_record

    folders = [Path(r).parent if Path(r).is_file() else Path(r) for r in runs]
    loaded = [(f, json.loads((f / "results.json").read_text(encoding="utf-8")))
              for f in folders if (f / "results.json").is_file()]
    if len(loaded) != len(folders) or any(r.get("suite") != "persona" for _, r in loaded):
        return None
    records = []
    for folder, results in loaded:
        try:
            record = run_record(results)
            contexts = tuple(c.name for c in decode(list[ContextInfo], record.extra.get("contexts", [])))
        except RecordError as exc:
            raise UserError(f"{folder / 'results.json'}: not a persona run's results ({exc})") from None
        records.append((folder.name, record, contexts))
    if len({contexts for _, _, contexts in records}) != 1:
        raise UserError("these persona runs have different contexts; their games cannot be compared: "
                        + "; ".join(sorted({",".join(contexts) for _, _, contexts in records})))
    metrics = {f"{name}/{model}": m for name, record, _ in records for model, m in record.metrics.items()}
    return persona_board(metrics, list(records[0][2]))


def _estimate(row, metric: str) -> dict | None:
    v = row.values.get(metric)
    return None if v is None else {"value": v[0], "ci_low": v[1], "ci_high": v[2]}


