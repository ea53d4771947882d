"""Confidence intervals that keep their coverage on the small item counts robustness runs use.

Variants of one question are not independent (an easy question is easy in every format), so every
interval here treats the *item* as the unit: a share over (item, variant) cells is a clustered
proportion, and a bootstrap resamples items with replacement and recomputes the whole statistic.

Which interval, and why (docs/statistics.md has the coverage figures behind each choice):

- `proportion`: a share of cells (accuracy, invalid rate, pooled agreement). Wilson's score
  interval, at the number of cells when each item gives one 0/1 cell (the textbook case), else at
  the effective number of cells, n / design effect, with the design effect estimated from the
  items' residuals and the t correction of Korn and Graubard (1998) for estimating it from few
  items. Unlike any bootstrap it never collapses at 0 or 1: all 20 of 20 right is [0.84, 1].
- `bootstrap`, `bootstrap_sums`: any other statistic (consistency rate, spread, F1, stability).
  BCa (bias-corrected and accelerated, Efron 1987), whose bias correction matters for statistics
  such as the spread (max minus min of accuracies), whose resamples sit above their sample value.
  The percentile method, used before, stays available (``method="percentile"``) for comparison:
  with 20 items its nominal 95% intervals covered 0.91-0.93.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal

import numpy as np
from scipy.special import ndtr, ndtri

from robusteval.estimate import Estimate

Method = Literal["bca", "percentile"]


def _student_t() -> Any:
    """scipy's t distribution, imported on first use: importing scipy.stats costs over a second of
    start-up on a busy 2-core machine, and many runs never need a t-quantile."""
    from scipy.stats import t

    return t


def wilson(p: np.ndarray | float, n: np.ndarray | float, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval for a share ``p`` observed over ``n`` trials (both may be arrays,
    ``n`` need not be whole: an effective number of trials)."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    z = float(ndtri(1 - (1 - level) / 2))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z * z / (4 * n * n))
    # Wilson's interval always holds p; rounding put its lower end 3e-17 above p = 0, which the
    # report's error bars (value - low) read as a negative length
    return np.clip(np.minimum(centre - half, p), 0.0, 1.0), np.clip(np.maximum(centre + half, p), 0.0, 1.0)


def proportion(numerator: np.ndarray, denominator: np.ndarray, *, level: float = 0.95) -> Estimate:
    """Share sum(numerator) / sum(denominator) of cells clustered in items, with a Wilson interval.

    ``numerator`` and ``denominator`` are per item (e.g. correct and answered cells); numerators
    may be fractional (a mean over samples) but lie in [0, denominator]. When every item gives at
    most one cell, scored 0 or 1, this is Wilson's interval over the answered items. Otherwise the
    cells of an item are correlated and Wilson is taken at the effective number of cells: the
    count at which a binomial share would have the variance the items show (the between-item,
    linearised variance of a ratio), shrunk by (z / t)^2 with n - 1 degrees of freedom because that
    variance is itself estimated from n items (Korn and Graubard 1998). When the items show no
    variance at all (every item all right, or all wrong), it falls back to one trial per item, the
    most cautious reading of such data.
    """
    y = np.asarray(numerator, dtype=float).ravel()
    x = np.asarray(denominator, dtype=float).ravel()
    n = len(y)
    total = float(x.sum())
    if total <= 0:
        return Estimate(None, n=n)
    p = float(y.sum() / total)
    used = x > 0
    clusters = int(used.sum())
    if clusters < 2:
        return Estimate(p, n=n)
    binary_cells = bool(np.all((x == 0) | (x == 1)) and np.all((y == 0) | (y == x)))
    if binary_cells:
        effective = float(clusters)
    else:
        residual = y[used] - p * x[used]
        variance = clusters / (clusters - 1) * float(residual @ residual) / (total * total)
        if variance > 0 and 0 < p < 1:
            z = float(ndtri(1 - (1 - level) / 2))
            t = float(_student_t().ppf(1 - (1 - level) / 2, clusters - 1))
            effective = p * (1 - p) / variance * (z / t) ** 2
        else:
            effective = float(clusters)
    low, high = wilson(p, effective, level)
    return Estimate(p, float(low), float(high), n)


def bootstrap(rows: np.ndarray, statistic: Callable[[np.ndarray], float], *, n_resamples: int = 1000,
              level: float = 0.95, seed: int = 0, method: Method = "bca") -> Estimate:
    """Bootstrap interval of ``statistic(rows)`` resampling rows (= items) with replacement."""
    rows = np.asarray(rows)
    n = len(rows)
    value = finite(statistic(rows))
    if value is None or n < 2:
        return Estimate(value, n=n)
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(rows[i]) for block in _index_blocks(rng, n, n_resamples) for i in block],
                     dtype=float)
    jackknife = None
    if method == "bca":
        keep = np.ones(n, dtype=bool)
        jackknife = np.empty(n)
        for i in range(n):
            keep[i] = False
            jackknife[i] = statistic(rows[keep])
            keep[i] = True
    return _interval(value, draws, jackknife, n, level)


# Items x resamples drawn at once, at most: a thousand resamples of 100,000 items drawn at once
# would take 0.8 GB per array (the draws, their counts), so they are drawn in blocks of rows. The
# generator's stream does not depend on the block size, so the resamples are the same.
BLOCK_CELLS = 1_000_000


def _index_blocks(rng: np.random.Generator, n: int, n_resamples: int) -> Iterator[np.ndarray]:
    """The resamples' item indices (resamples x n, as ``rng.integers(0, n, (n_resamples, n))``
    draws them), in blocks of rows."""
    step = max(1, BLOCK_CELLS // max(1, n))
    for start in range(0, n_resamples, step):
        yield rng.integers(0, n, (min(step, n_resamples - start), n))


def resampled_sums(rng: np.random.Generator, n_resamples: int, *per_item: np.ndarray) -> tuple[np.ndarray, ...]:
    """For each items x k matrix, its column sums in each of ``n_resamples`` item resamples
    (resamples x k): a resample is a row of counts (how often each item was drawn), the sums one
    matrix product, computed block by block so memory does not grow with items x resamples."""
    n = len(per_item[0])
    out: list[list[np.ndarray]] = [[] for _ in per_item]
    for drawn in _index_blocks(rng, n, n_resamples):
        rows = len(drawn)
        counts = np.bincount((drawn + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n).reshape(rows, n)
        for sums, matrix in zip(out, per_item):
            sums.append(counts @ matrix)
    return tuple(np.concatenate(sums) for sums in out)


def bootstrap_sums(per_item: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], *, n_resamples: int = 1000,
                   level: float = 0.95, seed: int = 0, method: Method = "bca") -> Estimate:
    """`bootstrap` for a statistic that sees the items only through their column sums.

    ``per_item`` is items x k; ``statistic`` maps sums (resamples x k) to one value per row. Ratios of
    sums (accuracy, consistency rate, shares) are such statistics. A resample is then a row of counts
    (how often each item was drawn), and all resamples are one matrix product instead of a thousand
    Python calls: a cached 1,000-sample mcq rerun spent most of its time there. The jackknife BCa
    needs is one more product (the total minus each item). The draws are the same as `bootstrap`'s
    for the same seed, so the intervals are the same.
    """
    per_item = np.asarray(per_item, dtype=float).reshape(len(per_item), -1)
    n = len(per_item)
    total = per_item.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = finite(statistic(total[None, :])[0])
    if value is None or n < 2:
        return Estimate(value, n=n)
    (sums,) = resampled_sums(np.random.default_rng(seed), n_resamples, per_item)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.asarray(statistic(sums), dtype=float)
        jackknife = np.asarray(statistic(total[None, :] - per_item), dtype=float) if method == "bca" else None
    return _interval(value, draws, jackknife, n, level)


def share_bootstrap(per_item: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], *,
                    n_resamples: int = 1000, level: float = 0.95, seed: int = 0) -> Estimate:
    """`bootstrap_sums` for a share in [0, 1] that is not one ratio (a macro accuracy over categories).

    Where every item gives the same result (all wrong, all right) no resample can differ and the
    bootstrap says [p, p]: 20 questions would "prove" an accuracy of exactly 0. Wilson's interval
    over the items, one trial each (the cautious reading `proportion` falls back to), is given then.
    """
    est = bootstrap_sums(per_item, statistic, n_resamples=n_resamples, level=level, seed=seed)
    if est.value is None or est.low is None or est.low != est.high:
        return est
    low, high = wilson(est.value, est.n, level)
    return Estimate(est.value, float(low), float(high), est.n)


MAX_UNDEFINED = 0.05  # share of bootstrap resamples where a statistic may be undefined and still get an interval


def _interval(value: float, draws: np.ndarray, jackknife: np.ndarray | None, n: int, level: float) -> Estimate:
    """The percentile interval of the finite draws, or BCa's when the jackknife values are given.

    BCa reads the draws at shifted levels: z0, the normal quantile of the share of draws below the
    sample value, corrects for a median bias (the spread's resamples mostly lie above it); the
    acceleration a, from the jackknife's skewness, for a standard error that changes with the
    value. The share is kept within the draws (half a draw from either end) so that a value at
    the edge of its bootstrap distribution (a spread of 0) gives a finite interval.

    Where the statistic is undefined in more than `MAX_UNDEFINED` of the resamples (a drop rate
    whose reference is right on one question: a third of the resamples lack it), the defined ones
    are not a sample of its uncertainty (they all hold that question: PDR [1, 1]); no interval is
    given then, rather than a falsely narrow one."""
    finite_draws = draws[np.isfinite(draws)]
    if len(finite_draws) == 0 or len(finite_draws) < (1 - MAX_UNDEFINED) * len(draws):
        return Estimate(value, n=n)
    draws = finite_draws
    alpha = (1 - level) / 2
    levels = np.array([alpha, 1 - alpha])
    if jackknife is not None and np.ptp(draws) > 0:
        b = len(draws)
        below = (np.count_nonzero(draws < value) + np.count_nonzero(draws <= value)) / (2 * b)
        z0 = float(ndtri(np.clip(below, 0.5 / b, 1 - 0.5 / b)))
        jack = jackknife[np.isfinite(jackknife)]
        u = jack.mean() - jack if len(jack) else jack  # no finite jackknife value: no acceleration
        spread = float(u @ u)
        a = float((u ** 3).sum() / (6 * spread ** 1.5)) if spread > 0 else 0.0
        z = ndtri(levels)
        # a huge acceleration would flip the sign of the denominator: read it as "as wide as it goes"
        levels = ndtr(z0 + (z0 + z) / np.maximum(1 - a * (z0 + z), 1e-9))
    low, high = np.quantile(draws, levels)
    return Estimate(value, float(low), float(high), n)


def finite(x: object) -> float | None:
    """``x`` as a float, or None where it is no finite number (NaN, an infinity, None, text): the
    form a statistic takes in results.json, where NaN is not JSON. The one copy (stats, psychometrics,
    hallucination agreement)."""
    try:
        value = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None


def spread_interval(numerators: np.ndarray, denominators: np.ndarray, *, n_resamples: int = 1000,
                    level: float = 0.95, seed: int = 0) -> Estimate:
    """Largest minus smallest of k ratios of sums (the spread of variant accuracies), with the range
    that simultaneous intervals for every pairwise difference allow.

    ``numerators`` and ``denominators`` are items x k (e.g. correct and answered cells per variant).
    The spread is max |a_v - a_w| over variant pairs, and a bootstrap of it is biased: the sample
    spread already sits above the true one (noise widens a max minus a min), and its resamples sit
    higher still, so percentile or BCa intervals miss a small or zero true spread most of the time.
    Instead the interval is built from the pairwise differences d = a_v - a_w (se from the item
    bootstrap). Lower bound: the largest of |d| - c se, with c the bootstrap quantile of the largest
    standardised deviation over all pairs (max-T), so that no pair's bound overshoots with
    probability ``level``; then the true spread, which is at least every |d|, lies above it. Upper
    bound: the largest of |d| + z se, one pair's bound: it fails only if the pair that truly
    differs most exceeds its own bound. Both critical values are expanded for small n as
    Hesterberg (2015) expands percentile intervals: sqrt(n/(n-1)) for the bootstrap's variance and
    a t quantile with n - 1 degrees of freedom for the normal one. It covers a zero spread at the
    nominal rate and is conservative when one pair clearly differs most (docs/statistics.md).
    Cells must be shares in [0, 1] of their denominators (correct out of answered).
    """
    y = np.asarray(numerators, dtype=float).reshape(len(numerators), -1)
    x = np.asarray(denominators, dtype=float).reshape(len(denominators), -1)
    n = len(y)
    answered = x.sum(axis=0) > 0
    y, x = y[:, answered], x[:, answered]
    k = y.shape[1]
    if k == 0:
        return Estimate(None, n=n)
    ratios = y.sum(axis=0) / x.sum(axis=0)
    value = float(ratios.max() - ratios.min())
    if k == 1 or n < 2:
        return Estimate(value, value if k == 1 else None, value if k == 1 else None, n)
    first, second = np.triu_indices(k, 1)
    diff = ratios[first] - ratios[second]
    sums_y, sums_x = resampled_sums(np.random.default_rng(seed), n_resamples, y, x)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = sums_y / sums_x
    draws = draws[:, first] - draws[:, second]  # resamples x pairs; NaN where a variant went unanswered
    with np.errstate(invalid="ignore", divide="ignore"), _quiet():
        se = np.nanstd(draws, axis=0, ddof=1)
        varies = np.isfinite(se) & (se > 0)
        se = np.where(varies, se, 0.0)
        deviation = np.nanmax(np.abs(draws[:, varies] - diff[varies]) / se[varies], axis=1) if varies.any() else None
    expand = np.sqrt(n / (n - 1))
    joint = 0.0  # the max-T critical value, for the lower bound
    if deviation is not None and np.isfinite(deviation).any():
        joint = float(np.quantile(deviation[np.isfinite(deviation)], level))
        joint = float(expand * _student_t().ppf(ndtr(joint), n - 1))
    alone = float(expand * _student_t().ppf(1 - (1 - level) / 2, n - 1))  # one pair's, for the upper bound
    low, high = diff - joint * se, diff + joint * se
    # |a_v - a_w| is at least 0 when its interval holds 0, else the end nearer 0
    abs_low = np.where((low > 0) | (high < 0), np.minimum(np.abs(low), np.abs(high)), 0.0)
    abs_high = np.abs(diff) + alone * se
    # A pair whose variants agreed on every item has no bootstrap variance, yet the truth may
    # differ: |a_v - a_w| is at most the share of items on which they differ, and none of m items
    # did, so Wilson's upper bound for 0 of m bounds it (0.16 at m = 20) instead of a bare 0.
    both = ((x[:, first] > 0) & (x[:, second] > 0)).sum(axis=0)
    silent = ~varies & (both > 0)
    abs_high[silent] = np.maximum(abs_high[silent], wilson(0.0, both[silent], level)[1])
    return Estimate(value, float(abs_low.max()), float(min(abs_high.max(), 1.0)), n)


class _quiet:
    """Silence NumPy's warnings about all-NaN slices (a pair with no finite draw is left out)."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: Any) -> None:
        self._catch.__exit__(*exc)


def simultaneous_bounds(numerators: np.ndarray, denominators: np.ndarray, *, n_resamples: int = 1000,
                        level: float = 0.95, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k ratios of sums (variant accuracies) with bounds that hold for all k at once, clustered by item.

    ``numerators`` and ``denominators`` are items x k. Returns (ratios, low, high), NaN for a column
    never answered. The half-width is c se_v, se_v from the item bootstrap and c the bootstrap
    quantile of the largest standardised deviation over all k (max-T), expanded for small n as in
    `spread_interval`: with probability ``level`` every true ratio lies in its bounds together, so any
    function of the ratios (their maximum, a combined score) lies within its range over the box. A
    column whose resamples never vary (all right, or all wrong) gets Wilson's interval over its items
    instead of a point. A statistic of a max (MaxP) needs this: a bootstrap of the sample maximum sits
    above the truth when variants are alike (BCa covered 0.55-0.68 in docs/metrics.md's trial).
    """
    y = np.asarray(numerators, dtype=float).reshape(len(numerators), -1)
    x = np.asarray(denominators, dtype=float).reshape(len(denominators), -1)
    n, k = y.shape
    total = x.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(total > 0, y.sum(axis=0) / np.where(total > 0, total, 1), np.nan)
    low, high = ratios.copy(), ratios.copy()
    if n < 2 or k == 0:
        return ratios, low, high
    sums_y, sums_x = resampled_sums(np.random.default_rng(seed), n_resamples, y, x)
    with np.errstate(invalid="ignore", divide="ignore"), _quiet():
        draws = sums_y / sums_x
        se = np.nanstd(draws, axis=0, ddof=1)
        varies = np.isfinite(se) & (se > 0) & np.isfinite(ratios)
        deviation = np.nanmax(np.abs(draws[:, varies] - ratios[varies]) / se[varies], axis=1) \
            if varies.any() else None
    expand = np.sqrt(n / (n - 1))
    c = float(expand * _student_t().ppf(1 - (1 - level) / 2, n - 1))
    if deviation is not None and np.isfinite(deviation).any():
        c = float(expand * _student_t().ppf(ndtr(float(np.quantile(deviation[np.isfinite(deviation)], level))), n - 1))
    low[varies] = np.clip(ratios[varies] - c * se[varies], 0.0, 1.0)
    high[varies] = np.clip(ratios[varies] + c * se[varies], 0.0, 1.0)
    still = ~varies & np.isfinite(ratios)
    if still.any():
        answered = (x[:, still] > 0).sum(axis=0)
        low[still], high[still] = wilson(ratios[still], answered, level)
    return ratios, low, high
