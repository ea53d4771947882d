"""lm-evaluation-harness output folders: which files ``robusteval score OUT/`` reads, lm-eval's own
figures from its ``results_*.json``, and those figures beside robusteval's of the same replies, with
each difference's reason where it is known.

lm-eval writes ``OUT/<model>/samples_<task>_<time>.jsonl`` (``--log_samples``) and
``OUT/<model>/results_<time>.json`` per run. SCORE's tasks log, in each row, what lm-eval read from the
reply and the gold label it scored against, so a difference is explained row by row: another gold
(AGIEval options printed out of order: SCORE's gold is positional, ours the printed letter's), another
reading (our reader against SCORE's extraction), a repeated option text (one answer here, two labels
there); and for the option-order family's consistency rate, SCORE's half-undone swap.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.files import finite_number, parse_json, read_text
from robusteval.labels import LETTERS
from robusteval.metrics.mcq import family_metrics
from robusteval.results.lm_eval import LmEvalFigure, LmEvalFigures
from robusteval.scoring.inspect_log import is_inspect_log
from robusteval.scoring.replies import Placed, score_family, seed_name, task_name

RESULTS_NAME = re.compile(r"results_.*\.json", re.IGNORECASE)
SAMPLES_NAME = re.compile(r"samples_.*\.jsonl", re.IGNORECASE)
OLDER_LOG = "an older log of the same task in the same folder: left out, the latest scored"
OLDER_RESULTS = "lm-eval's figures of a run whose logs are not the ones scored (an older run in the folder): left out"
HALF_SWAP = ("SCORE undoes the option swap only half-way (lm_eval/tasks/score/utils.py options_consistency_rate): "
             "an answer at the gold's original position counts as the gold; robusteval maps every position back")
NO_REASON = "no reason known"

# lm-eval's SCORE metric names -> (variant pattern, robusteval measure); {v}: the variant's part
_ORDER = (re.compile(r"per_option_(macro_)?accuracy_([A-Z])"), "gold@{v}")
_PROMPT = re.compile(r"(\d+)_(macro_)?accuracy")
_SEEDS = re.compile(r"non_greedy_(macro_)?accuracy")
_CONSISTENCY = ("options_consistency_rate", "consistency_rate")


def is_results_file(path: Path) -> bool:
    """lm-eval's ``results_<time>.json`` (its figures, not replies)."""
    return RESULTS_NAME.fullmatch(path.name) is not None


def output_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The files ``score FOLDER`` reads: lm-eval's ``samples_*.jsonl`` and ``results_*.json`` anywhere
    under it (``OUT/`` or ``OUT/<model>/``), the latest log of each task per folder (a rerun into the
    same folder leaves the older one beside it); else MMLU-Pro's ``model_outputs_*.zip``, else
    inspect_ai's logs (``inspect eval``'s log folder). Returns the
    files and a note per older log left out."""
    found = sorted(p for p in folder.rglob("*") if p.is_file())
    logs = [p for p in found if SAMPLES_NAME.fullmatch(p.name)]
    results = [p for p in found if is_results_file(p)]
    if not logs and not results:
        zips = [p for p in found if p.name.startswith("model_outputs_") and p.suffix.lower() == ".zip"]
        inspect_logs = [p for p in found if is_inspect_log(p)]
        if zips or inspect_logs:
            return zips or inspect_logs, []
        raise UserError(f"{folder}: a folder with no lm-eval output (samples_*.jsonl written with --log_samples, "
                        "results_*.json), MMLU-Pro's model_outputs_*.zip nor inspect_ai logs; give the files")
    latest: dict[tuple[Path, str], Path] = {}
    notes = []
    for log in logs:  # sorted: a later time stamp in the name comes later
        key = (log.parent, task_name(log))
        if key in latest:
            notes.append(f"{latest[key]}: {OLDER_LOG} ({log.name})")
        latest[key] = log
    # a run's results_<time>.json shares its logs' time stamp: an older run's figures are of other replies
    runs = {(log.parent, log.stem.removeprefix(f"samples_{task}_")) for (_, task), log in latest.items()}
    kept = [r for r in results if (r.parent, r.stem.removeprefix("results_")) in runs or not latest]
    notes += [f"{r}: {OLDER_RESULTS}" for r in results if r not in kept]
    return [*latest.values(), *kept], notes


Figures = dict[str, dict[str, float]]  # task or group -> metric -> value
Groups = dict[str, list[str]]  # group -> its tasks and groups


def read_results(path: Path) -> tuple[Figures, Groups]:
    """lm-eval's ``results_*.json``: task (or group) -> metric -> value (the ``none`` filter's, SCORE's
    only one; stderr and text left out), and ``group_subtasks``: each group's members."""
    data = parse_json(read_text(path, "lm-eval results"), path, finite=False)
    tasks = data.get("results") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise UserError(f"{path}: not lm-eval's results file (no 'results' object of tasks)")
    members = data.get("group_subtasks")
    groups = {str(g): [str(t) for t in subs] for g, subs in members.items()
              if isinstance(subs, list)} if isinstance(members, dict) else {}
    out: Figures = {}
    for task, metrics in tasks.items():
        if not isinstance(metrics, dict):
            continue
        for key, value in metrics.items():
            metric, _, filter_name = str(key).partition(",")
            if filter_name != "none" or metric.endswith("_stderr") or isinstance(value, bool) \
                    or not isinstance(value, (int, float)):
                continue
            out.setdefault(str(task), {})[metric] = finite_number(value, path, f"{task} {metric}")
    return out, groups


def _leaves(name: str, groups: Groups, depth: int = 0) -> list[str]:
    """The tasks of a group (nested groups opened), or ``[name]`` for a task."""
    if name not in groups or depth > 8:
        return [name]
    return [t for member in groups[name] for t in _leaves(member, groups, depth + 1)]


def _measure(family: str, metric: str, seed: str) -> tuple[str | None, str] | None:
    """(robusteval variant, or None for the family's own figure; measure) of lm-eval's ``metric``."""
    if metric in _CONSISTENCY:
        return None, "consistency_rate_pooled"
    if family == "order" and (m := _ORDER[0].fullmatch(metric)):
        return _ORDER[1].format(v=m.group(2)), "macro_accuracy" if m.group(1) else "accuracy"
    if family in ("prompt", "format") and (m := _PROMPT.fullmatch(metric)):
        return f"score-{family}-{m.group(1)}", "macro_accuracy" if m.group(2) else "accuracy"
    if family == "seeds" and (m := _SEEDS.fullmatch(metric)):
        return seed, "macro_accuracy" if m.group(1) else "accuracy"
    return None


def compare(results: dict[Path, tuple[Figures, Groups]], placed: list[Placed], samples: list[Any],
            reader: str, seed: int) -> LmEvalFigures:
    """lm-eval's figures (``results``: each results file's, read by `read_results`) beside robusteval's
    for every task of a file whose replies were scored, and every group of such tasks of one family
    (SCORE's ``score_option_order_robustness_agieval``: its size-weighted mean is the figure over all
    its subsets' questions), per model (a results file's model: the one its folder's logs were placed
    under)."""
    theirs = {(p.model, p.variant.family, p.item.id, p.variant.name, p.sample): p.theirs for p in placed}
    folders: dict[Path, dict[str, tuple[str, str]]] = defaultdict(dict)  # folder -> task -> (model, dataset)
    for p in placed:
        folders[Path(p.file).parent][task_name(Path(p.file))] = (p.model, p.dataset)
    out: LmEvalFigures = {}
    for path, (tasks, groups) in results.items():
        logged = folders.get(path.parent, {})
        for task, metrics in tasks.items():
            members = _leaves(task, groups)
            if not all(m in logged for m in members):
                continue  # a task (or a group's) whose log was not given
            models, families = {logged[m][0] for m in members}, {score_family(m) or m for m in members}
            if len(models) != 1 or len(families) != 1:
                continue  # a group of several families (SCORE's score_robustness_agieval) has no figure of ours
            model, family = models.pop(), families.pop()
            datasets = {logged[m][1] for m in members}
            items = {p.item.id for p in placed if p.model == model and p.dataset in datasets}
            of_task = [s for s in samples if s.model == model and s.family == family and s.item_id in items]
            item_ids = list(dict.fromkeys(s.item_id for s in of_task))
            fm = family_metrics(of_task, family, item_ids, seed=seed)
            for metric, value in metrics.items():
                what = _measure(family, metric, seed_name(path))
                if what is None:
                    continue
                variant, measure = what
                if variant is not None and variant not in fm.variants:
                    continue
                figures = fm.variants[variant] if variant else fm
                estimate = getattr(figures, measure)
                if estimate is None and measure == "macro_accuracy":  # one category: its mean is the accuracy
                    estimate = figures.accuracy
                ours = None if estimate is None else estimate.value
                cells = [s for s in of_task if variant is None or str(s.variant) == variant]
                figure = LmEvalFigure(task, metric, family, variant, measure, value, ours)
                if not figure.agrees:
                    why = _reasons(cells, theirs, reader)
                    if variant is None:  # a consistency rate
                        why = [*([HALF_SWAP] if family == "order" else []), *why, *_unreadable(cells, theirs)]
                    figure = LmEvalFigure(task, metric, family, variant, measure, value, ours,
                                          tuple(why or [NO_REASON]))
                out.setdefault(model, []).append(figure)
    return out


def _position(label: str | None, labels: Iterable[str]) -> int | None:
    labels = tuple(labels)
    if label is None:
        return None
    if label in labels:
        return labels.index(label)
    return LETTERS.index(label) if label in LETTERS else None  # SCORE translates every label style to a letter


def _unreadable(cells: list[Any], theirs: dict[tuple, tuple[str | None, str | None] | None]) -> list[str]:
    """A consistency rate's reason: replies no label was read from, here or by SCORE's extraction
    (which then keeps the reply's own text, so two equal unreadable replies agree there)."""
    n = 0
    for s in cells:
        their = theirs.get((s.model, s.family, s.item_id, str(s.variant), s.sample))
        if their is not None and s.correct is not None:
            n += s.status == "invalid" or _position(their[0], LETTERS) is None
    return [f"{n} replies unreadable here or to SCORE's extraction: SCORE compares the text it extracted, so "
            "equal unreadable replies agree there; here an unreadable reply agrees with nothing"] if n else []


def _reasons(cells: list[Any], theirs: dict[tuple, tuple[str | None, str | None] | None], reader: str) -> list[str]:
    """Why robusteval and lm-eval scored ``cells`` differently, counted row by row from lm-eval's own
    reading of each reply (SCORE's tasks log it)."""
    gold = read = unreadable = repeated = 0
    for s in cells:
        their = theirs.get((s.model, s.family, s.item_id, str(s.variant), s.sample))
        if their is None or s.correct is None:
            continue
        their_read, their_gold = (_position(label, LETTERS) for label in their)
        if (their_read is not None and their_read == their_gold) == bool(s.correct):
            continue
        if their_gold != _position(s.gold_label, s.labels):
            gold += 1
        elif their_read != _position(s.answer_label, s.labels):
            read += 1
            unreadable += s.status == "invalid"
        else:
            repeated += 1
    out = []
    if gold:
        out.append(f"{gold} replies scored against another gold: the option printed with the gold's letter here, "
                   "SCORE's gold by position in lm-eval (the options are printed out of order)")
    if read:
        out.append(f"{read} replies read otherwise by reader '{reader}' than by SCORE's extraction"
                   + (f" ({unreadable} unreadable here)" if unreadable else ""))
    if repeated:
        out.append(f"{repeated} replies chose a repeated copy of the gold's text: right here (one answer), "
                   "another label in lm-eval")
    return out


__all__ = ["compare", "is_results_file", "output_files", "read_results"]
