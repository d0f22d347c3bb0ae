"""The robust losses of every fit, in one place.

* ``rho(r, "huber", delta)``: ``r^2 / 2`` for ``|r| <= delta``, ``delta (|r| - delta / 2)``
  beyond (``scipy.special.huber``); ``rho(r, "soft_l1", delta)``:
  ``delta^2 (sqrt(1 + (r / delta)^2) - 1)``, quadratic near 0 and linear beyond
  ``delta`` like Huber's but smooth (scipy's ``least_squares(loss="soft_l1",
  f_scale=delta)``); and ``rho(r, "squared", delta) = r^2 / 2``, with
  their derivatives and the Gauss–Newton curvature weights the law fits use
  (:mod:`scalekit.fit._objective`, :mod:`scalekit.fit.multistart`);
* a Huber threshold set from the data, ``k`` robust standard deviations of the
  residuals (:func:`robust_scale`), and Huber's reweighting (:func:`irls_weights`),
  with which the learning-curve families of :mod:`scalekit.surrogates._curve_families`
  set each curve's threshold and report its robust scatter.
"""

from __future__ import annotations

import numpy as np

from scalekit.checks import check_choice, check_number

LOSSES = ("huber", "squared", "soft_l1")


def check_loss(loss: str, delta: float) -> None:
    """Validate the loss name and its threshold ``delta`` (Huber, soft-L1)."""
    check_choice("loss", loss, LOSSES)
    check_number("delta", delta, low=0, low_open=True)


def rho(r: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """Per-point loss of residuals ``r``."""
    if loss == "squared":
        return 0.5 * r * r
    if loss == "soft_l1":
        return delta * delta * (np.sqrt(1.0 + (r / delta) ** 2) - 1.0)
    a = np.abs(r)
    m = np.minimum(a, delta)
    return m * (a - 0.5 * m)


def psi(r: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """Derivative of :func:`rho`."""
    if loss == "soft_l1":
        return r / np.sqrt(1.0 + (r / delta) ** 2)
    return r if loss == "squared" else np.clip(r, -delta, delta)


def psi_prime(r: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """Second derivative of :func:`rho` (for Huber 1 inside the threshold, 0 beyond)."""
    if loss == "soft_l1":
        return (1.0 + (r / delta) ** 2) ** -1.5
    return np.ones_like(r) if loss == "squared" else (np.abs(r) <= delta).astype(float)


def curvature_weights(r: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """Per-point weights of the Gauss–Newton matrix ``J^T W J`` used by the optimiser.

    For least squares they are 1. For Huber they are ``psi'(r)`` (1 inside ``delta``,
    0 beyond: the exact curvature of the piecewise-quadratic loss) plus a tenth of
    ``psi(r) / r`` (the weights of the quadratic that majorises ``rho``, as in
    iteratively reweighted least squares), which keeps the matrix well posed when
    few residuals lie inside ``delta``. For soft-L1 they are those of its majorising
    quadratic, ``psi(r) / r = (1 + (r / delta)^2)^(-1/2)``.
    """
    if loss == "squared":
        return np.ones_like(r)
    if loss == "soft_l1":
        return 1.0 / np.sqrt(1.0 + (r / delta) ** 2)
    a = np.abs(r)
    return np.where(a <= delta, 1.1, 0.1 * delta / np.maximum(a, delta))


def irls_weights(r: np.ndarray, delta) -> np.ndarray:
    """Huber's reweighting ``psi(r) / r = min(1, delta / |r|)``: the weights of squared
    residuals whose weighted sum has the Huber loss's stationary points."""
    return np.minimum(1.0, delta / np.maximum(np.abs(r), 1e-12))


def robust_scale(r: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``1.4826 * median |r|`` of each row over the points where ``mask > 0`` (the
    standard deviation of normal residuals centred on 0); 0 for a row with none."""
    filled = np.where(mask > 0, np.abs(r), np.nan)
    with np.errstate(all="ignore"):
        out = np.nanmedian(filled, axis=1)
    return 1.4826 * np.nan_to_num(out, nan=0.0)
