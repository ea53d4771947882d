"""The persona suite's aggregations: answers -> value scores per context, rank-order stability
with a persona bootstrap, validity per context, contexts that lost answers, and the leaderboard's
models x games table. Samples are read by attribute (``model``, ``item_id``, ``persona_id``,
``context``, ``answer``, ``status``, ``error``, ``letter_mass``)."""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from robusteval.data.persona import Persona, Questionnaire
from robusteval.metrics.psychometrics import (
    magnifying_glass,
    mds_structure,
    mean_fit,
    mean_item_correlation,
    value_scores,
)
from robusteval.metrics.stability import (
    cardinal_scores,
    kendalls_w,
    max_rank_change,
    mean_stability,
    rank_order_stability,
    stability_matrix,
    win_rates,
)
from robusteval.metrics.stats import bootstrap, finite as _finite
from robusteval.probes.persona import Context
from robusteval.results.codec import decode, encode
from robusteval.results.persona import BoardEntry, Game, ModelStability, PersonaBoard

# Errors that say a prompt did not fit the model's window (llama.cpp, OpenAI, vLLM wordings).
WINDOW_ERROR = re.compile(r"context (size|length|window)|maximum context|context_length|too long|n_ctx", re.I)


class _ContextTally:
    """One context's answers: personas x items, and the counts its figures read."""

    def __init__(self, n_personas: int, n_items: int):
        self.answers = np.full((n_personas, n_items), np.nan)
        self.rows = self.invalid = self.failed = 0
        self.first_error: str | None = None  # of the first failed answer
        self.letter_mass = array("d")  # logprob scorings: per answer that has one, in order


class PersonaTally:
    """A model's questionnaire answers as compact arrays, filled one sample at a time: per context
    a personas x items matrix of answers and the counts of answers, invalid and failed ones. The
    suite keeps this instead of its samples, so memory does not grow with the answers' texts; the
    figures equal those of the samples (`model_metrics` is this tally over a list)."""

    def __init__(self, personas: list[Persona], contexts: list[str], questionnaire: Questionnaire | None):
        """``questionnaire`` None: the counts only (no answer is placed)."""
        self.row = {p.id: i for i, p in enumerate(personas)} if questionnaire else {}
        self.col = {item.id: j for j, item in enumerate(questionnaire.items)} if questionnaire else {}
        self.contexts = {name: self._context() for name in contexts}
        self.count = self.invalid = self.failed = 0

    def _context(self) -> _ContextTally:
        return _ContextTally(len(self.row), len(self.col))

    def add(self, s: Any) -> None:
        self.count += 1
        self.invalid += s.status == "invalid"
        self.failed += s.status == "failed"
        c = self.contexts.get(s.context)
        if c is None:  # a context not asked for: counted in the totals, as a list's samples are
            c = self.contexts[s.context] = self._context()
        c.rows += 1
        c.invalid += s.status == "invalid"
        if s.status == "failed":
            c.failed += 1
            if c.first_error is None:
                c.first_error = s.error or "request failed"
        if s.letter_mass is not None:
            c.letter_mass.append(s.letter_mass)
        if s.answer is not None and s.persona_id in self.row:
            c.answers[self.row[s.persona_id], self.col[s.item_id]] = s.answer

    def add_all(self, samples: Iterable[Any]) -> PersonaTally:
        for s in samples:
            self.add(s)
        return self

    def matrix(self, context: str) -> np.ndarray:
        c = self.contexts.get(context)
        return np.full((len(self.row), len(self.col)), np.nan) if c is None else c.answers.copy()


def _tally(samples: Iterable[Any], personas: list[Persona], contexts: list[str],
           questionnaire: Questionnaire) -> PersonaTally:
    return PersonaTally(personas, contexts, questionnaire).add_all(samples)


def answer_matrix(samples: Sequence[Any], personas: list[Persona], context: str,
                  questionnaire: Questionnaire) -> np.ndarray:
    """Personas x items answers (1..n) in one context; NaN for invalid or failed."""
    return _tally(samples, personas, [context], questionnaire).matrix(context)


def context_scores(samples: Sequence[Any] | PersonaTally, personas: list[Persona], contexts: list[str],
                   questionnaire: Questionnaire) -> list[np.ndarray]:
    """Value scores per context (personas x values), from the samples or a tally of them."""
    tally = samples if isinstance(samples, PersonaTally) else _tally(samples, personas, contexts, questionnaire)
    reverse = np.array([item.reverse for item in questionnaire.items])
    return [value_scores(tally.matrix(c), questionnaire.item_values,
                         questionnaire.values, reverse=reverse, n_points=len(questionnaire.scale)) for c in contexts]


def lost_contexts(samples: Sequence[Any] | PersonaTally, contexts: list[str]) -> dict[str, dict[str, Any]]:
    """Contexts with failed answers (a request or a conversation turn that failed): how many of
    how many, and the first error. A figure over such a context would be computed from what is
    left, so it is reported n/a instead."""
    tally = samples if isinstance(samples, PersonaTally) else PersonaTally([], contexts, None).add_all(samples)
    return _lost(tally, contexts)


def _lost(tally: PersonaTally, contexts: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in contexts:
        c = tally.contexts.get(name)
        if c is not None and c.failed:
            out[name] = {"failed": c.failed, "answers": c.rows, "error": c.first_error}
    return out


def lost_message(lost: dict[str, dict[str, Any]]) -> str:
    """Why figures are n/a, and how to fix it (a window too small for the context, or failures a
    rerun retries)."""
    parts = [f"context {name} lost {d['failed']} of {d['answers']} answers ({d['error']})" for name, d in lost.items()]
    if any(WINDOW_ERROR.search(d["error"]) for d in lost.values()):
        fix = ("the conversation does not fit the model's window: give the model a larger one (e.g. "
               "--model 'llamacpp?n_ctx=8192'; an API model with a longer context) or cut each opening post "
               "with --context-max-tokens N")
    else:
        fix = "rerun the same command to retry the failed requests (answers already received are cached)"
    return "; ".join(parts) + f". Every figure that involves it is n/a. To fix: {fix}."


NA_FIT = {"cfi": None, "srmr": None, "rmsea": None}


def model_metrics(samples: Sequence[Any] | PersonaTally, personas: list[Persona], contexts: list[Context],
                  questionnaire: Questionnaire, *, seed: int = 0, n_resamples: int = 1000,
                  mds_method: str = "classic") -> dict[str, Any]:
    """Stability (with a persona bootstrap CI), the context matrix, per-value stability and validity.

    A context that lost answers (failed requests) makes every figure involving it n/a (None, with
    ``na_reason``): its stability pairs, the overall and per-value means, its validity; figures of
    the other contexts stay."""
    names = [c.name for c in contexts]
    tally = samples if isinstance(samples, PersonaTally) else _tally(samples, personas, names, questionnaire)
    lost = _lost(tally, names)
    scores = context_scores(tally, personas, names, questionnaire)
    matrix = stability_matrix(scores).tolist()
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if a in lost or b in lost:
                matrix[i][j] = None
    flat = np.hstack(scores)
    if lost:
        stability = {"value": None, "ci_low": None, "ci_high": None, "n": len(personas)}
        per_value: dict[str, float | None] = dict.fromkeys(questionnaire.values)
    else:
        stability = bootstrap(flat, lambda rows: mean_stability(rows, len(names)), n_resamples=n_resamples,
                              seed=seed).as_dict()
        per_value = {}
        defined = 0
        for v, value in enumerate(questionnaire.values):
            rhos = [rank_order_stability(scores[i][:, [v]], scores[j][:, [v]])
                    for i, j in combinations(range(len(names)), 2)]
            defined += sum(1 for r in rhos if np.isfinite(r))
            per_value[value] = _mean([r for r in rhos if np.isfinite(r)])
    reverse = np.array([item.reverse for item in questionnaire.items])
    validity: dict[str, dict[str, Any]] = {}
    for name in names:
        c = tally.contexts[name]
        counts = {"answers": c.rows, "invalid": c.invalid, "failed": c.failed,
                  "invalid_rate": _rate(c.invalid, c.failed, c.rows), "letter_mass": _mean(c.letter_mass)}
        if name in lost:
            validity[name] = {**counts, "mds": {"stress1": None, "error": "context lost answers"}, "cfa": {},
                              "cfa_mean": dict(NA_FIT), "mean_item_r": None,
                              "na_reason": lost_message({name: lost[name]})}
            continue
        raw = tally.matrix(name)
        raw = np.where(reverse[None, :], len(questionnaire.scale) + 1 - raw, raw)
        mds = mds_structure(raw, questionnaire.item_values, questionnaire.values, seed=seed, method=mds_method)
        fits = magnifying_glass(raw, questionnaire.item_values)
        validity[name] = {
            **counts,
            "mds": mds.as_dict(tuple(item.id for item in questionnaire.items)),
            "cfa": {k: f.as_dict() for k, f in fits.items()},
            "cfa_mean": mean_fit(fits),
            "mean_item_r": mean_item_correlation(raw),
        }
    out = {
        "rank_order_stability": stability,
        # of the context pair x value correlations the mean is over, how many are defined (a value
        # all personas answer alike, or fewer than 3 personas, has none): said beside the figure
        "stability_correlations": len(questionnaire.values) * len(list(combinations(names, 2))),
        "stability_defined": None if lost else defined,
        "stability_matrix": {"contexts": names, "values": matrix},
        "stability_per_value": per_value,
        "validity": validity,
        "answers": tally.count,
        "invalid": tally.invalid,
        "failed": tally.failed,
        "invalid_rate": _rate(tally.invalid, tally.failed, tally.count),
    }
    if lost:
        out["lost_contexts"] = lost
        out["na_reason"] = lost_message(lost)
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def _rate(invalid: int, failed: int, rows: int) -> float | None:
    """Invalid answers among those answered (failed ones left out)."""
    answered = rows - failed
    return invalid / answered if answered else None


def games(metrics: Mapping[str, ModelStability | dict[str, Any]],
          contexts: list[str]) -> tuple[list[Game], np.ndarray, list[list[int]]]:
    """The models x games table (higher is better: SRMR, RMSEA and Stress-1 enter as 1 - x), its
    games, and for each context the columns of the games that involve it (read from each game's
    contexts, never from its name)."""
    typed = decode(dict[str, ModelStability], dict(metrics))
    columns: list[Game] = []
    rows: dict[str, list[float | None]] = {m: [] for m in metrics}
    for a, b in combinations(range(len(contexts)), 2):
        columns.append(Game("stability", (contexts[a], contexts[b])))
        for m, mm in typed.items():
            rows[m].append(mm.stability_matrix.values[a][b])
    for c in contexts:
        for metric, invert in (("cfi", False), ("srmr", True), ("rmsea", True), ("stress1", True)):
            columns.append(Game(metric, (c,)))
            for m, mm in typed.items():
                v = mm.validity[c]
                x = v.mds.stress1 if metric == "stress1" else getattr(v.cfa_mean, metric)
                rows[m].append(None if x is None else (1 - x if invert else x))
    table = np.array([[np.nan if x is None else x for x in rows[m]] for m in metrics], dtype=float).reshape(
        len(metrics), len(columns))
    groups = [[j for j, game in enumerate(columns) if c in game.contexts] for c in contexts]
    return columns, table, groups


def persona_board(metrics: Mapping[str, ModelStability | dict[str, Any]], contexts: list[str]) -> PersonaBoard:
    """Cardinal score and win rate per model, and the benchmark's diversity and sensitivity
    (undefined figures are None).

    A model that lost a context has no cardinal score (its mean would be over the games left), and
    then no model has a win rate, nor the benchmark a diversity or sensitivity: each compares every
    model on every game. ``na_reason`` says why."""
    typed = decode(dict[str, ModelStability], dict(metrics))
    columns, table, groups = games(typed, contexts)
    cardinal, ordinal = cardinal_scores(table), win_rates(table)
    w = kendalls_w(table)
    lost = {m: mm.na_reason for m, mm in typed.items() if mm.na_reason}
    return PersonaBoard(
        games=[g.name for g in columns],
        models={m: BoardEntry(cardinal=None if m in lost else _finite(cardinal[i]),
                              win_rate=None if lost else _finite(ordinal[i]), na_reason=lost.get(m))
                for i, m in enumerate(typed)},
        kendalls_w=None if lost else _finite(w),
        diversity=None if lost or not np.isfinite(w) else float(1 - w),
        sensitivity_win_rate=None if lost else max_rank_change(table, groups, win_rates),
        sensitivity_cardinal=None if lost else max_rank_change(table, groups, cardinal_scores),
        na_reason="; ".join(f"{m}: {reason}" for m, reason in lost.items()) if lost else None)


def leaderboard(metrics: Mapping[str, ModelStability | dict[str, Any]], contexts: list[str]) -> dict[str, Any]:
    """`persona_board` as results.json holds it."""
    data: dict[str, Any] = encode(persona_board(metrics, contexts))
    return data


def model_record(*args: Any, **kwargs: Any) -> ModelStability:
    """`model_metrics` as a typed record."""
    return decode(ModelStability, json_safe(model_metrics(*args, **kwargs)))


def json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


__all__ = ["WINDOW_ERROR", "PersonaTally", "answer_matrix", "context_scores", "games", "json_safe", "leaderboard",
           "lost_contexts", "lost_message", "model_metrics", "model_record", "persona_board"]
