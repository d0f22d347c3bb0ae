"""Standard errors and intervals at the optimum.

Covariance (fitting space) of the M-estimator by the sandwich formula
(Huber 1967; White 1980, with the ``n / (n - p)`` correction "HC1"):

    Cov = n / (n - p) * H^-1 (sum_i psi(r_i)^2 J_i J_i^T) H^-1,
    H = sum_i psi'(r_i) J_i J_i^T,

``J_i`` being the gradient of the log prediction at point ``i``. It stays valid
when the law is only an approximation or the noise is not Gaussian. For soft-L1
``psi'(r) = (1 + (r / delta)^2)^(-3/2)``; for Huber,
``psi'`` is 1 inside ``delta`` and 0 beyond; with Hoffmann et al.'s small
``delta`` only a handful of points fall inside, so ``psi'`` is smoothed by a
Gaussian kernel on the residuals (Silverman's bandwidth
``h = 1.06 min(sd, IQR / 1.34) n^(-1/5)``): ``psi'_i = Phi((delta - r_i) / h) -
Phi((-delta - r_i) / h)``, which tends to the plain indicator when ``delta >> h``.
On the Chinchilla points these standard errors match the bootstrap spread.
Standard errors of a log-parameter follow by the delta method
(``se(value) = value * se(log value)``).

Normal-theory intervals use Student-t quantiles with ``n - p`` degrees of
freedom, since the residual scale behind the covariance is estimated from the
same points; bootstrap percentile intervals are expanded to match
(:func:`expanded_tail`). Intervals of a function of the parameters (derived quantities,
plans) come from the same bootstrap draws as the parameters' intervals, or, without
a bootstrap, from the delta method in the fitting space
(:func:`function_intervals`).
"""

from __future__ import annotations

import warnings

import numpy as np

from scalekit.fit._objective import log_jacobian, log_residuals
from scalekit.fit._robust import psi, psi_prime
from scalekit.laws import Law


def covariance(law: Law, X, log_y: np.ndarray, z: np.ndarray, *, loss: str, delta: float,
               prior=None) -> np.ndarray:
    """Sandwich covariance of the fitting-space parameters at ``z`` (P, P); NaN if singular.

    ``prior`` = (penalty matrix ``variance * precision``, ``variance``) of a normal
    prior (:func:`~scalekit.fit.fit_law`): the matrix joins the bread (the curvature of
    the penalised objective whose optimum ``z`` is) and ``variance`` times it the meat
    (the variance of the prior's score), so that with normal residuals of that variance
    the covariance is the posterior's, ``variance (J^T J + variance precision)^-1``.
    """
    r = log_residuals(law, X, log_y, z)
    J = log_jacobian(law, X, z)
    n, p = J.shape
    bread = (J * smoothed_slope(r, loss, delta)[:, None]).T @ J
    meat = n / max(n - p, 1) * (J * (psi(r, loss, delta) ** 2)[:, None]).T @ J
    if prior is not None:
        bread, meat = bread + prior[0], meat + prior[1] * prior[0]
    if n <= p or not np.isfinite(bread).all() or np.linalg.matrix_rank(bread) < p:
        return np.full((p, p), np.nan)
    inverse = np.linalg.inv(bread)
    return inverse @ meat @ inverse


def smoothed_slope(r: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """``psi'(r_i)``, kernel-smoothed for Huber's loss (see the module docstring); the
    squared and soft-L1 losses have a smooth ``psi'`` of their own."""
    if loss != "huber":
        return psi_prime(r, loss, delta)
    q75, q25 = np.percentile(r, [75, 25])
    spread = min(np.std(r), (q75 - q25) / 1.34)
    h = 1.06 * spread * len(r) ** -0.2
    if not h > 0:
        return psi_prime(r, loss, delta)
    from scipy.special import ndtr

    return ndtr((delta - r) / h) - ndtr((-delta - r) / h)


def natural_stderr(law: Law, z: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Standard errors in natural units from a fitting-space covariance."""
    se = np.sqrt(np.clip(np.diagonal(cov), 0.0, None))
    se = np.where(np.isfinite(np.diagonal(cov)), se, np.nan)
    return np.where(law.log_mask, np.exp(z) * se, se)


def quantile(level: float, dof: float | None = None) -> float:
    """Two-sided quantile of ``level``: Student-t with ``dof`` degrees of freedom, else normal."""
    from scipy.special import ndtri, stdtrit

    if dof is None or not np.isfinite(dof):
        return float(ndtri(0.5 + level / 2))
    return float(stdtrit(max(dof, 1), 0.5 + level / 2))


def wald_intervals(law: Law, z: np.ndarray, cov: np.ndarray, level: float,
                   dof: float | None = None) -> np.ndarray:
    """Intervals built in the fitting space and mapped to natural units, (P, 2).

    Half-widths are ``t_{dof} * se`` (normal quantiles when ``dof`` is None); each
    interval is cut to its parameter's bounds (``alpha >= 0`` gives no negative end).
    """
    half = quantile(level, dof) * np.sqrt(np.clip(np.diagonal(cov), 0.0, None))
    half = np.where(np.isfinite(np.diagonal(cov)), half, np.nan)
    lower, upper = law.fitting_bounds()
    ends = np.stack([z - half, z + half], axis=-1)                       # (P, 2)
    return law.to_natural(np.clip(ends, lower[:, None], upper[:, None]).T).T


def expanded_tail(level: float, dof: float | None, n_params: int) -> float:
    """Percent in each tail of the expanded percentile interval at ``level``.

    The bootstrap spread of a fit of ``p`` parameters to ``n`` points falls short
    of the sampling spread by about ``sqrt((n - p) / n)`` (its residuals are the
    fit's, smaller than the errors), and its percentiles take normal, not
    Student-t, quantiles. The expanded percentile interval (Hesterberg 2015,
    "What teachers should know about the bootstrap", §4.2, there with ``p = 1``)
    widens the level instead: it takes the percentiles at ``Phi(-w)`` and
    ``Phi(w)`` with ``w = sqrt(n / (n - p)) t_{n-p}(0.5 + level / 2)``.
    """
    if dof is None or not np.isfinite(dof) or dof < 1:
        return 50.0 * (1.0 - level)
    n = dof + n_params
    w = np.sqrt(n / dof) * quantile(level, dof)
    from scipy.special import ndtr

    return float(100.0 * ndtr(-w))


def percentile_intervals(draws: np.ndarray, level: float, dof: float | None = None
                         ) -> np.ndarray:
    """Expanded percentile intervals (:func:`expanded_tail`) of bootstrap ``draws`` (B, P)."""
    tail = expanded_tail(level, dof, draws.shape[1])
    return np.percentile(draws, [tail, 100.0 - tail], axis=0).T


def function_intervals(function, law: Law, z: np.ndarray, cov: np.ndarray | None,
                       draws: np.ndarray | None, level: float,
                       dof: float | None = None) -> np.ndarray:
    """Intervals of ``function(theta) -> (K,)`` of the natural parameters, shape (K, 2).

    Expanded bootstrap percentiles (:func:`expanded_tail`) of ``function`` over
    ``draws`` (B, P) when given, else
    the delta method with ``se = sqrt(g^T Cov g)``, ``g`` the central-difference
    gradient in the fitting space: ``value * exp(± t_{dof} se / value)`` for a
    positive value (built in the log, so it stays positive), ``value ± t_{dof} se``
    otherwise. NaN where neither is defined.
    """
    if draws is not None and len(draws):
        values = np.array([np.atleast_1d(function(theta)) for theta in draws], dtype=float)
        tail = expanded_tail(level, dof, len(z))
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # a column of NaN: NaN ends
            return np.nanpercentile(values, [tail, 100.0 - tail], axis=0).T
    center = np.atleast_1d(np.asarray(function(law.to_natural(z)), dtype=float))
    if cov is None or not np.isfinite(cov).all():
        return np.full((center.size, 2), np.nan)
    P = len(z)
    gradient = np.empty((center.size, P))
    for k in range(P):
        step = 1e-6 * max(1.0, abs(z[k]))
        up, down = z.copy(), z.copy()
        up[k] += step
        down[k] -= step
        gradient[:, k] = (np.atleast_1d(function(law.to_natural(up)))
                          - np.atleast_1d(function(law.to_natural(down)))) / (2 * step)
    half = quantile(level, dof) * np.sqrt(np.clip(np.einsum("kp,pq,kq->k", gradient, cov,
                                                            gradient), 0.0, None))
    positive = center > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        factor = np.exp(half / np.where(positive, center, 1.0))
        return np.where(positive[:, None],
                        np.stack([center / factor, center * factor], axis=-1),
                        np.stack([center - half, center + half], axis=-1))
