"""``robusteval compare RUN...``: headline metrics of several runs side by side (any suite), and
for mcq, did accuracy, consistency or any sensitivity measure change between two runs (two models,
two prompts, two versions) on the same questions: each measure of run A and run B with its CI, and
the paired difference where the measure is a mean of per-question values (so a paired statistic
exists)? For every other suite, the paired difference of each measure that is a mean of per-item
values (tree accuracy per question, hallucination detection accuracy per source sentence,
consistency similarity per item), from the suite's extractor in `report.item_values`; a measure with
no paired unit (persona rank-order stability, detection F1) is named with the reason.

A run's own intervals are read from its results.json, never drawn again: `report`, `serve` and
``compare`` show the same interval for the same run. Only where the comparison keeps part of a
run's cells (the other run lacks some questions or variants) are that run's measures computed again,
on the shared cells, with the run's own seed and question order; the output says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from robusteval.errors import UserError
from robusteval.files import atomic_write, read_jsonl
from robusteval.metrics.consistency import item_consistency
from robusteval.metrics.mcq_sensitivity import loglik_tensor, reference_columns
from robusteval.metrics.paired import paired_mean_difference
from robusteval.metrics.sensitivity import flip_counts, item_extremes, item_prompt_sensitivity, sensitivity
from robusteval.report.item_values import ItemValues, mcq_item_measures, run_item_values
from robusteval.report.table import fmt_estimate
from robusteval.results.codec import RecordError
from robusteval.results.mcq import McqMetrics, SampleRow, read_rows
from robusteval.results.persona import PersonaBoard
from robusteval.results.records import read_run
from robusteval.results.sensitivity import Sensitivity

STORED = "stored"  # a run's measures as its results.json holds them
SHARED = "recomputed on the shared cells"  # the comparison kept part of the run's cells
UNSTORED = "recomputed (results.json holds none)"  # a bare samples.jsonl, or results from before the measures


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


@dataclass(frozen=True)
class StoredRun:
    """What compare reads of a run besides its samples: its metrics and seed from results.json
    (empty metrics and seed 0 for a bare samples.jsonl, which has none)."""

    metrics: McqMetrics
    seed: int = 0


def load_stored(run: str) -> StoredRun:
    """The stored metrics and seed of a run folder (or of the folder of its samples.jsonl)."""
    path = Path(run)
    folder = path if path.is_dir() else path.parent
    results = folder / "results.json"
    if not results.is_file():
        return StoredRun({})
    try:
        record = read_run(folder)
    except (UserError, RecordError) as exc:
        raise UserError(f"{results}: not an mcq run's results ({exc})") from None
    if record.suite != "mcq" or not isinstance(record.metrics, dict):
        return StoredRun({})
    seed = record.config.get("seed", 0)
    return StoredRun(record.metrics, seed if isinstance(seed, int) and not isinstance(seed, bool) else 0)


def _pick_model(rows: list[SampleRow], model: str | None, run: str) -> list[SampleRow]:
    models = sorted({r.model for r in rows})
    if model is None:
        if len(models) != 1:
            raise UserError(f"{run} holds several models ({', '.join(models)}): choose one with --model-a/--model-b")
        return rows
    if model not in models:
        raise UserError(f"{run} has no model {model!r}; it has {', '.join(models) or 'no samples of any model'}")
    return [r for r in rows if r.model == model]


def compare(run_a: str, run_b: str, *, model_a: str | None = None, model_b: str | None = None,
            seed: int = 0) -> dict:
    """Per family both runs hold: the paired differences of accuracy and consistency (``seed``
    drives their bootstrap and permutations), and every sensitivity measure of each run: its stored
    one where the comparison keeps all of the run's cells of that family, else computed again on
    the shared cells (``intervals`` says which, per run)."""
    a = _pick_model(load_samples(run_a), model_a, run_a)
    b = _pick_model(load_samples(run_b), model_b, run_b)
    stored_a, stored_b = load_stored(run_a), load_stored(run_b)
    families = [f for f in dict.fromkeys(r.family for r in a) if any(r.family == f for r in b)]
    if not families:
        raise UserError(f"{run_a} and {run_b} share no family to compare")
    out = {}
    for family in families:
        all_a = [r for r in a if r.family == family]
        all_b = [r for r in b if r.family == family]
        cells = {(r.item_id, r.variant, r.sample) for r in all_a} & {(r.item_id, r.variant, r.sample) for r in all_b}
        if not cells:
            continue  # no question asked the same way in both runs: nothing to pair
        shared = sorted({r.item_id for r in all_a} & {r.item_id for r in all_b})
        fa = [r for r in all_a if (r.item_id, r.variant, r.sample) in cells]
        fb = [r for r in all_b if (r.item_id, r.variant, r.sample) in cells]
        acc_a, cr_a = mcq_item_measures(fa, shared)
        acc_b, cr_b = mcq_item_measures(fb, shared)
        (own_a, how_a), (own_b, how_b) = _own_measures(stored_a, fa, all_a, family), _own_measures(stored_b, fb,
                                                                                                   all_b, family)
        out[family] = {
            "questions": len(shared),
            "accuracy": paired_mean_difference(acc_a, acc_b, seed=seed).as_dict(),
            "consistency_rate": paired_mean_difference(cr_a, cr_b, seed=seed).as_dict(),
            "sensitivity": compare_sensitivity(fa, fb, shared, seed=seed, seeds=(stored_a.seed, stored_b.seed),
                                               own=(own_a, own_b)),
            "intervals": {"a": how_a, "b": how_b},
        }
        if valid := compare_valid_only(stored_a, stored_b, (fa, all_a), (fb, all_b), family):
            out[family]["sensitivity_valid"] = valid
        if categories := compare_categories(fa, shared, acc_a, acc_b, seed=seed):
            out[family]["categories"] = categories
    if not out:
        raise no_shared_items(run_a, run_b, {r.item_id for r in a}, {r.item_id for r in b})
    return out


def no_shared_items(run_a: str, run_b: str, items_a: set[str], items_b: set[str]) -> UserError:
    """Two runs with no item (asked the same way) in common: a paired difference has no unit."""
    return UserError(f"{run_a} and {run_b} share no item to compare ({len(items_a)} and {len(items_b)} items, "
                     f"{len(items_a & items_b)} in both, none asked the same way; shards of one run hold different "
                     f"items: `robusteval merge` them first); compare runs of the same items")


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


def _own_measures(stored: StoredRun, kept: list[SampleRow], rows: list[SampleRow],
                  family: str) -> tuple[Sensitivity | None, str]:
    """A run's stored sensitivity of ``family`` when the comparison keeps every one of its cells
    (``kept`` is ``rows``) and results.json holds it, else None; and which of `STORED`, `SHARED`
    (the kept cells are fewer: their measures are another statistic) or `UNSTORED` it is."""
    if len(kept) != len(rows):
        return None, SHARED
    fm = stored.metrics.get(rows[0].model, {}).get(family) if rows else None
    if fm is None or fm.sensitivity is None:
        return None, UNSTORED
    return fm.sensitivity, STORED


def compare_valid_only(stored_a: StoredRun, stored_b: StoredRun, a: tuple[list[SampleRow], list[SampleRow]],
                       b: tuple[list[SampleRow], list[SampleRow]], family: str) -> dict:
    """Every sensitivity measure of one family over valid replies only (a question's invalid variants
    left out), as each run's results.json stored it, ``{measure: {"a": estimate, "b": estimate}}``
    (an estimate is None where the run stored none: no invalid reply, or the comparison keeps only
    part of its cells, for which the valid-only figures were not computed); empty when neither has one."""
    from robusteval.results.sensitivity import MEASURES

    def stored_valid(stored: StoredRun, kept: list[SampleRow], rows: list[SampleRow]) -> Sensitivity | None:
        if len(kept) != len(rows) or not rows:
            return None
        fm = stored.metrics.get(rows[0].model, {}).get(family)
        return None if fm is None else fm.sensitivity_valid

    va, vb = stored_valid(stored_a, *a), stored_valid(stored_b, *b)
    if va is None and vb is None:
        return {}
    return {measure: {"a": None if va is None else getattr(va, measure).as_dict(),
                      "b": None if vb is None else getattr(vb, measure).as_dict()} for measure, _ in MEASURES}


def _report(rows: list[SampleRow], item_ids: list[str], seed: int) -> Sensitivity:
    """The sensitivity measures of ``rows`` computed again, questions in the order the run's samples
    first list them rather than sorted by id (the bootstrap draws questions by position)."""
    wanted = set(item_ids)
    in_run_order = [i for i in dict.fromkeys(r.item_id for r in rows) if i in wanted]
    variants, correct, answers = _matrices(rows, in_run_order)
    ref, name = reference_columns(rows, variants, in_run_order)
    return Sensitivity.of(sensitivity(correct, answers=answers, reference=ref if name is not None else None,
                                      reference_name=name, names=variants,
                                      loglik=loglik_tensor(rows, variants, in_run_order), seed=seed))


def compare_sensitivity(a: list[SampleRow], b: list[SampleRow], item_ids: list[str], *, seed: int = 0,
                        seeds: tuple[int, int] | None = None,
                        own: tuple[Sensitivity | None, Sensitivity | None] = (None, None)) -> dict:
    """Every sensitivity measure of one family in run A and run B (on the cells both answered), each
    ``{"a": estimate, "b": estimate, "difference": paired difference or None}``: the paired
    difference (mean over questions of B - A, with a CI and a permutation p-value) exists for the
    measures that are means of per-question values; the others (spread, std, drop rate, MaxP,
    AvgP, CPS, POSIX) are statistics of the whole matrix, shown side by side with their own CIs.
    ``own``: a run's stored measures, shown as they are (not drawn again) where given; ``seeds``:
    each run's own seed for the measures computed again (default ``seed``)."""
    from robusteval.results.sensitivity import MEASURES

    seed_a, seed_b = seeds or (seed, seed)
    report_a = own[0] if own[0] is not None else _report(a, item_ids, seed_a)
    report_b = own[1] if own[1] is not None else _report(b, item_ids, seed_b)
    items_a, items_b = _per_item_measures(a, item_ids), _per_item_measures(b, item_ids)
    out = {}
    for measure, _ in MEASURES:
        paired = (paired_mean_difference(items_a[measure], items_b[measure], seed=seed).as_dict()
                  if measure in PAIRED_MEASURES else None)
        out[measure] = {"a": getattr(report_a, measure).as_dict(), "b": getattr(report_b, measure).as_dict(),
                        "difference": paired}
    return out


def load_item_values(run: str) -> tuple[str, list[ItemValues]]:
    """A run folder's suite and its measures' per-item values (`report.item_values`)."""
    from robusteval.results.records import read_results

    folder = Path(run).parent if Path(run).is_file() else Path(run)
    samples_file = folder / "samples.jsonl"
    results = read_results(folder)
    suite = str(results.get("suite", "?")) if isinstance(results, dict) else "?"
    # a hand-made results.json may come without samples: only its stored per-item tables are read
    return suite, run_item_values(suite, results, samples_file)


def _model_of(values: dict[str, dict[str, float]], model: str | None, run: str, metric: str) -> str:
    """The model whose values a paired row uses: the one asked for, else the only one with values."""
    if model is not None and model in values:
        return model
    if len(values) == 1:
        return next(iter(values))
    if model is not None:
        raise UserError(f"{run} has no model {model!r} with {metric} values; it has {', '.join(values)}")
    raise UserError(f"{run} holds several models with {metric} values ({', '.join(values)}): "
                    "choose one with --model-a/--model-b")


def compare_items(run_a: str, run_b: str, *, model_a: str | None = None, model_b: str | None = None,
                  seed: int = 0) -> dict:
    """For every measure of two runs (any suite) that is a mean of per-item values, the paired
    difference of B - A over the items both scored (`metrics.paired`); a measure without a paired
    unit is given with the reason instead (empty where the runs share no measure). ``{metric:
    {"unit", "model_a", "model_b", "a", "b", "diff", "ci_low", "ci_high", "p_value", "n"} or
    {"unit", "reason"}}``."""
    suite_a, values_a = load_item_values(run_a)
    suite_b, values_b = load_item_values(run_b)
    if suite_a != suite_b:
        raise UserError(f"{run_a} is a {suite_a} run and {run_b} a {suite_b} run; compare one suite at a time")
    of_b = {v.metric: v for v in values_b}
    out: dict[str, dict] = {}
    items_a: set[str] = set()
    items_b: set[str] = set()
    for va in values_a:
        vb = of_b.get(va.metric)
        if vb is None:
            continue
        if va.reason or vb.reason:
            out[va.metric] = {"unit": va.unit, "reason": va.reason or vb.reason}
            continue
        if not va.values or not vb.values:
            out[va.metric] = {"unit": va.unit, "reason": "a run has no scored item for it"}
            continue
        ma, mb = _model_of(va.values, model_a, run_a, va.metric), _model_of(vb.values, model_b, run_b, va.metric)
        shared = sorted(set(va.values[ma]) & set(vb.values[mb]))
        items_a |= set(va.values[ma])
        items_b |= set(vb.values[mb])
        x = np.array([va.values[ma][i] for i in shared], dtype=float)
        y = np.array([vb.values[mb][i] for i in shared], dtype=float)
        out[va.metric] = {"unit": va.unit, "model_a": ma, "model_b": mb,
                          **paired_mean_difference(x, y, seed=seed).as_dict()}
    if (items_a or items_b) and not items_a & items_b:
        raise no_shared_items(run_a, run_b, items_a, items_b)
    return out  # empty: a suite with no extractor, or no measure both runs have


def mcq_as_items(result: dict) -> dict[str, dict]:
    """An mcq `compare` result in `compare_items`' shape: per family, its accuracy and consistency
    rate ("question" the unit), for compare.md's paired section."""
    out = {}
    for family, r in result.items():
        out[f"{family} accuracy"] = {"unit": "question", **r["accuracy"]}
        out[f"{family} consistency rate"] = {"unit": "question", **r["consistency_rate"]}
    return out


def paired_markdown(paired: dict[str, dict], first: str) -> list[str]:
    """compare.md's paired section: per later run, its paired differences against the first run
    (``paired``: run -> `compare_items` result)."""
    lines: list[str] = []
    for run, rows in paired.items():
        lines += ["", f"## Paired: B = {run} vs A = {first}", "",
                  "| metric | unit | n | A | B | B - A [95% CI] | p (paired permutation) |",
                  "|---|---|---|---|---|---|---|"]
        for metric, d in rows.items():
            if "reason" in d:
                lines.append(f"| {metric} | {d['unit']} | - | - | - | n/a: {d['reason']} | - |")
                continue
            lines.append(f"| {metric} | {d['unit']} | {d['n']} | {_md_num(d['a'])} | {_md_num(d['b'])} | "
                         f"{diff_text(d)} | {'n/a' if d['p_value'] is None else format(d['p_value'], '.4f')} |")
    return lines


def diff_text(d: dict) -> str:
    """A paired difference as "+0.125 [-0.050, +0.300]" ("n/a" where no item was shared)."""
    if d["n"] == 0 or d["diff"] != d["diff"]:
        return "n/a"
    ci = "" if d["ci_low"] is None else f" [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
    return f"{d['diff']:+.3f}{ci}"


def _md_num(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"


def compare_headlines(runs: list[str], *, out_dir: str | None = None):
    """A leaderboard of the given runs (all of one suite); with ``out_dir``, also compare.md and
    one bar chart per headline metric (every run × model, with its CI)."""
    from robusteval.report.leaderboard import Board, boards_from
    from robusteval.report.render import load_run

    folders = [Path(r).parent if Path(r).is_file() else Path(r) for r in runs]
    if not all((f / "results.json").is_file() for f in folders):
        return None  # samples.jsonl only (older or hand-made runs): the paired mcq comparison still works
    loaded = [load_run(f) for f in folders]
    suites = {run.suite for run in loaded}
    if len(suites) > 1:
        raise UserError(f"these runs are of different suites ({', '.join(sorted(suites))}); "
                        "compare one suite at a time")
    found = boards_from([(run.path.name, run.results) for run in loaded], {run.path.name: run.path for run in loaded})
    if len(found) > 1:  # runs on other data or sizes: shown side by side, never ranked against each other
        metrics = tuple(dict.fromkeys(m for b in found for m in b.metrics))
        rows = tuple(replace(row, rank=None, tied=False) for b in found for row in b.rows)
        found = [Board(found[0].suite, metrics, rows, " | ".join(dict.fromkeys(b.dataset for b in found)),
                       "different datasets or sizes: not ranked")]
    board = found[0] if found else Board(next(iter(suites)), (), ())  # no run has a headline value
    if out_dir:
        write_compare_md(board, out_dir)
    return board


def write_compare_md(board, out_dir: str, extra: list[str] | None = None) -> None:
    """compare.md (the headline table, ``extra`` lines such as the paired section, one plot per
    metric) and its bar charts (every run × model, with its CI) into ``out_dir``."""
    from robusteval.report.plots import bars_with_ci

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["| rank | run | model | " + " | ".join(board.metrics) + " |",
             "|---|---|---|" + "---|" * len(board.metrics)]
    for row in board.rows:
        cells = " | ".join(fmt_estimate(row.values.get(m)) for m in board.metrics)
        lines.append(f"| {rank_text(row)} | {row.run_id} | {row.model} | {cells} |")
    if board.metrics and any(row.rank is not None for row in board.rows):
        lines += ["", f"rank: by {board.metrics[0]}; '=' marks models that cannot be told apart (a paired test "
                      "over the items both answered, else their 95% intervals overlap)"]
        lines += [f"- tie group ={rank}: " + ", ".join(f"{r.run_id}/{r.model}" for r in rows)
                  for rank, rows in board.tie_groups]
    elif board.metrics:
        lines += ["", f"not ranked: these runs read different data ({board.dataset}) or a different number of items"]
    lines += extra or []
    for n, metric in enumerate(board.metrics):
        labels = [f"{row.run_id}/{row.model}" for row in board.rows]
        estimates = [_estimate(row, metric) for row in board.rows]
        values = [e["value"] for e in estimates if e and e["value"] is not None]
        top = max([1.0, *values, *[e["ci_high"] for e in estimates if e and e.get("ci_high") is not None]])
        png = bars_with_ci(labels, estimates, title=metric, ylabel=metric, ylim=(0, top * 1.05))
        atomic_write(folder / f"compare-{n + 1}.png", png)
        lines += ["", f"![{metric}](compare-{n + 1}.png)"]
    atomic_write(folder / "compare.md", "\n".join(lines) + "\n")


def rank_text(row) -> str:
    """A leaderboard row's rank: "2", "=2" when tied, "-" without a value."""
    return "-" if row.rank is None else f"{'=' if row.tied else ''}{row.rank}"


def persona_leaderboard(runs: list[str]) -> PersonaBoard | None:
    """The Stick To Your Role! aggregation over every run x model of persona runs: each is a
    contestant (a model, or one model under other settings), scored on the same games. None when
    the runs are not persona runs; an error when their contexts differ (the games would not match)."""
    from robusteval.metrics.persona import persona_board
    from robusteval.results.records import read_run

    folders = [Path(r).parent if Path(r).is_file() else Path(r) for r in runs]
    loaded = [read_run(f) for f in folders if (f / "results.json").is_file()]
    if len(loaded) != len(folders) or any(r.suite != "persona" for r in loaded):
        return None
    records = [(folder.name, record, tuple(c.name for c in record.extra.contexts))
               for folder, record in zip(folders, loaded)]
    if len({contexts for _, _, contexts in records}) != 1:
        raise UserError("these persona runs have different contexts; their games cannot be compared: "
                        + "; ".join(sorted({",".join(contexts) for _, _, contexts in records})))
    metrics = {f"{name}/{model}": m for name, record, _ in records for model, m in record.metrics.items()}
    return persona_board(metrics, list(records[0][2]))


def _estimate(row, metric: str) -> dict | None:
    v = row.values.get(metric)
    return None if v is None else {"value": v[0], "ci_low": v[1], "ci_high": v[2]}


