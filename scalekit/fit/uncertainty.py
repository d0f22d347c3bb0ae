"""Standard errors and intervals at the optimum.

Covariance (fitting space) of an M-estimator by Huber's (1981, *Robust
Statistics*, §7.6) asymptotic formula,

    Cov = K^2 * [sum psi(r)^2 / (n - p)] / [mean psi'(r)]^2 * (J^T J)^-1,
    K = 1 + (p / n) * var(psi') / mean(psi')^2,

which is the usual ``s^2 (J^T J)^-1`` for least squares. With Huber's small
``delta`` the mean of ``psi'`` is the share of residuals inside ``delta``; when
none are, the covariance is undefined and reported as NaN with a warning.
Standard errors of a log-parameter follow by the delta method
(``se(value) = value * se(log value)``).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from scalekit.fit.objective import log_jacobian, log_residuals, psi, psi_prime
from scalekit.laws.base import Law


def covariance(law: Law, X, log_y: np.ndarray, z: np.ndarray, *, loss: str, delta: float
               ) -> np.ndarray:
    """Asymptotic covariance of the fitting-space parameters at ``z`` (P, P)."""
    r = log_residuals(law, X, log_y, z)
    J = log_jacobian(law, X, z)
    n, p = J.shape
    slope = psi_prime(r, loss, delta)
    mean_slope = slope.mean()
    P = len(z)
    if mean_slope <= 0 or n <= p:
        return np.full((P, P), np.nan)
    K = 1.0 + (p / n) * slope.var() / mean_slope ** 2
    scale = K ** 2 * (psi(r, loss, delta) ** 2).sum() / (n - p) / mean_slope ** 2
    return scale * np.linalg.pinv(J.T @ J)


def natural_stderr(law: Law, z: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Standard errors in natural units from a fitting-space covariance."""
    se = np.sqrt(np.clip(np.diagonal(cov), 0.0, None))
    se = np.where(np.isfinite(np.diagonal(cov)), se, np.nan)
    return np.where(law.log_mask, np.exp(z) * se, se)


def wald_intervals(law: Law, z: np.ndarray, cov: np.ndarray, level: float) -> np.ndarray:
    """Normal intervals built in the fitting space and mapped to natural units, (P, 2)."""
    half = norm.ppf(0.5 + level / 2) * np.sqrt(np.clip(np.diagonal(cov), 0.0, None))
    half = np.where(np.isfinite(np.diagonal(cov)), half, np.nan)
    return law.to_natural(np.stack([z - half, z + half], axis=-1).T).T


def percentile_intervals(draws: np.ndarray, level: float) -> np.ndarray:
    """Percentile intervals of bootstrap ``draws`` (B, P) -> (P, 2)."""
    tail = 50.0 * (1.0 - level)
    return np.percentile(draws, [tail, 100.0 - tail], axis=0).T
