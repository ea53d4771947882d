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
- b_j ~ N(x_j' gamma, tau^2): x_j the variant's covariates (none: gamma = 0), tau fitted by
  marginal likelihood (EM on the Laplace approximation) and drawn under a half-Cauchy prior whose
  scale is that estimate (`Fit._tau_scale`), so how far a variant is pulled toward the others (the
  penalty) comes from the data instead of a fixed C or scale.

The distribution over variants (quantiles, spread, worst and best case) is read from posterior
draws of the whole grid, never from the spread of point estimates: point estimates of noisy
effects are spread too wide (raw) or too narrow (shrunk); a draw from the posterior has the right
dispersion when the fitted prior is right. Each draw samples the abilities given the effects, the
effects given the abilities (Metropolis), tau and gamma given the effects (so the interval carries
the fit's own uncertainty, not only the EB point), and completes every unasked cell with a 0/1
answer (the full grid's accuracies are of answers, not probabilities).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import expit, logsumexp

GRID = np.linspace(-7.0, 7.0, 43)  # item abilities' support (logit); 7 is p = 0.999
RIDGE = 1.0  # the covariates' coefficients' prior precision (x standardised): weak, it only keeps them finite
TAU2_FLOOR = 1e-4
SCALE_FLOOR = 0.05
EM_ITERATIONS = 60  # a start for the sampler, which draws tau itself: it need not be converged far
PRIOR_SD, PRIOR_ITEMS = 2.0, 0.05  # the abilities' anchor: a normal's sd, and its weight in items' worth
WARM = 100  # sweeps before the draws are kept
SCALE_STEP = 0.3  # sd of log c in the scale move


def _log_p(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """variants x GRID: log P(right) and log P(wrong) at each ability grid point."""
    z = GRID[None, :] + b[:, None]
    log_wrong = -np.logaddexp(0.0, z)
    return z + log_wrong, log_wrong


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
        self.tau_scale = self._tau_scale()

    def _item_posterior(self, b: np.ndarray) -> np.ndarray:
        """items x GRID: each item's posterior over the ability grid, given the variant effects."""
        log_right, log_wrong = _log_p(b)
        lp = np.asarray(self.right @ log_right + self.wrong @ log_wrong) + np.log(self.pi)[None, :]
        return np.exp(lp - logsumexp(lp, axis=1, keepdims=True))

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

    def _tau_scale(self) -> float:
        """The scale of tau's half-Cauchy prior, chosen from the data: tau's marginal-likelihood
        (type-II maximum likelihood) estimate, the EM's, so the prior's median is the tau the asked
        cells favour and the draws still move tau where the cells insist. Neither fixed nor flat:
        flat, on the narrow MMLU shape at 2% (about 3 informative cells per template) the draws
        climbed to tau near 1 and the spread and 5% quantile intervals missed; a fixed 0.3 is the
        right size for that grid only (docs/performance.md). SCALE_FLOOR only keeps the scale
        positive (a zero scale would hold tau at 0 whatever the cells say)."""
        return max(float(np.sqrt(self.tau2)), SCALE_FLOOR)

    def draws(self, n: int, rng: np.random.Generator, warm: int = WARM) -> np.ndarray:
        """n x variants: the full grid's accuracies (the asked cells as answered, the others drawn as
        0/1 answers) under n posterior draws, by Gibbs sampling started from the EB fit.

        tau is drawn too (`_tau_scale`'s prior), so the intervals carry the uncertainty of how alike
        the variants are, which few cells per variant leave wide (10 variants x 20 cells: the EB
        estimate of tau is 0 in half the grids whose true tau is 0.6). Plain Gibbs mixes badly
        along the funnel where tau and every effect shrink or grow together (started at 0.5 on the
        narrow MMLU shape at 2%, it had not come down to 0.2 after 300 sweeps), so each sweep also
        proposes scaling tau and all effects' deviations by one factor (`_scale_move`)."""
        b, gamma, tau2 = self.b.copy(), self.gamma.copy(), max(self.tau2, 0.01)
        step = 2.4 / np.sqrt(self.info + 1 / tau2)
        out = np.empty((n, self.n_vars))
        accepted = np.zeros(self.n_vars)
        for t in range(warm + n):
            # abilities | effects: exact, on the grid; then each variant's answers per grid point
            cdf = np.cumsum(self._item_posterior(b), axis=1)
            u = rng.random((self.n_items, 1))
            at = np.minimum((cdf < u * cdf[:, -1:]).sum(axis=1), len(GRID) - 1)
            onehot = sparse.csr_matrix((np.ones(self.n_items), (np.arange(self.n_items), at)),
                                       shape=(self.n_items, len(GRID)))
            right, wrong = np.asarray((self.right.T @ onehot).todense()), np.asarray((self.wrong.T @ onehot).todense())
            # effects | abilities, tau, gamma: Metropolis steps per variant, all variants at once
            prior_mean = self.x @ gamma
            for _ in range(2):
                proposal = b + step * rng.standard_normal(self.n_vars)
                gain = (_effect_logpost(proposal, right, wrong, prior_mean, tau2)
                        - _effect_logpost(b, right, wrong, prior_mean, tau2))
                move = np.log(rng.random(self.n_vars)) < gain
                b = np.where(move, proposal, b)
                accepted += move
            if t < warm and t % 10 == 9:  # keep each variant's acceptance near 0.4
                step *= np.exp(np.clip(accepted / 20 - 0.4, -0.5, 0.5))
                accepted[:] = 0
            if self.n_vars > 1:  # tau | effects, gamma | effects and tau, then the joint scale move
                resid = b - self.x @ gamma
                drawn_tau2 = max(TAU2_FLOOR, float(resid @ resid / rng.chisquare(self.n_vars - 1)))
                # the exact draw under a flat prior, kept with the prior's ratio (independence Metropolis)
                if np.log(rng.random()) < _log_prior(drawn_tau2, self.tau_scale) - _log_prior(tau2, self.tau_scale):
                    tau2 = drawn_tau2
                gamma = _draw_gamma(self.x, b, tau2, rng)
                for _ in range(3):
                    b, tau2 = _scale_move(b, tau2, self.x @ gamma, right, wrong, rng, self.tau_scale)
            if t >= warm:  # the unasked cells as answers: binomial per variant and grid point
                unasked = np.asarray((self.unasked.T @ onehot).todense()).astype(np.int64)
                drawn = rng.binomial(unasked, expit(GRID[None, :] + b[:, None])).sum(axis=1)
                out[t - warm] = np.where(self.count > 0, (self.observed_sum + drawn) / np.maximum(self.count, 1),
                                         np.nan)  # a variant no item has: no accuracy
        return out

    def expected(self) -> np.ndarray:
        """items x variants: the fitted probability of every cell (abilities integrated out)."""
        return self._item_posterior(self.b) @ expit(GRID[:, None] + self.b[None, :])


def _scale_move(b: np.ndarray, tau2: float, prior_mean: np.ndarray, right: np.ndarray, wrong: np.ndarray,
                rng: np.random.Generator, scale: float) -> tuple[np.ndarray, float]:
    """A Metropolis step that scales tau and every effect's deviation from its prior mean by one
    factor c: the normal prior's density is unchanged up to c^-m, which the move's Jacobian c^(m+1)
    cancels but for one c, so the acceptance is the likelihood ratio times c times tau's prior ratio."""
    log_c = SCALE_STEP * rng.standard_normal()
    proposal = prior_mean + np.exp(log_c) * (b - prior_mean)
    proposed_tau2 = max(TAU2_FLOOR, tau2 * np.exp(2 * log_c))
    gain = (_loglik(proposal, right, wrong) - _loglik(b, right, wrong) + log_c
            + _log_prior(proposed_tau2, scale) - _log_prior(tau2, scale))
    if np.log(rng.random()) < gain:
        return proposal, proposed_tau2
    return b, tau2


def _log_prior(tau2: float, scale: float) -> float:
    """tau's prior: half-Cauchy (Gelman 2006, for a few groups' variance) of the given scale."""
    return -float(np.log1p(tau2 / scale**2))


def _loglik(b: np.ndarray, right: np.ndarray, wrong: np.ndarray) -> float:
    log_right, log_wrong = _log_p(b)
    return float((right * log_right + wrong * log_wrong).sum())


def _effect_logpost(b: np.ndarray, right: np.ndarray, wrong: np.ndarray, prior_mean: np.ndarray,
                    tau2: float) -> np.ndarray:
    log_right, log_wrong = _log_p(b)
    return (right * log_right + wrong * log_wrong).sum(axis=1) - (b - prior_mean) ** 2 / (2 * tau2)


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
