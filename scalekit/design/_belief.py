"""What the runs observed so far say about the law: a fit and the posterior around it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalekit.design._estimator import Estimator
from scalekit.fit import log_value_and_jacobian

#: Prior variance of each fitting-space parameter (a weak ridge: standard deviation 3,
#: i.e. a factor e^3 for a log-fitted parameter) so that the Laplace covariance exists
#: before the runs pin every direction.
PRIOR_VARIANCE = 9.0
#: Floor of the log-residual variance: a fit through few runs is not that exact.
NOISE_FLOOR = 1e-5
#: Random rows of the law's start grid added to the warm starts of a refit.
EXTRA_STARTS = 8
#: Bootstrap refits (over runs) of the ``ensemble`` method.
ENSEMBLE_REFITS = 6


@dataclass
class Belief:
    """Posterior of the fitting-space parameters: a mixture of Laplace approximations.

    ``members`` (K, P) are the fits (the best first), ``covs`` (K, P, P) their Laplace
    covariances, ``noise`` the residual variance (of the log values; with a ``reference``,
    of the raw values over ``reference^2``: :meth:`noise_at`), ``discrepancy`` the variance
    of the law's own error where it extrapolates (:func:`extrapolation_error`; 0 if not
    measured).
    """

    members: np.ndarray
    covs: np.ndarray
    noise: float
    discrepancy: float = 0.0
    reference: float | None = None

    def noise_at(self, law, X) -> float | np.ndarray:
        """The variance a new run's log value is observed with at ``X``: ``noise``, or,
        for a raw-scale fit, ``noise`` over ``(prediction / reference)^2``."""
        if self.reference is None:
            return self.noise
        scale = np.abs(self.predict(law, X)) / self.reference
        return self.noise / np.maximum(np.nan_to_num(scale, nan=1.0) ** 2, 1e-12)

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


def quick_fit(law, X, log_y, *, warm: np.ndarray | None, rng: np.random.Generator,
              estimator: Estimator) -> np.ndarray | None:
    """Best fitting-space optimum of the ``estimator``'s batched multi-start (no polish),
    from the ``warm`` starts plus ``EXTRA_STARTS`` random rows of the law's grid (the whole
    grid, with its stopping rule, without warm starts); None if no start is finite."""
    grid = law.start_grid(X, np.exp(log_y))
    if warm is None:
        return estimator.fit(law, X, log_y, grid, rng=rng, early_stop=True)
    pick = grid[rng.choice(len(grid), min(EXTRA_STARTS, len(grid)), replace=False)]
    return estimator.fit(law, X, log_y, np.vstack([np.atleast_2d(warm), pick]), rng=rng,
                         early_stop=False)


def laplace(law, X, log_y, z, estimator: Estimator) -> tuple[np.ndarray, float]:
    """Laplace covariance at ``z`` with the weak prior, and the noise variance (both as
    the ``estimator`` weighs the runs: :meth:`Estimator.noise`)."""
    J = np.nan_to_num(log_value_and_jacobian(law, X, z)[1])
    P = J.shape[1]
    noise = max(estimator.noise(law, X, log_y, z), NOISE_FLOOR)
    w = estimator.weights(np.exp(log_y))
    JW = J if w is None else J * w[:, None]
    precision = JW.T @ J / noise + np.eye(P) / PRIOR_VARIANCE
    return np.linalg.pinv(precision), noise


def extrapolation_error(law, X, log_y, near: np.ndarray, *, warm: np.ndarray,
                        rng: np.random.Generator, estimator: Estimator) -> float:
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
    z = quick_fit(law, far, log_y[~near], warm=warm, rng=rng, estimator=estimator)
    if z is None:
        return 0.0
    cov, noise = laplace(law, far, log_y[~near], z, estimator)
    if estimator.scale == "raw":        # a run's log variance: the raw noise over y^2
        noise = noise * np.mean(np.exp(2 * log_y[~near])) / np.exp(2 * log_y[near])
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
           estimator: Estimator, near: np.ndarray | None = None) -> Belief | None:
    """The posterior a method scores with, from the observed runs (with ``ensemble``, a
    mixture with bootstrap refits); None when the law cannot be fitted to them. ``near``
    marks the observed runs nearer the target, from which the law's discrepancy is
    measured (not measured without it)."""
    log_y = np.log(y)
    z = quick_fit(law, X, log_y, warm=warm, rng=rng, estimator=estimator)
    if z is None:
        return None
    cov, noise = laplace(law, X, log_y, z, estimator)
    members, covs = [z], [cov]
    if ensemble:
        n = len(y)
        for _ in range(ENSEMBLE_REFITS):
            rows = rng.integers(0, n, n)
            zb = quick_fit(law, {k: v[rows] for k, v in X.items()}, log_y[rows], warm=z,
                           rng=rng, estimator=estimator)
            if zb is not None and np.isfinite(zb).all():
                members.append(zb)
                covs.append(laplace(law, X, log_y, zb, estimator)[0])
    discrepancy = (0.0 if near is None else
                   extrapolation_error(law, X, log_y, near, warm=z, rng=rng,
                                       estimator=estimator))
    reference = None if estimator.scale == "log" else float(np.sqrt(np.mean(y * y)))
    return Belief(np.array(members), np.array(covs), noise, discrepancy, reference)



def prediction_interval(law, fit, X, y, Xt, *, near: np.ndarray | None, estimator: Estimator,
                        rng: np.random.Generator, level: float = 0.95
                        ) -> tuple[np.ndarray, np.ndarray, float]:
    """A ``level`` prediction interval for a new run at each target row ``Xt`` from the
    final ``fit`` to the runs ``(X, y)``, and the law's discrepancy it counts.

    In log units, the half-width is ``t * sqrt(J C J^T + s2 + tau2)``: the fit's
    parameter covariance ``C`` carried to the target (delta method), the run-to-run
    noise ``s2`` the runs' residuals show (for a raw-scale fit the raw variance over the
    prediction squared), and the law's own error where it extrapolates, ``tau2``
    (:func:`extrapolation_error`: the law fitted to the runs farther from the target
    against the ``near`` ones), which grows when the law does not fit; ``t`` the
    Student-t quantile with ``n - P`` degrees of freedom.
    """
    from scalekit.fit import quantile

    X = {c: np.asarray(X[c], float) for c in law.inputs}
    log_y = np.log(np.asarray(y, float))
    z = law.to_fitting(fit.theta)
    value, J = log_value_and_jacobian(law, Xt, z)
    cov = fit.covariance if fit.covariance is not None else np.full((len(z),) * 2, np.nan)
    spread = np.einsum("np,pq,nq->n", np.nan_to_num(J), cov, np.nan_to_num(J))
    if estimator.scale == "raw":
        noise = fit.stats.get("raw_residual_scale", np.nan) ** 2 / np.exp(2 * value)
    else:
        noise = np.full(len(value), fit.stats.get("residual_scale", np.nan) ** 2)
    discrepancy = (0.0 if near is None else
                   extrapolation_error(law, X, log_y, near, warm=z[None], rng=rng,
                                       estimator=estimator))
    dof = max(len(log_y) - len(law.params), 1)
    half = quantile(level, dof) * np.sqrt(np.maximum(spread, 0.0) + noise + discrepancy)
    return np.exp(value - half), np.exp(value + half), discrepancy
