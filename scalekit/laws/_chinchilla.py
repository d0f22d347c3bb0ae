"""The Chinchilla law ``L(N, D) = E + A / N^alpha + B / D^beta`` and its optimum.

Hoffmann et al. (2022), "Training compute-optimal large language models", §3.3 and
Appendix D: fitted as ``log L = logsumexp(a - alpha log N, b - beta log D, e)`` with
``e = log E``, ``a = log A``, ``b = log B``, Huber loss (delta = 1e-3) on the log
residuals, from the grid alpha, beta in {0, 0.5, ..., 2}, e in {-1, -0.5, ..., 1},
a, b in {0, 5, ..., 25} (4,500 starts).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.checks import check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law

_EXPONENT_GRID = (0.0, 0.5, 1.0, 1.5, 2.0)
_LOG_FLOOR_GRID = (-1.0, -0.5, 0.0, 0.5, 1.0)
_LOG_SCALE_GRID = (0.0, 5.0, 10.0, 15.0, 20.0, 25.0)


def _function(X, theta):
    theta = np.asarray(theta, dtype=float)
    E, A, B, alpha, beta = (theta[..., k:k + 1] for k in range(5))
    return E + A * X["params"] ** -alpha + B * X["tokens"] ** -beta


def _terms(X, z):
    z = np.asarray(z, dtype=float)
    e, a, b, alpha, beta = (z[..., k:k + 1] for k in range(5))
    return logsumexp_terms(e, a - alpha * np.log(X["params"]), b - beta * np.log(X["tokens"]))


def _log_function(X, z):
    return _terms(X, z)[0]


def _log_value_and_jacobian(X, z):
    value, (w_e, w_a, w_b) = _terms(X, z)
    rows = np.empty((5,) + value.shape)          # built as (P, ..., n), returned as a view
    rows[0], rows[1], rows[2] = w_e, w_a, w_b
    np.multiply(w_a, -np.log(X["params"]), out=rows[3])
    np.multiply(w_b, -np.log(X["tokens"]), out=rows[4])
    return value, np.moveaxis(rows, 0, -1)


def optimum_coefficients(values: Mapping[str, float]) -> dict[str, float]:
    """Exponents ``a``, ``b`` and the constant ``G`` of the compute-optimal allocation.

    ``a = beta / (alpha + beta)``, ``b = alpha / (alpha + beta)`` and
    ``G = (alpha A / (beta B))^(1 / (alpha + beta))`` (Hoffmann et al. 2022, Appendix D).
    Built from logs, so a parameter on its bound (``B = 0``, ``alpha + beta = 0``) gives
    an infinite or NaN value instead of an error.
    """
    alpha, beta = float(values["alpha"]), float(values["beta"])
    A, B = float(values["A"]), float(values["B"])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        total = np.float64(alpha + beta)
        log_g = (np.log(np.float64(alpha)) + np.log(np.float64(A)) - np.log(np.float64(beta))
                 - np.log(np.float64(B))) / total
        return {"a": float(np.float64(beta) / total), "b": float(np.float64(alpha) / total),
                "G": float(np.exp(log_g))}


def chinchilla_optimum(values: Mapping[str, float], compute,
                       flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> dict:
    """Compute-optimal model size, token count and loss for a compute budget.

    Minimising ``L(N, D)`` under ``C = k N D`` (``k = flops_per_param_token``, 6 by
    the usual convention) gives ``N* = G (C/k)^a`` and ``D* = G^-1 (C/k)^b``
    (Hoffmann et al. 2022, Appendix D).

    Parameters
    ----------
    values : mapping
        Fitted ``E``, ``A``, ``B``, ``alpha``, ``beta``.
    compute : float or array
        Budget(s) in FLOPs.
    flops_per_param_token : float
        FLOPs per parameter per token.

    Returns
    -------
    dict
        ``params`` (N*), ``tokens`` (D*), ``loss`` (L at the optimum), and ``a``, ``b``, ``G``.
    """
    check_number("flops_per_param_token", flops_per_param_token, low=0, low_open=True)
    coefficients = optimum_coefficients(values)
    budget = np.asarray(compute, dtype=float) / flops_per_param_token
    params = coefficients["G"] * budget ** coefficients["a"]
    tokens = budget ** coefficients["b"] / coefficients["G"]
    theta = np.array([values[name] for name in CHINCHILLA.param_names], dtype=float)
    loss = _function({"params": np.atleast_1d(params), "tokens": np.atleast_1d(tokens)}, theta)
    loss = loss.reshape(np.shape(params))
    if np.ndim(params) == 0:
        params, tokens, loss = float(params), float(tokens), float(loss)
    return {"params": params, "tokens": tokens, "loss": loss, **coefficients}


CHINCHILLA = register_law(Law(
    name="chinchilla",
    inputs=("params", "tokens"),
    params=(Param("E", 0.0, np.inf, _LOG_FLOOR_GRID, log=True),
            Param("A", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("B", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha", 0.0, np.inf, _EXPONENT_GRID),
            Param("beta", 0.0, np.inf, _EXPONENT_GRID)),
    formula="E + A / N^alpha + B / D^beta",
    function=_function, log_function=_log_function,
    log_value_and_jacobian=_log_value_and_jacobian,
    derive=optimum_coefficients,
    description="Loss of N parameters trained on D tokens (Hoffmann et al. 2022, approach 3)."))
