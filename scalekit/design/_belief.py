"""What the runs observed so far say about the law: a fit and the posterior around it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalekit.fit import fit_law, fit_with_prior
from scalekit.fit import multistart
from scalekit.fit import log_residuals, log_value_and_jacobian

#: Prior variance of each fitting-space parameter (a weak ridge: standard deviation 3,
#: i.e. a factor e^3 for a log-fitted parameter) so that the Laplace covariance exists
#: before the runs pin every direction.
PRIOR_VARIANCE = 9.0
#: Floor of the log-residual variance: a fit through few runs is not that exact.
NOISE_FLOOR = 1e-5
#: Random rows of the law's start grid added to the warm starts of a refit.
EXTRA_STARTS = 8
#: The engine's default objective: Huber on log residuals.
LOSS, DELTA = "huber", 1e-3
#: Bootstrap refits (over runs) of the ``ensemble`` method.
ENSEMBLE_REFITS = 6


@dataclass
class Belief:
    """Posterior of the fitting-space parameters: a mixture of Laplace approximations.

    ``members`` (K, P) are the fits (the best first), ``covs`` (K, P, P) their Laplace
    covariances, ``noise`` the log-residual variance, ``discrepancy`` the variance of the
    law's own error where it extrapolates (:func:`extrapolation_error`; 0 if not measured).
    """

    members: np.ndarray
    covs: np.ndarray
    noise: float
    discrepancy: float = 0.0

    def predict(self, law, X) -> np.ndarray:
        """The best fit's predictions at ``X`` (in the law's units)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return np.exp(law.log_predict_fitting(X, self.members[0]))

    def factor(self, law, X) -> tuple[np.ndarray, np.ndarray]:
        """``F, A`` with ``F A F^T`` the covariance of the log predictions at ``X``
        under the mixture (within-member Laplace part plus between-member spread)."""
        K = len(self.members)
        values, jacobians = [], []
        for z in self.members:
            value, J = log_value_and_jacobian(law, X, z)
            values.append(value)
            jacobians.append(J)
        values = np.array(values)
        if K == 1:
            return jacobians[0], self.covs[0]
        spread = (values - values.mean(axis=0)).T                      # (n, K)
        F = np.concatenate(jacobians + [spread], axis=1)
        blocks = [c / K for c in self.covs] + [np.eye(K) / K]
        size = sum(b.shape[0] for b in blocks)
        A = np.zeros((size, size))
        at = 0
        for b in blocks:
            A[at:at + len(b), at:at + len(b)] = b
            at += len(b)
        return np.nan_to_num(F), A


def final_fit(law, X, y, *, seed: int = 0):
    """The fit of the final answer: the engine's (:func:`scalekit.fit.fit_law`: the law's
    grid, stopping rule, polish), or, with no more distinct runs than the law has
    parameters, the most probable law under a weak prior
    (:func:`scalekit.fit.fit_with_prior`, marked ``prior_fit``)."""
    distinct = len(np.unique(np.column_stack([np.asarray(X[c], float) for c in law.inputs]),
                             axis=0))
    if distinct <= len(law.params):
        return fit_with_prior(law, X, y, seed=seed)
    return fit_law(law, X, y, seed=seed)


def quick_fit(law, X, log_y, *, warm: np.ndarray | None, rng: np.random.Generator
              ) -> np.ndarray | None:
    """Best fitting-space optimum of the engine's batched multi-start (no polish), from
    the ``warm`` starts plus ``EXTRA_STARTS`` random rows of the law's grid (the whole
    grid, with its stopping rule, without warm starts); None if no start is finite."""
    grid = law.start_grid(X, np.exp(log_y))
    if warm is None:
        run = multistart(law, X, log_y, grid, loss=LOSS, delta=DELTA, rng=rng)
    else:
        pick = grid[rng.choice(len(grid), min(EXTRA_STARTS, len(grid)), replace=False)]
        run = multistart(law, X, log_y, np.vstack([np.atleast_2d(warm), pick]), loss=LOSS,
                         delta=DELTA, rng=rng, early_stop=False)
    best = int(np.argmin(run.batch.objective))
    return run.batch.z[best] if np.isfinite(run.batch.objective[best]) else None


def laplace(law, X, log_y, z) -> tuple[np.ndarray, float]:
    """Laplace covariance at ``z`` with the weak prior, and the noise variance."""
    J = np.nan_to_num(log_value_and_jacobian(law, X, z)[1])
    r = log_residuals(law, X, log_y, z)
    n, P = J.shape
    noise = max(float(np.nansum(r ** 2)) / max(n - P, 1), NOISE_FLOOR)
    precision = J.T @ J / noise + np.eye(P) / PRIOR_VARIANCE
    return np.linalg.pinv(precision), noise


def extrapolation_error(law, X, log_y, near: np.ndarray, *, warm: np.ndarray,
                        rng: np.random.Generator) -> float:
    """The variance of the law's own error where it extrapolates toward the target, less
    what the parameters' uncertainty already explains: the law is fitted to the observed
    runs farther from the target, and its squared log errors ``e2`` at the nearer ones
    (``near``), each with that fit's Laplace predictive variance plus noise ``v``, give
    ``tau2`` with ``mean(e2 / (v + tau2)) = 1`` (the Paule--Mandel moment estimator of a
    variance component); 0 when the errors are no larger than ``v`` expects, when the far
    runs are too few to fit, or when the fit fails.
    """
    if near.sum() < 1 or (~near).sum() <= len(law.params):
        return 0.0
    far = {k: v[~near] for k, v in X.items()}
    z = quick_fit(law, far, log_y[~near], warm=warm, rng=rng)
    if z is None:
        return 0.0
    cov, noise = laplace(law, far, log_y[~near], z)
    value, J = log_value_and_jacobian(law, {k: v[near] for k, v in X.items()}, z)
    error = (value - log_y[near]) ** 2
    if not np.isfinite(error).all():
        return 0.0
    J = np.nan_to_num(J)
    expected = np.einsum("np,pq,nq->n", J, cov, J) + noise
    if np.mean(error / expected) <= 1.0:
        return 0.0
    from scipy.optimize import brentq

    # mean(e2 / (v + t)) falls in t, from above 1 at t = 0 to below 1 at t = max(e2)
    return float(brentq(lambda t: np.mean(error / (expected + t)) - 1.0, 0.0, float(error.max()),
                        xtol=1e-15))


def belief(law, X, y, *, ensemble: bool, warm: np.ndarray | None, rng: np.random.Generator,
           near: np.ndarray | None = None) -> Belief | None:
    """The posterior a method scores with, from the observed runs (with ``ensemble``, a
    mixture with bootstrap refits); None when the law cannot be fitted to them. ``near``
    marks the observed runs nearer the target, from which the law's discrepancy is
    measured (not measured without it)."""
    log_y = np.log(y)
    z = quick_fit(law, X, log_y, warm=warm, rng=rng)
    if z is None:
        return None
    cov, noise = laplace(law, X, log_y, z)
    members, covs = [z], [cov]
    if ensemble:
        n = len(y)
        for _ in range(ENSEMBLE_REFITS):
            rows = rng.integers(0, n, n)
            zb = quick_fit(law, {k: v[rows] for k, v in X.items()}, log_y[rows], warm=z,
                           rng=rng)
            if zb is not None and np.isfinite(zb).all():
                members.append(zb)
                covs.append(laplace(law, X, log_y, zb)[0])
    discrepancy = (0.0 if near is None else
                   extrapolation_error(law, X, log_y, near, warm=z, rng=rng))
    return Belief(np.array(members), np.array(covs), noise, discrepancy)

