"""The interface every learning-curve surrogate follows, and what they share.

A surrogate is a scikit-learn-style estimator: keyword-only settings, ``fit(x, y)``
returns ``self``, fitted attributes end in ``_``, ``predict(x)`` gives the median
forecast and ``predict_quantiles(x, qs)`` any quantiles. ``x`` is steps, tokens or
FLOPs (positive); ``y`` is a loss (positive, lower is better) or, with
``direction="maximize"``, a score bounded above by 1 such as an accuracy, which
is modelled as the error ``1 - y``.

Every surrogate describes its forecast as a mixture of normals in log loss:
component means (m, K), weights (m, K) and one standard deviation per point
(m,). The standard deviation grows with the horizon ``h = ln(x / x_last)``:
``sd(h) = sqrt(sigma**2 + (rate * h)**2)``, where ``sigma`` is the scatter of the
observed points about the fit and ``rate`` is measured by hiding the tail of the
observed prefix, forecasting it, and comparing (see :func:`horizon_rate`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri
from sklearn.base import BaseEstimator

from scalekit.checks import check_choice, fail
from scalekit.errors import InputError, NotFittedError

DIRECTIONS = ("minimize", "maximize")


def check_curve(x, y, *, min_points: int = 3, name: str = "y",
                positive: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate one curve; return x sorted ascending and y (duplicates of x averaged).

    ``positive=False`` accepts y <= 0 (a score forecast as ``1 - y``).

    Raises
    ------
    InputError
        Lengths differ, fewer than ``min_points`` distinct x, a NaN or infinite
        value (with its position), x <= 0 or (with ``positive``) y <= 0.
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise InputError(f"x has {x.size} values but {name} has {y.size}; they must match.")
    for label, values in (("x", x), (name, y)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise InputError(f"{label} holds a missing or infinite value at position {bad[0]} "
                             f"({values[bad[0]]}); drop or fill it before forecasting.")
    if (x <= 0).any():
        raise InputError(f"x must be positive (steps, tokens or FLOPs); found {x.min()}.")
    if positive and (y <= 0).any():
        raise InputError(f"{name} must be positive to be forecast on a log scale; found {y.min()}.")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    unique, inverse = np.unique(x, return_inverse=True)
    if unique.size < x.size:
        y = np.bincount(inverse, weights=y) / np.bincount(inverse)
        x = unique
    if x.size < min_points:
        raise InputError(f"a curve needs at least {min_points} points with distinct x to be "
                         f"forecast; this one has {x.size}.")
    return x, y


def check_x(x) -> np.ndarray:
    """Validate forecast positions: finite and positive; returns a 1-d array."""
    x = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
    if not np.isfinite(x).all() or (x <= 0).any():
        raise InputError("forecast positions x must be finite and positive.")
    return x


def check_quantiles(qs) -> np.ndarray:
    """Validate quantile levels: strictly between 0 and 1."""
    qs = np.atleast_1d(np.asarray(qs, dtype=float)).ravel()
    if qs.size == 0 or not np.isfinite(qs).all() or (qs <= 0).any() or (qs >= 1).any():
        raise fail("qs", qs.tolist(), "quantile levels strictly between 0 and 1")
    return qs


def mixture_quantiles(means: np.ndarray, weights: np.ndarray, sd: np.ndarray,
                      qs: np.ndarray, *, iterations: int = 60) -> np.ndarray:
    """Quantiles of a normal mixture, by safeguarded Newton steps (vectorised).

    Parameters
    ----------
    means, weights : ndarray (..., K)
        Component means and weights (weights sum to 1 along the last axis).
    sd : ndarray (...)
        The common standard deviation of the components (> 0).
    qs : ndarray (Q,)
        Levels in (0, 1).

    Returns
    -------
    ndarray (..., Q)
        Exact to about 1e-9 of ``sd``: each step is a Newton step on the mixture
        CDF, replaced by bisection of the bracket whenever it would leave it;
        each (point, level) stops once its step moves by at most 1e-10 ``sd`` (at
        most ``iterations``; between far-apart components Newton may need dozens),
        and only those still moving are iterated.
    """
    shape = means.shape[:-1] + (len(qs),)
    K = means.shape[-1]
    # one row per (point, level); each row stops once its own step is below the tolerance
    sd = np.broadcast_to(np.maximum(sd, 1e-9)[..., None], shape).reshape(-1)
    mu = np.broadcast_to(means[..., None, :], shape + (K,)).reshape(-1, K)
    w = np.broadcast_to(weights[..., None, :], shape + (K,)).reshape(-1, K)
    z = np.broadcast_to(ndtri(qs), shape).reshape(-1)
    target = np.broadcast_to(qs, shape).reshape(-1)
    lo = np.min(np.where(w > 0, mu, np.inf), axis=-1) + z * sd - 1e-12
    hi = np.max(np.where(w > 0, mu, -np.inf), axis=-1) + z * sd + 1e-12
    guess = np.clip((w * mu).sum(axis=-1) + z * sd, lo, hi)
    active = np.arange(guess.size)
    for _ in range(iterations):
        g, m, wa, sa = guess[active], mu[active], w[active], sd[active]
        u = (g[:, None] - m) / sa[:, None]
        cdf = (wa * ndtr(u)).sum(axis=-1)
        pdf = (wa * np.exp(-0.5 * u * u)).sum(axis=-1) / (sa * np.sqrt(2 * np.pi))
        below = cdf < target[active]
        la = np.where(below, g, lo[active])
        ha = np.where(below, hi[active], g)
        lo[active], hi[active] = la, ha
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            step = g - (cdf - target[active]) / pdf
        inside = np.isfinite(step) & (step > la) & (step < ha)
        new = np.where(inside, step, 0.5 * (la + ha))
        guess[active] = new
        active = active[np.abs(new - g) > 1e-10 * sa]
        if active.size == 0:
            break
    return guess.reshape(shape)


def horizon_rate(errors: np.ndarray, horizons: np.ndarray, mask: np.ndarray, sigma: np.ndarray, *,
                 prior_rate: float, prior_points: float) -> np.ndarray:
    """How fast forecast error grows per e-fold of x, from a backtest on the prefix.

    ``errors`` are log errors of forecasts of held-back points at horizons
    ``h = ln(x / x_cut)``; the model ``E[e**2] = sigma**2 + (rate * h)**2`` gives
    ``rate**2 = sum(max(e**2 - sigma**2, 0)) / sum(h**2)``, shrunk towards
    ``prior_rate`` with the weight of ``prior_points`` points. All arrays (B, n).
    """
    m = mask.astype(float)
    excess = np.maximum(np.nan_to_num(errors) ** 2 - sigma[:, None] ** 2, 0.0) * m
    h2 = horizons ** 2 * m
    n = m.sum(axis=1)
    observed = excess.sum(axis=1) / np.maximum(h2.sum(axis=1), 1e-12)
    return np.sqrt((n * observed + prior_points * prior_rate ** 2) / (n + prior_points))


class Surrogate(BaseEstimator):
    """Base class: validation, direction, quantiles from a log-normal mixture.

    Subclasses implement ``_fit(x, loss)`` and ``_log_mixture(x) -> (means,
    weights, sd)`` for positions ``x`` (m,), returning arrays (m, K), (m, K), (m,).
    """

    _min_points = 3

    def fit(self, x, y):
        """Fit the surrogate to one observed curve; returns ``self``."""
        x, y, loss = self._checked_curve(x, y)
        self._fit(x, loss)
        return self._remember(x, y)

    def _checked_curve(self, x, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The curve checked (:func:`check_curve`), and its loss."""
        check_choice("direction", self.direction, DIRECTIONS)
        x, y = check_curve(x, y, min_points=self._min_points,
                           positive=self.direction == "minimize")
        return x, y, self._to_loss(y)

    def _remember(self, x, y):
        """Keep the fitted curve; returns ``self``."""
        self.x_, self.y_ = x, y
        self.n_points_ = x.size
        return self

    def predict_quantiles(self, x, qs) -> np.ndarray:
        """Quantiles of the forecast at ``x``, shape (len(x), len(qs)), in units of y."""
        self._check_fitted()
        x, qs = check_x(x), check_quantiles(qs)
        means, weights, sd = self._log_mixture(x)
        levels = qs if self.direction == "minimize" else 1.0 - qs
        out = self._from_loss(np.exp(mixture_quantiles(means, weights, sd, levels)))
        if not np.isfinite(out).all():  # pragma: no cover - guarded by every _log_mixture
            raise RuntimeError(f"{type(self).__name__} produced a non-finite forecast")
        return out

    def predict(self, x) -> np.ndarray:
        """Median forecast at ``x``."""
        return self.predict_quantiles(x, [0.5])[:, 0]

    def _check_fitted(self) -> None:
        if not hasattr(self, "x_"):
            raise NotFittedError.for_estimator(self)

    def _to_loss(self, y: np.ndarray) -> np.ndarray:
        if self.direction == "minimize":
            return y
        if (y >= 1).any():
            raise InputError("with direction='maximize' y must be a score below 1 (such as an "
                             "accuracy); the surrogate forecasts the error 1 - y.")
        return 1.0 - y

    def _from_loss(self, loss: np.ndarray) -> np.ndarray:
        return loss if self.direction == "minimize" else 1.0 - loss

    def _fit(self, x: np.ndarray, loss: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _log_mixture(self, x: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError
