"""The population mean accuracy of a family whose variants are a sample (templates, paraphrases,
sampled draws), with an interval over items and variants together (issue 46).

Every other interval robusteval prints is clustered by item: it says how sure we are of the
accuracy *on these templates*. When the templates were drawn from a population of prompts
(Mizrahi et al., TACL 2024), a claim about "accuracy under prompt variation" is about that
population, and with 5 or 10 templates the spread between them adds a variance the item interval
leaves out.

The grid is items x variants, Y_iv (the share right of cell iv), read as a crossed random-effects
design Y_iv = mu + a_i + b_v + e_iv (items and variants both sampled; e their interaction plus
noise). The mean over the grid estimates mu with variance
sigma_a^2 / n + sigma_b^2 / k + sigma_e^2 / (n k), estimated without bias by the two-way ANOVA's
mean squares: (MS_items + MS_variants - MS_residual) / (n k). The interval is the mean plus or
minus a t quantile at Satterthwaite's degrees of freedom for that combination of mean squares.

Why not the two-way ("product") bootstrap, resampling rows and columns independently: its
variance is about sigma_a^2 / n + sigma_b^2 / k + 3 sigma_e^2 / (n k), the interaction counted
three times (McCullagh 2000; Owen 2007), so it is conservative where items and variants interact,
and it shrinks the variant term by (k - 1) / k, too narrow at 5 templates. The moment estimator
above is the unbiased combination McCullagh gives. docs/statistics.md has the coverage.

Where the variants show no more spread than the interaction explains (MS_variants <= MS_residual,
sigma_b^2 truncated at 0) the interval is the item-only one of the same kind, mean plus or minus
t(n - 1) sqrt(MS_items / (n k)): identical variants give exactly the item-only interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from robusteval.metrics.stats import _student_t, wilson
from robusteval.probes.design import FAMILIES
from robusteval.probes.registry import is_perturbation
from robusteval.results.mcq import PopulationAccuracy, VarianceShares

# the families whose variants are draws from a population: templates (with or without worked
# examples), sampled draws of one prompt, model-written paraphrases, formats drawn from FormatSpread's
# grammar (``formats``, ``formats:N``). ``format``, ``order`` and ``circular`` are a fixed design
# (every label style, permutation or rotation asked), as are other perturbations (an original and
# its corruptions at a set rate).
SAMPLED = frozenset({"prompt", "fewshot", "seeds", "paraphrase", "formats"})


def is_sampled(family: str) -> bool:
    """Whether ``family``'s variants are a sample of a population: each axis of it (``a×b`` for a
    crossed design; a log-likelihood rule's ``/rule`` ignored) is one of `SAMPLED`, or a name no run
    gives (a grid's own family, ``grid`` by default: the user names what its variants are)."""
    if not family:
        return False
    axes = [a.split(":")[0] if a.startswith("formats:") else a for a in family.split("/")[0].split("×")]
    return all(a in SAMPLED or (a not in FAMILIES and not is_perturbation(a)) for a in axes)


@dataclass(frozen=True)
class TwoWay:
    """The population mean over items and variants with its interval (``value``, ``low``, ``high``;
    None where fewer than 2 items or 2 variants), the item-only interval of the same kind beside it,
    the counts used (items answered in every variant) and the variance shares."""

    value: float | None
    low: float | None = None
    high: float | None = None
    item_low: float | None = None
    item_high: float | None = None
    items: int = 0
    variants: int = 0
    shares: VarianceShares | None = None
    df: float | None = None  # Satterthwaite's degrees of freedom


@dataclass(frozen=True)
class Components:
    """The crossed design's variance components, estimated from the two-way ANOVA's mean squares
    (each truncated at 0), with the complete grid's mean and size: what `two_way` reports and what
    the planner (`metrics.sample_size`) extrapolates to other numbers of items and variants."""

    mean: float
    items: int
    variants: int
    var_items: float  # sigma_a^2: between questions
    var_variants: float  # sigma_b^2: between variants (templates)
    var_interaction: float  # sigma_e^2: their interaction plus a cell's own noise (= MS_residual)
    ms_items: float
    ms_variants: float

    @property
    def shares(self) -> VarianceShares | None:
        total = self.var_items + self.var_variants + self.var_interaction
        if total <= 0:
            return None
        return VarianceShares(self.var_variants / total, self.var_items / total, self.var_interaction / total)


def complete(cells: np.ndarray) -> np.ndarray:
    """The items x variants grid of shares right with the variants no item answered (every request
    failed: no draw), then the items missing a variant, left out: the decomposition needs the full grid."""
    y = np.asarray(cells, dtype=float)
    y = y.reshape(len(y), -1)
    y = y[:, np.isfinite(y).any(axis=0)]
    full: np.ndarray = y[np.isfinite(y).all(axis=1)]
    return full


def components(y: np.ndarray) -> Components:
    """`Components` of a complete grid (`complete`) of at least 2 items and 2 variants."""
    n, k = y.shape
    mean = float(y.mean())
    rows = y.mean(axis=1) - mean
    cols = y.mean(axis=0) - mean
    resid = y - mean - rows[:, None] - cols[None, :]
    ms_items = k * float(rows @ rows) / (n - 1)
    ms_variants = n * float(cols @ cols) / (k - 1)
    ms_resid = float((resid * resid).sum()) / ((n - 1) * (k - 1))
    return Components(mean, n, k, max(ms_items - ms_resid, 0.0) / k, max(ms_variants - ms_resid, 0.0) / n,
                      ms_resid, ms_items, ms_variants)


def two_way(cells: np.ndarray, *, level: float = 0.95) -> TwoWay:
    """`TwoWay` of an items x variants grid of shares right (NaN: a cell not answered). Items
    missing a variant are left out (the decomposition needs the full grid), so ``items`` may be
    fewer than the family's; a variant no item answered is left out first."""
    y = complete(cells)
    n, k = y.shape
    if n == 0 or k == 0:
        return TwoWay(None, items=n, variants=k)
    if n < 2 or k < 2:
        return TwoWay(float(y.mean()), items=n, variants=k)
    c = components(y)
    mean, ms_resid = c.mean, c.var_interaction
    item_var = c.ms_items / (n * k)
    if item_var <= 0:  # every item alike (all right, all wrong): Wilson over the items, one trial each
        low, high = wilson(mean, n, level)
        return TwoWay(mean, float(low), float(high), float(low), float(high), n, k, c.shares, None)
    item_half = item_only_half(c.ms_items, n, k, level)
    if c.ms_variants > ms_resid:
        df, half = satterthwaite(c.ms_items, c.ms_variants, ms_resid, n, k, level)
    else:
        df, half = float(n - 1), item_half
    return TwoWay(mean, _clip(mean - half), _clip(mean + half), _clip(mean - item_half), _clip(mean + item_half),
                  n, k, c.shares, df)


def item_only_half(ms_items: float, n: int, k: int, level: float = 0.95) -> float:
    """Half-width of the item-only interval of an n x k grid: t(n - 1) sqrt(MS_items / (n k))."""
    return float(_student_t().ppf(1 - (1 - level) / 2, n - 1)) * float(np.sqrt(ms_items / (n * k)))


def satterthwaite(ms_items: float, ms_variants: float, ms_resid: float, n: int, k: int,
                  level: float = 0.95) -> tuple[float, float]:
    """(degrees of freedom, half-width) of the two-way interval of an n x k grid with these mean
    squares (observed ones, or the expected ones of a planned size): the variance
    (MS_items + MS_variants - MS_residual) / (n k) at a t quantile with Satterthwaite's df."""
    terms = np.array([ms_items, ms_variants, -ms_resid])
    dfs = np.array([n - 1, k - 1, (n - 1) * (k - 1)], dtype=float)
    var = float(terms.sum()) / (n * k)
    df = float(terms.sum() ** 2 / ((terms ** 2) / dfs).sum())
    q = 1 - (1 - level) / 2
    half = float(_student_t().ppf(q, df)) * np.sqrt(var) if np.isfinite(df) else float(ndtri(q)) * np.sqrt(var)
    return df, float(half)


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def population(cells: np.ndarray, *, level: float = 0.95) -> PopulationAccuracy:
    """`two_way` as results.json's ``population`` holds it."""
    tw = two_way(cells, level=level)
    return PopulationAccuracy(tw.value, tw.low, tw.high, tw.items, tw.variants, tw.shares)
