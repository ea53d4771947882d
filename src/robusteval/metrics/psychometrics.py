"""Questionnaire scoring and validity of the value structure (pure functions on arrays).

- Scoring follows Schwartz's instructions: reversed items are flipped, then every answer is centred
  on the respondent's own mean over all answered items (removing scale-use differences), and a
  value's score is the mean of its centred items.
- MDS: items are placed in two dimensions from their intercorrelations; we report Kruskal's
  Stress-1. Two methods (docs/suites/persona.md): ``classic``, metric MDS of sqrt(2(1 - r)) of the
  Pearson correlations started on the theoretical circle (each item at its value's angle), the
  textbook reading of the circumplex; ``leaderboard``, as the Stick To Your Role! leaderboard:
  non-metric MDS of the Euclidean distances between the rows of the Spearman correlation matrix,
  with scikit-learn's Stress-1 of that fit. The two give different numbers on the same answers.
- CFA with the magnifying-glass strategy: one model per higher-order value, whose basic values are
  correlated factors measured by their items (semopy); we report CFI, SRMR and RMSEA per model and
  their mean. MDS and CFA use the raw answers, as Schwartz recommends for structure analyses.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from robusteval.data.persona import VALUES
from robusteval.metrics.stats import finite as _finite

# The magnifying glass: each higher-order value and the basic values it contains (hedonism is
# shared between openness and self-enhancement in theory; we keep it with openness).
HIGHER_ORDER = {
    "openness_to_change": ("self_direction", "stimulation", "hedonism"),
    "self_enhancement": ("achievement", "power"),
    "conservation": ("security", "conformity", "tradition"),
    "self_transcendence": ("benevolence", "universalism"),
}


def reverse_items(answers: np.ndarray, reverse: np.ndarray, n_points: int) -> np.ndarray:
    """Answers (1..n_points, NaN = invalid) with reversed items flipped to n_points + 1 - answer."""
    answers = np.asarray(answers, dtype=float)
    return np.where(np.asarray(reverse, dtype=bool)[None, :], n_points + 1 - answers, answers)


def value_scores(answers: np.ndarray, item_values: tuple[str, ...], values: tuple[str, ...] = VALUES, *,
                 reverse: np.ndarray | None = None, n_points: int = 6, centre: bool = True) -> np.ndarray:
    """Respondents x values scores from respondents x items answers (NaN = invalid, left out).

    Centred (default): each answer minus the respondent's mean over all their valid answers; a
    value's score is the mean of its valid centred items. A value with no valid item is NaN."""
    a = np.asarray(answers, dtype=float)
    if reverse is not None:
        a = reverse_items(a, reverse, n_points)
    if centre:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a respondent with no valid answer: all NaN
            a = a - np.nanmean(a, axis=1, keepdims=True)
    out = np.full((a.shape[0], len(values)), np.nan)
    for j, value in enumerate(values):
        cols = [i for i, v in enumerate(item_values) if v == value]
        if cols:
            block = a[:, cols]
            n = np.sum(~np.isnan(block), axis=1)
            out[:, j] = np.where(n > 0, np.nansum(block, axis=1) / np.maximum(n, 1), np.nan)
    return out


def value_angles(values: tuple[str, ...] = VALUES) -> dict[str, float]:
    """Theoretical positions on the circle, in the circle's order, evenly spaced (radians)."""
    return {v: 2 * math.pi * i / len(values) for i, v in enumerate(values)}


def pairwise_correlations(data: np.ndarray, *, spearman: bool = False) -> np.ndarray:
    """Pearson correlations of the columns over rows where both are present (NaN if < 3 or constant);
    with ``spearman``, Spearman's (Pearson's of the ranks of those rows, ties averaged)."""
    from scipy.stats import rankdata

    x = np.asarray(data, dtype=float)
    k = x.shape[1]
    r = np.eye(k)
    for i in range(k):
        for j in range(i + 1, k):
            ok = ~np.isnan(x[:, i]) & ~np.isnan(x[:, j])
            a, b = x[ok, i], x[ok, j]
            if ok.sum() < 3 or a.std() == 0 or b.std() == 0:
                r[i, j] = r[j, i] = np.nan
            else:
                if spearman:
                    a, b = rankdata(a), rankdata(b)
                r[i, j] = r[j, i] = float(np.corrcoef(a, b)[0, 1])
    return r


def mean_item_correlation(data: np.ndarray) -> float | None:
    """Mean Pearson correlation over item pairs. Near 1, one general factor (e.g. a respondent's
    overall leaning towards one end of the scale) drives every answer: then any grouping of items
    into correlated factors fits a CFA well, and a good CFI says nothing about the value structure."""
    r = pairwise_correlations(data)
    upper = r[np.triu_indices(len(r), 1)]
    upper = upper[np.isfinite(upper)]
    return float(upper.mean()) if len(upper) else None


def stress1(dissimilarities: np.ndarray, coords: np.ndarray) -> float:
    """Kruskal's Stress-1 of a configuration: sqrt(sum (d - b*delta)^2 / sum d^2) over pairs, with
    d the configuration's distances and b the least-squares scale of the dissimilarities delta (so
    the value does not depend on units). 0 is a perfect fit; above ~0.2 is poor."""
    delta = np.asarray(dissimilarities, dtype=float)
    iu = np.triu_indices(len(delta), 1)
    d = np.linalg.norm(coords[:, None, :] - coords[None, :, :], axis=-1)[iu]
    t = delta[iu]
    b = float(d @ t / (t @ t)) if t @ t > 0 else 0.0
    denom = float(d @ d)
    return math.sqrt(float(((d - b * t) ** 2).sum()) / denom) if denom > 0 else float("nan")


MDS_METHODS = ("leaderboard", "classic")


@dataclass(frozen=True)
class MDSResult:
    stress1: float | None
    coords: np.ndarray | None
    dropped: tuple[int, ...] = ()  # items left out (constant or unanswered)
    error: str | None = None
    method: str = "classic"

    def as_dict(self, item_ids: tuple[str, ...] = ()) -> dict[str, Any]:
        out: dict[str, Any] = {"stress1": self.stress1, "method": self.method, "error": self.error}
        if self.dropped:
            out["dropped_items"] = [item_ids[i] if item_ids else i for i in self.dropped]
        return out


def mds_structure(answers: np.ndarray, item_values: tuple[str, ...], values: tuple[str, ...] = VALUES, *,
                  seed: int = 0, method: str = "classic") -> MDSResult:
    """Stress-1 of a two-dimensional MDS of the items (respondents x items answers), by ``method``:
    ``classic`` or ``leaderboard`` (the module docstring; docs/suites/persona.md)."""
    if method not in MDS_METHODS:
        raise ValueError(f"unknown MDS method {method!r}: one of {', '.join(MDS_METHODS)}")
    r = pairwise_correlations(answers, spearman=method == "leaderboard")
    keep = [i for i in range(r.shape[0]) if not np.isnan(np.delete(r[i], i)).all()]
    dropped = tuple(i for i in range(r.shape[0]) if i not in keep)
    r = r[np.ix_(keep, keep)]
    if len(keep) < 4:
        return MDSResult(None, None, dropped, "fewer than 4 items vary across personas", method)
    r = np.where(np.isnan(r), 0.0, r)  # a pair never observed together: no evidence of relation
    if method == "leaderboard":
        return _leaderboard_mds(r, dropped, seed)
    return _classic_mds(r, [item_values[i] for i in keep], values, dropped, seed)


def _classic_mds(r: np.ndarray, item_values: list[str], values: tuple[str, ...], dropped: tuple[int, ...],
                 seed: int) -> MDSResult:
    """Metric MDS of the items' dissimilarities sqrt(2(1 - r)), started on the theoretical circle."""
    from sklearn.manifold import MDS

    delta = np.sqrt(np.clip(2 * (1 - r), 0, None))
    angles = value_angles(values)
    per_value: dict[str, int] = {}
    init = []
    for v in item_values:  # items of one value spread a little around its angle, so none coincide
        k = per_value[v] = per_value.get(v, -1) + 1
        theta = angles[v] + 0.15 * k
        init.append((math.cos(theta), math.sin(theta)))
    mds = MDS(n_components=2, metric_mds=True, metric="precomputed", n_init=1, init="random",
              random_state=seed, max_iter=500, normalized_stress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # sklearn divides by zero on degenerate inputs
        coords = mds.fit_transform(delta, init=np.array(init))
    return MDSResult(stress1(delta, coords), coords, dropped, method="classic")


def _leaderboard_mds(r: np.ndarray, dropped: tuple[int, ...], seed: int) -> MDSResult:
    """The leaderboard's reading: each item is its row of the Spearman correlation matrix, items are
    as far apart as those rows are (Euclidean), and non-metric MDS (SMACOF with isotonic
    disparities) places them; the stress is scikit-learn's Stress-1 of that fit. The settings are
    scikit-learn's defaults when the leaderboard was written (4 random starts, at most 300
    iterations, tolerance 1e-3), spelled out because later versions changed them."""
    from sklearn.manifold import MDS

    delta = np.linalg.norm(r[:, None, :] - r[None, :, :], axis=-1)
    mds = MDS(n_components=2, metric_mds=False, metric="precomputed", n_init=4, init="random", max_iter=300,
              eps=1e-3, random_state=seed, normalized_stress=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        coords = mds.fit_transform(delta)
    stress = float(mds.stress_)
    return MDSResult(stress if math.isfinite(stress) else None, coords, dropped, method="leaderboard")


@dataclass(frozen=True)
class CFAFit:
    model: str
    cfi: float | None = None
    srmr: float | None = None
    rmsea: float | None = None
    n: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"cfi": self.cfi, "srmr": self.srmr, "rmsea": self.rmsea, "n": self.n, "error": self.error}


def srmr(sample_cov: np.ndarray, implied_cov: np.ndarray) -> float:
    """Standardised root mean square residual over the lower triangle (diagonal included)."""
    s, sigma = np.asarray(sample_cov), np.asarray(implied_cov)
    sd = np.sqrt(np.diag(s))
    resid = (s - sigma) / np.outer(sd, sd)
    il = np.tril_indices(len(s))
    return float(math.sqrt(np.mean(resid[il] ** 2)))


def cfa_model_description(factors: list[str], item_ids: list[str], item_values: tuple[str, ...]) -> str:
    """lavaan-style syntax: one factor per basic value measured by its items."""
    lines = []
    for value in factors:
        items = [item_ids[i] for i, v in enumerate(item_values) if v == value]
        if items:
            lines.append(f"{value} =~ {' + '.join(items)}")
    return "\n".join(lines)


def cfa_fit(data: np.ndarray, item_values: tuple[str, ...], values: tuple[str, ...], name: str) -> CFAFit:
    """Fit one CFA (each of ``values`` a factor of its items) to respondents x items; listwise deletion."""
    import pandas as pd
    import semopy

    cols = [i for i, v in enumerate(item_values) if v in values]
    x = np.asarray(data, dtype=float)[:, cols]
    x = x[~np.isnan(x).any(axis=1)]
    n = len(x)
    factors = [v for v in values if any(item_values[i] == v for i in cols)]
    if len(factors) < 1 or len(cols) < 3:
        return CFAFit(name, n=n, error="fewer than 3 items")
    if n < len(cols) + 2:
        return CFAFit(name, n=n, error=f"{n} complete respondents for {len(cols)} items: too few to fit")
    if (x.std(axis=0) == 0).any():
        return CFAFit(name, n=n, error="an item has the same answer for every respondent")
    ids = [f"i{c}" for c in cols]
    # Standardised: ML fit indices do not change with item scale, and the solver is far better
    # conditioned (expected-value answers vary by a few hundredths and made SLSQP fail at random).
    df = pd.DataFrame((x - x.mean(axis=0)) / x.std(axis=0), columns=ids)
    desc = cfa_model_description(factors, ids, tuple(item_values[c] for c in cols))
    model = semopy.Model(desc)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solved = model.fit(df)
            if not getattr(solved, "success", True):  # its estimates, and any fit index from them, mean nothing
                return CFAFit(name, n=n, error=f"the solver did not converge ({solved.message})")
            stats = semopy.calc_stats(model)
            implied = model.calc_sigma()[0]
            observed = list(model.vars["observed"])  # the order of the implied matrix
    except Exception as exc:  # singular data, non-convergence: a result, not a crash
        return CFAFit(name, n=n, error=f"fit failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    cfi, rmsea = _finite(stats["CFI"].iloc[0]), _finite(stats["RMSEA"].iloc[0])
    sample = np.cov(df[observed].to_numpy(), rowvar=False, bias=True)
    return CFAFit(name, cfi=None if cfi is None else min(max(cfi, 0.0), 1.0), srmr=_finite(srmr(sample, implied)),
                  rmsea=rmsea, n=n)


def magnifying_glass(data: np.ndarray, item_values: tuple[str, ...]) -> dict[str, CFAFit]:
    """The four higher-order value models, each fitted alone."""
    return {name: cfa_fit(data, item_values, group, name) for name, group in HIGHER_ORDER.items()}


def mean_fit(fits: dict[str, CFAFit]) -> dict[str, float | None]:
    """Mean CFI, SRMR and RMSEA over the models that could be fitted."""
    out = {}
    for key in ("cfi", "srmr", "rmsea"):
        vals = [getattr(f, key) for f in fits.values() if getattr(f, key) is not None]
        out[key] = float(np.mean(vals)) if vals else None
    return out




__all__ = ["HIGHER_ORDER", "MDS_METHODS", "CFAFit", "MDSResult", "cfa_fit", "magnifying_glass", "mds_structure",
           "mean_fit", "mean_item_correlation", "pairwise_correlations", "reverse_items", "srmr", "stress1",
           "value_angles", "value_scores"]
