"""Error of the judge's pick among k samples: Monte Carlo and deterministic quadrature.

Model of Halder and Pehlevan (see :mod:`scalekit.planners._judge_model`). Both
functions return the error averaged over the same test inputs, so they differ
only by the Monte Carlo error of the samples.

*Monte Carlo.* For each test input and repeat, ``max(ks)`` outputs are drawn
once; the error for every ``k`` uses the first ``k`` of them (so the curve over
k comes from one draw), with the softmax pick averaged exactly over its weights.

*Quadrature.* A softmax pick at temperature ``T`` is the arg-min of
``Z_j = R_j^2 - T G_j`` with ``R_j = |y_j - y_R|`` and ``G_j`` standard Gumbel
(the Gumbel-max trick), so the chosen sample has density
``k f_R(r) f_G(g) S(r^2 - T g)^(k-1)`` with ``S(z) = P(Z > z)``. ``S`` is
tabulated by integrating the closed-form law of ``R`` against the Gumbel
density; the double integral over ``(r, g)`` is done on fixed grids and divided
by the same quadrature of 1. At ``T = 0`` (best-of-k) it is the one-dimensional
order-statistic integral ``k f_R(r) (1 - F_R(r))^(k-1)``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from scalekit.checks import check_number, fail
from scalekit.planners._judge_model import Predictive

_GUMBEL_RANGE = (-4.0, 35.0)


def _check_ks(ks) -> np.ndarray:
    ks = np.atleast_1d(np.asarray(ks))
    if ks.size == 0 or not np.all(np.isfinite(ks)) or np.any(ks < 1) or np.any(ks != np.round(ks)):
        raise fail("ks", ks.tolist(), "one or more whole numbers of samples >= 1")
    return ks.astype(int)


def monte_carlo_errors(predictive: Predictive, ks, temperature: float, *, repeats: int = 200,
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo error for each ``k`` in ``ks`` at ``temperature`` (0: best-of-k).

    Returns
    -------
    error, stderr : ndarray
        Mean error over test inputs and repeats, and its Monte Carlo standard
        error (test inputs held fixed).
    """
    ks = _check_ks(ks)
    temperature = check_number("temperature", temperature, low=0)
    repeats = check_number("repeats", repeats, low=2, integer=True)
    rng = np.random.default_rng(seed)
    m, s = predictive.mean[:, None], predictive.std[:, None]
    t, y_r = predictive.target[:, None], predictive.reward_target[:, None]
    shape = (predictive.mean.size, repeats)
    per_k = np.empty((ks.size,) + shape)
    # running softmax sums (with a running maximum of the logits) or the running closest draw
    top = np.full(shape, -np.inf)
    weight_sum = np.zeros(shape)
    weighted_error = np.zeros(shape)
    closest = np.full(shape, np.inf)
    closest_error = np.zeros(shape)
    for k in range(1, int(ks.max()) + 1):
        y = m + s * rng.standard_normal(shape)
        error = (y - t) ** 2
        distance = (y - y_r) ** 2
        if temperature == 0:
            better = distance < closest
            closest = np.where(better, distance, closest)
            closest_error = np.where(better, error, closest_error)
            current = closest_error
        else:
            logit = -distance / temperature
            new_top = np.maximum(top, logit)
            scale, weight = np.exp(top - new_top), np.exp(logit - new_top)
            weight_sum = weight_sum * scale + weight
            weighted_error = weighted_error * scale + weight * error
            top = new_top
            current = weighted_error / weight_sum
        per_k[ks == k] = current
    mean = per_k.mean(axis=(1, 2))
    stderr = np.sqrt(per_k.var(axis=2, ddof=1).sum(axis=1) / repeats) / predictive.mean.size
    return mean, stderr


def quadrature_errors(predictive: Predictive, ks, temperature: float, *,
                      radius_points: int = 600, gumbel_points: int = 400) -> np.ndarray:
    """Deterministic error for each ``k`` in ``ks`` at ``temperature`` (0: best-of-k)."""
    ks = _check_ks(ks)
    temperature = check_number("temperature", temperature, low=0)
    errors = np.zeros(ks.size)
    for m, s, t, y_r in zip(predictive.mean, predictive.std, predictive.target,
                            predictive.reward_target, strict=True):
        errors += _one_input(m - y_r, s, y_r - t, ks, temperature, radius_points, gumbel_points)
    return errors / predictive.mean.size


def _one_input(c, s, offset, ks, temperature, radius_points, gumbel_points):
    """Error for one test input: ``Y - y_R ~ N(c, s^2)``, ``y_R - t = offset``."""
    r_max = abs(c) + 12.0 * s
    r = np.unique(np.concatenate([[0.0], np.geomspace(1e-9 * s, r_max, radius_points // 3),
                                  np.linspace(0.0, r_max, radius_points - radius_points // 3)]))
    plus, minus = _phi((r - c) / s), _phi((r + c) / s)
    density = (plus + minus) / s  # f_R
    density_error = (plus * (offset + r) ** 2 + minus * (offset - r) ** 2) / s  # f_R * E[err | R]
    exponents = (ks - 1).astype(float)[:, None]
    if temperature == 0:
        survival = 1.0 - (ndtr((r - c) / s) - ndtr((-r - c) / s))
        log_survival = np.log(np.clip(survival, 1e-300, 1.0))
        weight = ks[:, None] * np.exp(exponents * log_survival[None, :])
        weight[ks == 1] = 1.0
        return (np.trapezoid(weight * density_error, r, axis=1)
                / np.trapezoid(weight * density, r, axis=1))
    g, gumbel_weights = _gumbel_rule(gumbel_points)
    log_survival = _log_survival(c, s, temperature, r_max, gumbel_points)
    z = r[:, None] ** 2 - temperature * g[None, :]
    log_s = log_survival(z)  # (r, g)
    out = np.empty(ks.size)
    for i, k in enumerate(ks):
        chosen = np.exp((k - 1) * log_s) if k > 1 else np.ones_like(log_s)
        inner = chosen @ gumbel_weights
        out[i] = np.trapezoid(density_error * inner, r) / np.trapezoid(density * inner, r)
    return out


def _log_survival(c, s, temperature, r_max, gumbel_points):
    """``z -> log P(R^2 - T G > z)``, tabulated on a signed-square-root grid of z."""
    g, gumbel_weights = _gumbel_rule(gumbel_points)
    low = -np.sqrt(_GUMBEL_RANGE[1] * temperature)
    high = np.sqrt(r_max ** 2 - _GUMBEL_RANGE[0] * temperature)
    u = np.unique(np.concatenate([
        -np.geomspace(1e-9 * s, -low, 60), [0.0], np.geomspace(1e-9 * s, high, 140),
        np.linspace(low, high, 200)]))
    z = u * np.abs(u)
    x = np.sqrt(np.maximum(z[:, None] + temperature * g[None, :], 0.0))  # R below this: Z <= z
    below = ndtr((x - c) / s) - ndtr((-x - c) / s)
    cdf = np.clip(below @ gumbel_weights, 0.0, 1.0)
    log_survival = np.log1p(-np.minimum(cdf, 1.0 - 1e-300))

    def lookup(z_query):
        u_query = np.sign(z_query) * np.sqrt(np.abs(z_query))
        return np.interp(u_query, u, log_survival, left=0.0, right=log_survival[-1])

    return lookup


def _gumbel_rule(points):
    """Nodes on the Gumbel range and trapezoid weights times the Gumbel density."""
    g = np.linspace(*_GUMBEL_RANGE, points)
    weights = np.full(points, g[1] - g[0])
    weights[[0, -1]] *= 0.5
    return g, weights * np.exp(-g - np.exp(-g))


def _phi(x):
    return np.exp(-0.5 * x ** 2) / np.sqrt(2.0 * np.pi)
