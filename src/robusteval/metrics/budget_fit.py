"""The model behind a budgeted estimate: a Rasch model whose item abilities and variant effects are
drawn from distributions fitted to the asked cells (empirical Bayes), and the full grid's
accuracies drawn from its posterior.

logit P(item i right under variant j) = a_i + b_j, with

- a_i from a discrete distribution on a fixed grid of abilities (GRID) whose weights are fitted by
  maximum marginal likelihood (a nonparametric prior, EM). Real grids are far from normal in their
  items: on PromptEval's MMLU grid 367 of 545 questions are right under every template and 41
  wrong under every one; a normal prior (or a fixed L2 penalty) pulls those toward the middle and
  predicts misses that never happen. The items are integrated out, never fitted one by one: with
  two asked cells per item a joint fit's item abilities are mostly noise, and that noise pushed the
  variant effects, and so the spread, outward (the incidental-parameter problem).
- b_j ~ N(x_j' gamma, tau^2): x_j the variant's covariates (none: gamma = 0), tau drawn from its
  posterior under a half-normal prior of fixed scale TAU_SCALE logits (on [0.01, 4]), the effects
  integrated out (`_draw_tau`), so how far a variant is pulled toward the others (the penalty)
  comes from the data, with its uncertainty, instead of a fixed C or scale. A prior scaled by
  tau's own estimate (half-Cauchy whose scale was the EM's tau) shrank too hard wherever that
  estimate came out low: with 10 variants x 20 cells it lies anywhere in 0.1-1.2 over grids whose
  true tau is 0.6, and there the intervals missed. A flat prior on [0.01, 4] erred the other way
  where the cells say little of tau (10 variants of 2-6 cells each, mostly wrong: the real grids
  at 2%): its posterior then stays near the prior, whose median is 2 logits, and the spread came
  out far too wide. The half-normal's scale is fixed, not fitted, and is where it is by
  measurement (docs/performance.md): narrower shrinks a grid whose templates truly differ by 2
  logits and more when few cells are asked; wider gives back the flat prior's overstatement.

The distribution over variants (quantiles, spread, worst and best case) is read from posterior
draws of the whole grid, never from the spread of point estimates: point estimates of noisy
effects are spread too wide (raw) or too narrow (shrunk); a draw from the posterior has the right
dispersion when the fitted prior is right. Each draw samples the abilities given the effects, tau
given the abilities (the effects integrated out), the effects given tau, gamma given the effects
(so the interval carries the fit's own uncertainty, not only the EB point), and completes every
unasked cell with a 0/1 answer (the full grid's accuracies are of answers, not probabilities).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import expit, logsumexp

GRID = np.linspace(-7.0, 7.0, 43)  # item abilities' support (logit); 7 is p = 0.999
RIDGE = 1.0  # the covariates' coefficients' prior precision (x standardised): weak, it only keeps them finite
TAU2_FLOOR = 1e-4  # the EM's
EM_ITERATIONS = 60  # a start for the sampler, which draws tau itself: it need not be converged far
PRIOR_SD, PRIOR_ITEMS = 2.0, 0.05  # the abilities' anchor: a normal's sd, and its weight in items' worth
WARM = 100  # sweeps before the draws are kept
EFFECTS = np.linspace(-6.0, 6.0, 301)  # the variant effects' support when drawn (logit)
TAUS = np.geomspace(0.01, 4.0, 48)  # and tau's
TAU_SCALE = 1.5  # tau's prior: half-normal of this scale (logit); its median is 1


def _log_p(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """variants x GRID: log P(right) and log P(wrong) at each ability grid point."""
    z = GRID[None, :] + b[:, None]
    log_wrong = -np.logaddexp(0.0, z)
    return z + log_wrong, log_wrong


_LOG_RIGHT, _LOG_WRONG = _log_p(EFFECTS)  # EFFECTS x GRID


class Fit:
    """The empirical-Bayes fit of one grid's asked cells; `draws` samples its posterior.

    Everything runs on counts, never on cells one by one: with the abilities on a grid, an item's
    log-likelihood is its right and wrong answers (items x variants, sparse) times a variants x grid
    table, and a variant's is its answers' counts per grid point."""

    def __init__(self, observed: np.ndarray, exists: np.ndarray, covariates: np.ndarray | None = None,
                 iterations: int = EM_ITERATIONS) -> None:
        self.exists = exists
        self.asked = ~np.isnan(observed) & exists
        self.n_items, self.n_vars = observed.shape
        y = np.where(self.asked, observed, 0.0)
        self.right = sparse.csr_matrix(y)  # fractional cells (means over samples) count as shares
        self.wrong = sparse.csr_matrix(np.where(self.asked, 1 - y, 0.0))
        self.unasked = sparse.csr_matrix((self.exists & ~self.asked).astype(float))
        self.observed_sum = y.sum(axis=0)
        self.multi = self.asked.sum(axis=1) >= 2
        self.count = self.exists.sum(axis=0)
        self.x = _standardise(covariates, self.n_vars)
        # the abilities' start and anchor: a normal around the asked cells' mean (a share of PRIOR_ITEMS
        # pseudo-items keeps it there where the items' answers cannot place them: an item asked once
        # says nothing of how spread the items are, and free weights then drift to the ends of the
        # grid, where no variant effect changes a cell, and the variants' effects collapse to 0)
        mean = float(np.clip(self.observed_sum.sum() / max(self.asked.sum(), 1), 0.02, 0.98))
        centre = np.log(mean / (1 - mean)) * np.sqrt(1 + np.pi * PRIOR_SD**2 / 8)  # E p = mean, nearly
        self.anchor = np.exp(-0.5 * ((GRID - centre) / PRIOR_SD) ** 2)
        self.anchor /= self.anchor.sum()
        self.pi = self.anchor.copy()
        self.b = np.zeros(self.n_vars)
        self.gamma = np.zeros(self.x.shape[1])
        self.tau2 = 1.0
        self.info = np.zeros(self.n_vars)
        self._em(iterations)

    def _item_posterior(self, b: np.ndarray) -> np.ndarray:
        """items x GRID: each item's posterior over the ability grid, given the variant effects."""
        log_right, log_wrong = _log_p(b)
        lp = np.asarray(self.right @ log_right + self.wrong @ log_wrong) + np.log(self.pi)[None, :]
        return np.asarray(np.exp(lp - logsumexp(lp, axis=1, keepdims=True)))

    def _em(self, iterations: int) -> None:
        for _ in range(iterations):
            post = self._item_posterior(self.b)
            # only items with two or more answers say how the items spread
            weight = PRIOR_ITEMS * self.n_items
            placed = post[self.multi].sum(axis=0)
            self.pi = np.maximum((placed + weight * self.anchor) / (self.multi.sum() + weight), 1e-12)
            self.pi /= self.pi.sum()
            right, total = np.asarray(self.right.T @ post), np.asarray((self.right + self.wrong).T @ post)
            prior_mean = self.x @ self.gamma
            before = self.b.copy()
            for _ in range(3):  # Newton on each variant's expected complete log-likelihood + its prior
                p = expit(GRID[None, :] + self.b[:, None])
                grad = (right - total * p).sum(axis=1)
                self.info = (total * p * (1 - p)).sum(axis=1)
                self.b += (grad - (self.b - prior_mean) / self.tau2) / (self.info + 1 / self.tau2)
            self.gamma = _ridge(self.x, self.b)
            resid = self.b - self.x @ self.gamma
            var = 1 / (self.info + 1 / self.tau2)  # each effect's posterior variance (Laplace)
            self.tau2 = max(TAU2_FLOOR, float(np.mean(resid**2 + var)))
            if np.abs(self.b - before).max() < 1e-4:
                break

    def draws(self, n: int, rng: np.random.Generator, warm: int = WARM) -> np.ndarray:
        """n x variants: the full grid's accuracies (the asked cells as answered, the others drawn as
        0/1 answers) under n posterior draws, by Gibbs sampling started from the EB fit.

        Each sweep draws the abilities given the effects, then tau given the abilities with the
        effects integrated out (`_draw_tau`), then the effects given tau (exactly, on EFFECTS), then
        gamma. tau is drawn so the intervals carry the uncertainty of how alike the variants are,
        which few cells per variant leave wide (10 variants x 20 cells: tau's estimate lies
        anywhere in 0.1-1.2 over grids whose true tau is 0.6). Drawn given the effects, as plain
        Gibbs does, tau and the effects move together only by small steps along the funnel where
        they shrink or grow as one: 200 draws held 13-30 independent ones of tau on 1000 x 10 at
        2%, and their 95% intervals were too narrow; with the effects integrated out, 60-115."""
        b, gamma, tau2 = self.b.copy(), self.gamma.copy(), max(self.tau2, 0.01)
        out = np.empty((n, self.n_vars))
        # half-normal on tau, times the width each point of the log-spaced TAUS stands for (~ tau)
        log_tau_prior = np.log(TAUS) - 0.5 * (TAUS / TAU_SCALE) ** 2
        for t in range(warm + n):
            # abilities | effects: exact, on the grid; then each variant's answers per grid point
            at = draw_rows(self._item_posterior(b), rng)
            onehot = sparse.csr_matrix((np.ones(self.n_items), (np.arange(self.n_items), at)),
                                       shape=(self.n_items, len(GRID)))
            right, wrong = np.asarray((self.right.T @ onehot).todense()), np.asarray((self.wrong.T @ onehot).todense())
            loglik = right @ _LOG_RIGHT.T + wrong @ _LOG_WRONG.T  # variants x EFFECTS
            lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
            prior_mean = self.x @ gamma
            if self.n_vars > 1:
                tau2 = _draw_tau(lik, prior_mean, log_tau_prior, rng) ** 2
            b = _draw_effects(lik, prior_mean, tau2, rng)
            if self.n_vars > 1:
                gamma = _draw_gamma(self.x, b, tau2, rng)
            if t >= warm:  # the unasked cells as answers: binomial per variant and grid point
                unasked = np.asarray((self.unasked.T @ onehot).todense()).astype(np.int64)
                drawn = rng.binomial(unasked, expit(GRID[None, :] + b[:, None])).sum(axis=1)
                out[t - warm] = np.where(self.count > 0, (self.observed_sum + drawn) / np.maximum(self.count, 1),
                                         np.nan)  # a variant no item has: no accuracy
        return out

    def expected(self) -> np.ndarray:
        """items x variants: the fitted probability of every cell (abilities integrated out)."""
        return np.asarray(self._item_posterior(self.b) @ expit(GRID[:, None] + self.b[None, :]))


def _prior_on_effects(prior_mean: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """taus x variants x EFFECTS: each variant's normal prior, normalised on the grid (a tau below
    the grid's step puts it all on the nearest point). Without covariates every variant has the
    same prior, computed once (taus x 1 x EFFECTS): on 100 variants that was most of a sweep."""
    if np.ptp(prior_mean) < 1e-12:
        prior_mean = prior_mean[:1]
    z = (EFFECTS[None, None, :] - prior_mean[None, :, None]) / tau[:, None, None]
    log_d = -0.5 * z**2
    d = np.exp(log_d - log_d.max(axis=2, keepdims=True))
    return np.asarray(d / d.sum(axis=2, keepdims=True))


def _draw_tau(lik: np.ndarray, prior_mean: np.ndarray, log_prior: np.ndarray, rng: np.random.Generator) -> float:
    """tau given the abilities and gamma, the effects integrated out: on TAUS, each variant's
    likelihood (variants x EFFECTS, scaled per variant) averaged over its normal prior."""
    prior = _prior_on_effects(prior_mean, TAUS)
    marginal = prior[:, 0, :] @ lik.T if prior.shape[1] == 1 else np.einsum("tve,ve->tv", prior, lik)
    log_post = np.log(marginal + 1e-300).sum(axis=1) + log_prior
    w = np.exp(log_post - log_post.max())
    return float(TAUS[rng.choice(len(TAUS), p=w / w.sum())])


def _draw_effects(lik: np.ndarray, prior_mean: np.ndarray, tau2: float, rng: np.random.Generator) -> np.ndarray:
    """Each variant's effect given the abilities, tau and gamma: exact, on EFFECTS."""
    return np.asarray(EFFECTS[draw_rows(_prior_on_effects(prior_mean, np.array([np.sqrt(tau2)]))[0] * lik, rng)])


def draw_rows(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column index per row of ``weights`` (rows x points, unnormalised, non-negative), drawn
    with probability proportional to the row's weights: how the sampler draws an ability or an
    effect on its grid."""
    cdf = np.cumsum(weights, axis=1)
    return np.asarray(np.minimum((cdf < rng.random((len(weights), 1)) * cdf[:, -1:]).sum(axis=1), weights.shape[1] - 1))


def _standardise(covariates: np.ndarray | None, n_vars: int) -> np.ndarray:
    """An intercept, then the covariates centred and scaled (constant columns dropped)."""
    if covariates is None:
        return np.ones((n_vars, 1))
    x = np.asarray(covariates, dtype=float).reshape(n_vars, -1)
    x = x - x.mean(axis=0)
    sd = x.std(axis=0)
    return np.column_stack([np.ones(n_vars), x[:, sd > 1e-9] / sd[sd > 1e-9]])


def _penalty(k: int) -> np.ndarray:
    """The coefficients' prior precision: none on the intercept (column 0), RIDGE on the covariates."""
    return np.diag(np.r_[0.0, np.full(k - 1, RIDGE)])


def _ridge(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(x.T @ x + _penalty(x.shape[1]), x.T @ b)


def _draw_gamma(x: np.ndarray, b: np.ndarray, tau2: float, rng: np.random.Generator) -> np.ndarray:
    precision = (x.T @ x + _penalty(x.shape[1])) / tau2
    cov = np.linalg.inv(precision)
    return rng.multivariate_normal(cov @ (x.T @ b) / tau2, (cov + cov.T) / 2)
