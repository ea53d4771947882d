"""How many variants and items an interval of a stated width needs (``robusteval plan``, issue 46).

A pilot's items x variants grid gives the crossed design's variance components (`two_way.components`:
sigma_a^2 between items, sigma_b^2 between variants, sigma_e^2 their interaction plus noise). At n
items and k variants the grid's mean has variance sigma_a^2/n + sigma_b^2/k + sigma_e^2/(n k), and the
mean squares the interval will be computed from have expectations E MS_items = k sigma_a^2 + sigma_e^2,
E MS_variants = n sigma_b^2 + sigma_e^2, E MS_residual = sigma_e^2. The planned width is the width of
`two_way`'s interval at those expected mean squares (the same t quantile at Satterthwaite's df), so
the planner and the interval a run will print are one formula; the item-only interval's width,
t(n - 1) sqrt(E MS_items / (n k)), is planned beside it.

Why the width at the expected mean squares and not a bound: a run's realised width scatters around
it (the mean squares are estimates), a little narrower on average (a square root of an unbiased
variance is biased low); benchmarks and tests/metrics/test_sample_size.py measure how close. The
variant term sigma_b^2/k does not shrink with items: below some number of variants no number of
items reaches the target (`floor`), which is the planner's first answer for a prompt family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import chi2

from robusteval.metrics.two_way import Components, item_only_half, satterthwaite

MAX_ITEMS = 10_000_000  # a search bound: past this many items the target is called out of reach


@dataclass(frozen=True)
class PlannedSize:
    """One row of a plan: ``variants`` and the fewest ``items`` whose planned two-way interval is at
    most the target width (None: out of reach at this many variants), with the widths planned there,
    and the fewest items the item-only interval needs at the same number of variants."""

    variants: int
    items: int | None
    width: float | None  # the planned two-way width at (items, variants)
    item_only_items: int | None
    item_only_width: float | None


def planned_width(c: Components, n: int, k: int, *, level: float = 0.95) -> float:
    """The planned full width (high - low) of the two-way interval at ``n`` items and ``k`` variants."""
    ms_resid = c.var_interaction
    ms_items = k * c.var_items + ms_resid
    ms_variants = n * c.var_variants + ms_resid
    if ms_items + ms_variants - ms_resid <= 0:
        return 0.0
    if c.var_variants <= 0:  # no variant effect: `two_way` gives the item-only interval
        return item_only_width(c, n, k, level=level)
    return 2 * satterthwaite(ms_items, ms_variants, ms_resid, n, k, level)[1]


def item_only_width(c: Components, n: int, k: int, *, level: float = 0.95) -> float:
    """The planned full width of the item-only interval (clustered by item: the variants taken as fixed)."""
    return 2 * item_only_half(k * c.var_items + c.var_interaction, n, k, level)


def floor(c: Components, k: int, *, level: float = 0.95) -> float:
    """The two-way width with ``k`` variants and unlimited items: what the variants alone leave."""
    return planned_width(c, MAX_ITEMS, k, level=level)


def fewest_items(width_at: Callable[..., float], target: float) -> int | None:
    """The fewest items n >= 2 with ``width_at(n) <= target`` (a width falling with n), None when even
    `MAX_ITEMS` do not reach it."""
    if width_at(MAX_ITEMS) > target:
        return None
    low, high = 2, MAX_ITEMS
    if width_at(low) <= target:
        return low
    while high - low > 1:  # width_at(low) > target >= width_at(high)
        mid = (low + high) // 2
        if width_at(mid) <= target:
            high = mid
        else:
            low = mid
    return high


def plan(c: Components, target: float, variants: list[int], *, level: float = 0.95) -> list[PlannedSize]:
    """For each number of variants, the fewest items whose two-way (and item-only) interval is at
    most ``target`` wide."""
    if not target > 0:
        raise ValueError("the target width must be positive")
    rows = []
    for k in variants:
        if k < 2:
            raise ValueError("a two-way interval needs at least 2 variants")
        n = fewest_items(lambda n, k=k: planned_width(c, n, k, level=level), target)
        m = fewest_items(lambda n, k=k: item_only_width(c, n, k, level=level), target)
        rows.append(PlannedSize(k, n, None if n is None else planned_width(c, n, k, level=level), m,
                                None if m is None else item_only_width(c, m, k, level=level)))
    return rows


def fewest_variants(c: Components, target: float, *, level: float = 0.95, most: int = 10_000) -> int | None:
    """The fewest variants with which some number of items reaches ``target`` (None: not within ``most``)."""
    if floor(c, most, level=level) > target:
        return None
    low, high = 2, most
    if floor(c, low, level=level) <= target:
        return low
    while high - low > 1:
        mid = (low + high) // 2
        if floor(c, mid, level=level) <= target:
            high = mid
        else:
            low = mid
    return high


def with_upper_variance(c: Components, assurance: float) -> Components:
    """``c`` with the variants' variance at its upper ``assurance`` confidence bound: the pilot's
    MS_variants estimates n sigma_b^2 + sigma_e^2 from k - 1 degrees of freedom (a chi-square with k - 1
    df for normal effects), so E MS_variants <= MS_variants (k - 1) / chi2_{1 - assurance}(k - 1) with
    that confidence. Why: a pilot of 5-10 templates under-states the template variance as often as
    not, and a plan on an under-stated variance misses its width; a plan on the bound misses it with
    chance about 1 - assurance (benchmarks/rank_stability.py --plan)."""
    if not 0 < assurance < 1:
        raise ValueError("the assurance is a probability between 0 and 1")
    df = c.variants - 1
    upper = c.ms_variants * df / float(chi2.ppf(1 - assurance, df))
    return replace(c, var_variants=max(max(upper - c.var_interaction, 0.0) / c.items, c.var_variants))


def default_variants(pilot_variants: int, fewest: int | None = None) -> list[int]:
    """The numbers of variants a plan shows when none are asked: a ladder, the pilot's number, and the
    fewest that can reach the target (`fewest_variants`), where known."""
    return sorted({2, 3, 5, 10, 20, 50, 100, pilot_variants, *([fewest] if fewest else [])} - {0, 1})


def simulate_widths(c: Components, n: int, k: int, reps: int, rng: np.random.Generator,
                    *, level: float = 0.95) -> np.ndarray:
    """Widths of `two_way` intervals on ``reps`` normal crossed grids with these components (a check of
    the planner against the interval it plans for; tests and benchmarks)."""
    from robusteval.metrics.two_way import two_way

    out = np.empty(reps)
    for r in range(reps):
        y = (c.mean + rng.normal(0, np.sqrt(c.var_items), (n, 1)) + rng.normal(0, np.sqrt(c.var_variants), (1, k))
             + rng.normal(0, np.sqrt(c.var_interaction), (n, k)))
        tw = two_way(y, level=level)
        out[r] = np.nan if tw.low is None or tw.high is None else tw.high - tw.low
    return out
