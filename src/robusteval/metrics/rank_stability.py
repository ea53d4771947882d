"""Whether a ranking of models survives the prompt: two or more models scored on the same items under
the same variants (templates, paraphrases: a sample of a population), issue 46.

The input is a models x variants matrix of scores (each model's accuracy under each variant, on the
same items). Three figures, each over the variants, the unit that was sampled:

- **Pairwise share of variants won**: for models A and B, the share of variants under which A scores
  above B (a tie counts half), with Wilson's interval over the k variants. The estimand is the share
  of the population of variants under which A beats B *on these items*: each variant is one draw,
  and whether A beats B under it (the items' noise included: a near-tie may flip) is that draw's
  outcome. It says whether A wins under most prompts or only under the ones asked.
- **Kendall's W** of the ranking across variants (tie-corrected): 1 when every variant orders the
  models alike, 0 when the variants' orders share nothing. Its test is Friedman's (W = chi2 / (k (m - 1))).
- **The probability that the top model changes under a new variant**: the model with the best mean
  over the variants is the top; under a new variant drawn from the population, another model scores
  strictly above it. Estimated by leaving each variant out in turn (the top chosen on the others,
  checked on the one left out), so the variant that judges the top never helped choose it: the
  plug-in share of variants where the overall top loses reuses the variants that made it top and is
  optimistic. No model of the scores is assumed (a random-effects fit's predictive distribution
  would assume normal variant effects and a common interaction; with 5-10 templates nothing can check
  that). Its interval is Wilson's at k / `TOP_DESIGN_EFFECT` trials: the held-out outcomes share
  k - 2 variants, and the truth itself moves with the top the k variants chose, so k held-out
  outcomes carry about half the information of k independent ones; on simulated grids the interval
  at k trials under-covered (benchmarks/rank_stability.py; coverage in docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from robusteval.metrics.stats import wilson

TOP_DESIGN_EFFECT = 2.0  # the top-change interval's trials are k / this (measured: see the module's docstring)


@dataclass(frozen=True)
class PairShare:
    """Model ``a`` against model ``b``: the share of the variants under which ``a`` scores above
    ``b`` (ties half), with its interval over the variants."""

    a: str
    b: str
    wins: float  # variants a won (ties counted half)
    variants: int
    share: float
    low: float
    high: float

    @property
    def holds(self) -> bool:
        """``a`` beats ``b`` under most of the population's variants (the interval above one half)."""
        return self.low > 0.5


@dataclass(frozen=True)
class RankStability:
    """How a ranking of ``models`` holds across ``variants``: every pair's share of variants won,
    Kendall's W (None: fewer than 2 variants, or every variant ties every model), the top model by
    mean score and the leave-one-variant-out probability that another model beats it under a new
    variant, with its interval (None below 3 variants)."""

    models: tuple[str, ...]
    variants: tuple[str, ...]
    pairs: tuple[PairShare, ...]
    kendall_w: float | None
    top: str | None
    top_change: float | None = None
    top_change_low: float | None = None
    top_change_high: float | None = None

    def pair(self, a: str, b: str) -> PairShare | None:
        """The share of variants ``a`` won against ``b`` (either order stored)."""
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p
            if (p.a, p.b) == (b, a):
                return PairShare(a, b, p.variants - p.wins, p.variants, 1 - p.share, 1 - p.high, 1 - p.low)
        return None


def pair_share(x: np.ndarray, y: np.ndarray, a: str = "a", b: str = "b", *, level: float = 0.95) -> PairShare:
    """`PairShare` of scores ``x`` and ``y`` per variant (the same variants, in the same order)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    k = len(x)
    wins = float((x > y).sum() + 0.5 * (x == y).sum())
    share = wins / k if k else float("nan")
    low, high = wilson(share, k, level) if k else (np.nan, np.nan)
    return PairShare(a, b, wins, k, share, float(low), float(high))


def kendall_w(scores: np.ndarray) -> float | None:
    """Kendall's coefficient of concordance of the models' (rows') ranking across the variants
    (columns), with the correction for ties; None below 2 models or 2 variants, or when every
    variant ties every model (no ranking to agree on)."""
    s = np.asarray(scores, dtype=float)
    m, k = s.shape
    if m < 2 or k < 2:
        return None
    ranks = np.column_stack([rankdata(s[:, v]) for v in range(k)])
    totals = ranks.sum(axis=1)
    spread = float(((totals - totals.mean()) ** 2).sum())
    ties = sum(float((counts ** 3 - counts).sum()) for counts in
               (np.unique(s[:, v], return_counts=True)[1] for v in range(k)))
    denominator = k * k * (m ** 3 - m) - k * ties
    return None if denominator <= 0 else float(12 * spread / denominator)


def top_change(scores: np.ndarray) -> tuple[int, float] | None:
    """(held-out variants where another model beat the top chosen on the others, variants); None
    below 3 variants."""
    s = np.asarray(scores, dtype=float)
    m, k = s.shape
    if k < 3 or m < 2:
        return None
    totals = s.sum(axis=1)
    changed = 0
    for v in range(k):
        top = int(np.argmax(totals - s[:, v]))  # the first model of the best mean on the other variants
        changed += bool((s[:, v] > s[top, v]).any())
    return changed, k


def rank_stability(scores: np.ndarray, models: list[str] | tuple[str, ...], variants: list[str] | tuple[str, ...],
                   *, level: float = 0.95) -> RankStability:
    """`RankStability` of a models x variants matrix of scores (higher is better; a variant some
    model has no score under is left out)."""
    s = np.asarray(scores, dtype=float).reshape(len(models), -1)
    keep = np.isfinite(s).all(axis=0)
    s = s[:, keep]
    names = tuple(v for v, kept in zip(variants, keep) if kept)
    pairs = tuple(pair_share(s[i], s[j], models[i], models[j], level=level)
                  for i in range(len(models)) for j in range(i + 1, len(models)))
    top = models[int(np.argmax(s.mean(axis=1)))] if s.shape[1] else None
    changed = top_change(s)
    if changed is None:
        return RankStability(tuple(models), names, pairs, kendall_w(s), top)
    low, high = wilson(changed[0] / changed[1], changed[1] / TOP_DESIGN_EFFECT, level)
    return RankStability(tuple(models), names, pairs, kendall_w(s), top, changed[0] / changed[1], float(low),
                         float(high))
