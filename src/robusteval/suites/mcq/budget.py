"""``--budget``: each model asked in its two stages (the grids' cells chosen first, then where the
fit of those answers is least sure), tallied as the samples stream, and the full grid's estimate."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from robusteval.metrics.budget import (
    FIRST,
    Grid,
    estimate_grid,
    grow,
    observed_grid,
    plan,
)
from robusteval.metrics.budget_covariates import Covariates, family_covariates
from robusteval.metrics.mcq import McqTally
from robusteval.probes.design import Design
from robusteval.probes.variant_texts import variant_texts
from robusteval.results.budget import BudgetEstimate
from robusteval.results.mcq import InvalidReplies, McqExtra
from robusteval.results.search import SearchResults
from robusteval.suites.base import SuiteContext, SuiteResult
from robusteval.suites.mcq.ask import LOGLIK, Sample
from robusteval.suites.mcq.options import Options
from robusteval.suites.mcq.search import Searched, ask_searched


class Cell(NamedTuple):
    """What a budget estimate reads of an answered sample."""

    family: str
    item_id: str
    variant: str | int
    correct: bool | None


def _first(options: Options) -> float:
    """The share of the budget chosen before any answer: all of it, or FIRST when adaptive."""
    return FIRST if options.budget_design == "adaptive" else 1.0


def plan_budget(options: Options, item_ids: list[str], cells: Iterable[tuple[str, str, str]], seed: int,
                design: Design) -> tuple[dict[str, Grid], dict[str, Any]]:
    """``--budget``'s grids (`metrics.budget.plan`) with each family's ``--budget-covariates``, and
    what results.json's design says of them. The texts are embedded here, before any request, so
    a missing embedder stops the run before it has cost anything."""
    kinds = options.budget_covariates

    def covariates(family: str, variants: tuple[str, ...]) -> Covariates:
        texts = variant_texts(family, variants, design) if "text" in kinds else None
        return family_covariates(variants, kinds, texts)

    grids = plan(item_ids, cells, options.budget or 1.0, seed=seed, first=_first(options), covariates=covariates)
    return grids, {"budget": options.budget, "budget_design": options.budget_design,
                   "budget_covariates": list(kinds)}


def _asked_cells(grids: dict[str, Grid] | None) -> set[tuple[str, str, str]] | None:
    return None if grids is None else set().union(*(g.cells() for g in grids.values()))


async def ask_budgeted(grids: dict[str, Grid], ask_cells: Callable[[set[tuple[str, str, str]]], Awaitable[None]],
                       answered: list[Any]) -> dict[str, Grid]:
    """``--budget``'s two stages for one model: the grids' first-stage cells, then (`metrics.budget.grow`)
    the cells where the fit of those answers is least sure. ``ask_cells`` asks a set of cells and
    appends their answers to ``answered``; returns the grids with both stages. Under ``--estimate``
    nothing is answered, and the second stage is counted as a seeded draw of the same size."""
    first = _asked_cells(grids) or set()
    await ask_cells(first)
    # under --scoring loglik a grid's (``order``) answers are its label rule's, the rule every backend scores
    grown = {family: grow(grid, observed_grid(grid, _answers(answered, family, f"{family}/{LOGLIK}label")))
             for family, grid in grids.items()}
    await ask_cells((_asked_cells(grown) or set()) - first)
    return grown


def _answers(answered: Iterable[Any], *families: str) -> Iterator[tuple[str, str, bool | None]]:
    """The (item id, variant name, correct) answers of any of ``families``."""
    return ((c.item_id, str(c.variant), c.correct) for c in answered if c.family in families)


def budget_estimates(grids: dict[str, Grid], samples: list[Any], budget: float, seed: int) -> dict[str, BudgetEstimate]:
    """Per family answered, the full grid's estimate from the cells this model answered: under
    --scoring loglik each rule's family (``order/loglik-text``) on its grid's (``order``) cells."""
    out = {}
    for family in dict.fromkeys(c.family for c in samples):
        grid = grids[family.split(f"/{LOGLIK}")[0]]
        out[family] = estimate_grid(grid, observed_grid(grid, _answers(samples, family)), budget, seed=seed)
    return out


# What a model's samples are asked by: the cells to ask (None: every one) and where each sample goes.
AskCells = Callable[[str, set[tuple[str, str, str]] | None, Callable[[Sample], None]], Awaitable[None]]


@dataclass
class Asked:
    """Every model's figures: metrics (its tally's), its ``--budget`` estimates, its unreadable replies."""

    metrics: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, dict[str, BudgetEstimate]] = field(default_factory=dict)
    search: SearchResults = field(default_factory=dict)
    invalid: dict[str, InvalidReplies] = field(default_factory=dict)

    def result(self, extra: McqExtra) -> SuiteResult:
        """The suite's result: ``extra`` (the design...) with the budget, the search and the invalid
        replies that apply."""
        invalid = {model: counts for model, counts in self.invalid.items() if counts.invalid}
        extra = replace(extra, budget=self.budget or None, search=self.search or None,
                        invalid_replies=invalid or None)  # only where some reply was unreadable
        return SuiteResult(metrics=self.metrics, samples=[], extra=extra)


async def ask_models(ctx: SuiteContext[Options], ids: list[str], grids: dict[str, Grid] | None, ask: AskCells,
                     metrics_of: Callable[[McqTally], Any], searches: dict[str, Searched] | None = None) -> Asked:
    """Each model in turn: its variants asked by ``ask`` (with ``grids``, ``--budget``'s two stages),
    each sample into the compact tally as it is read and then dropped, so memory does not grow
    with the number of samples (metrics/mcq.py; `SuiteContext.stream` writes it to samples.jsonl);
    with ``searches``, only the cells each family's search picks, round by round (`suites.mcq.search`);
    then the tally's figures (``metrics_of``), unless nothing was answered (``--estimate``)."""
    out = Asked()
    ctx.stage("asking")
    for model in ctx.models:
        tally = McqTally(ids)
        asked: list[Cell] = []  # --budget: the cells answered, for the full grid's estimate

        def keep(sample: Sample, tally: McqTally = tally, asked: list[Cell] = asked) -> None:
            tally.add(sample)
            if grids is not None or searches is not None:
                asked.append(Cell(sample.family, sample.item_id, sample.variant, sample.correct))

        async def ask_cells(cells: set[tuple[str, str, str]] | None, keep: Callable[[Sample], None] = keep,
                            model: str = model) -> None:
            await ask(model, cells, keep)

        model_grids = None
        found = None
        if grids is not None:
            model_grids = await ask_budgeted(grids, ask_cells, asked)
        elif searches is not None:
            found = await ask_searched(searches, ctx.config.seed, ask_cells, asked)
        else:
            await ask_cells(None)
        if not ctx.engine.dry_run:  # --estimate: nothing was answered, nothing to measure
            out.metrics[model] = metrics_of(tally)
            out.invalid[model] = tally.invalid_replies()
            if found is not None:
                out.search[model] = found
            if model_grids is not None:
                out.budget[model] = budget_estimates(model_grids, asked, ctx.options.budget or 1.0, ctx.config.seed)
    return out
