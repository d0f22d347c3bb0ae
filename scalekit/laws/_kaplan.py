"""The Kaplan law ``L(N, D) = [(N_c / N)^(alpha_N / alpha_D) + D_c / D]^alpha_D``.

Kaplan et al. (2020), "Scaling laws for neural language models", eq. (1.5); they
report N_c = 8.8e13, D_c = 5.4e13 (tokens), alpha_N = 0.076, alpha_D = 0.095.
Fitted as ``log L = alpha_D logsumexp((alpha_N / alpha_D)(log N_c - log N),
log D_c - log D)`` with ``log N_c`` and ``log D_c`` as fitting coordinates.
"""

from __future__ import annotations

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law

_LOG_SCALE_GRID = (15.0, 20.0, 25.0, 30.0, 35.0, 40.0)
_EXPONENT_GRID = (0.03, 0.1, 0.3, 0.6)


def _function(X, theta):
    theta = np.asarray(theta, dtype=float)
    N_c, alpha_N, D_c, alpha_D = (theta[..., k:k + 1] for k in range(4))
    return ((N_c / X["params"]) ** (alpha_N / alpha_D) + D_c / X["tokens"]) ** alpha_D


def _parts(X, z):
    z = np.asarray(z, dtype=float)
    log_N_c, alpha_N, log_D_c, alpha_D = (z[..., k:k + 1] for k in range(4))
    size_term = (alpha_N / alpha_D) * (log_N_c - np.log(X["params"]))
    total, (w_size, w_data) = logsumexp_terms(size_term, log_D_c - np.log(X["tokens"]))
    return alpha_N, alpha_D, log_N_c - np.log(X["params"]), size_term, total, w_size, w_data


def _log_function(X, z):
    _, alpha_D, _, _, total, _, _ = _parts(X, z)
    return alpha_D * total


def _log_value_and_jacobian(X, z):
    alpha_N, alpha_D, gap, size_term, total, w_size, w_data = _parts(X, z)
    value = alpha_D * total
    rows = np.empty((4,) + value.shape)          # built as (P, ..., n), returned as a view
    rows[0] = alpha_N * w_size
    rows[1] = w_size * gap
    rows[2] = alpha_D * w_data
    rows[3] = total - w_size * size_term
    return value, np.moveaxis(rows, 0, -1)


KAPLAN = register_law(Law(
    name="kaplan",
    inputs=("params", "tokens"),
    params=(Param("N_c", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha_N", 0.0, np.inf, _EXPONENT_GRID),
            Param("D_c", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha_D", 1e-6, np.inf, _EXPONENT_GRID)),
    formula="((N_c / N)^(alpha_N / alpha_D) + D_c / D)^alpha_D",
    function=_function, log_function=_log_function,
    log_value_and_jacobian=_log_value_and_jacobian,
    description="Loss of N parameters trained on D tokens (Kaplan et al. 2020, eq. 1.5)."))
