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


def two_way(cells: np.ndarray, *, level: float = 0.95) -> TwoWay:
    """`TwoWay` of an items x variants grid of shares right (NaN: a cell not answered). Items
    missing a variant are left out (the decomposition needs the full grid), so ``items`` may be
    fewer than the family's; a variant no item answered is left out first."""
    y = np.asarray(cells, dtype=float)
    y = y.reshape(len(y), -1)
    y = y[:, np.isfinite(y).any(axis=0)]  # a variant never answered (every request failed) is no draw
    y = y[np.isfinite(y).all(axis=1)]
    n, k = y.shape
    if n == 0 or k == 0:
        return TwoWay(None, items=n, variants=k)
    mean = float(y.mean())
    if n < 2 or k < 2:
        return TwoWay(mean, items=n, variants=k)
    rows = y.mean(axis=1) - mean
    cols = y.mean(axis=0) - mean
    resid = y - mean - rows[:, None] - cols[None, :]
    ms_items = k * float(rows @ rows) / (n - 1)
    ms_variants = n * float(cols @ cols) / (k - 1)
    ms_resid = float((resid * resid).sum()) / ((n - 1) * (k - 1))
    var_items = max(ms_items - ms_resid, 0.0) / k
    var_variants = max(ms_variants - ms_resid, 0.0) / n
    total = var_items + var_variants + ms_resid
    shares = VarianceShares(var_variants / total, var_items / total, ms_resid / total) if total > 0 else None
    t = _student_t()
    q = 1 - (1 - level) / 2
    item_var = ms_items / (n * k)
    if item_var <= 0:  # every item alike (all right, all wrong): Wilson over the items, one trial each
        low, high = wilson(mean, n, level)
        return TwoWay(mean, float(low), float(high), float(low), float(high), n, k, shares, None)
    item_half = float(t.ppf(q, n - 1)) * np.sqrt(item_var)
    if ms_variants > ms_resid:
        terms = np.array([ms_items, ms_variants, -ms_resid])
        dfs = np.array([n - 1, k - 1, (n - 1) * (k - 1)], dtype=float)
        var = float(terms.sum()) / (n * k)
        df = float(terms.sum() ** 2 / ((terms ** 2) / dfs).sum())
        half = float(t.ppf(q, df)) * np.sqrt(var) if np.isfinite(df) else float(ndtri(q)) * np.sqrt(var)
    else:
        df, half = float(n - 1), item_half
    return TwoWay(mean, _clip(mean - half), _clip(mean + half), _clip(mean - item_half), _clip(mean + item_half),
                  n, k, shares, df)


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def population(cells: np.ndarray, *, level: float = 0.95) -> PopulationAccuracy:
    """`two_way` as results.json's ``population`` holds it."""
    tw = two_way(cells, level=level)
    return PopulationAccuracy(tw.value, tw.low, tw.high, tw.items, tw.variants, tw.shares)
