"""The data-constrained law ``L(N, D, U) = E + A / N'^alpha + B / D'^beta``.

Muennighoff et al. (2023), "Scaling data-constrained language models", §3 and
Appendix A. Of ``D`` tokens drawn from ``U`` unique ones, ``U_D = min(U, D)`` are
unique and ``R_D = D / U_D - 1`` are repetitions; repeated data are worth less,
so the law sees the effective data

    D' = U_D + U_D R*_D (1 - exp(-R_D / R*_D)).

Parameters beyond the compute-optimal size for ``U_D`` tokens,
``U_N = min(N, U_D / TOKENS_PER_PARAM)``, are worth less likewise:
``R_N = N / U_N - 1``, ``N' = U_N + U_N R*_N (1 - exp(-R_N / R*_N))``
(:func:`data_constrained_law` takes ``U_N`` from given Chinchilla terms instead). With
``U >= D`` and ``N <= U / TOKENS_PER_PARAM`` the law is Chinchilla's. The paper
fits R*_D = 15.39, R*_N = 5.31, alpha = beta = 0.353, E = 1.87. Fitted in log
space like Chinchilla's, ``log L = logsumexp(e, a - alpha log N', b - beta log D')``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._chinchilla import optimum_coefficients
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law

#: Tokens per parameter of the compute-optimal model, for ``U_N``: Muennighoff et al. take
#: ``U_N`` from Chinchilla's optimal ratio (N* ≈ 0.051 D*, about 20 tokens a parameter).
TOKENS_PER_PARAM = 1.0 / 0.051
#: ``U_N = scale * U_D ** power`` by default: the ratio above.
DEFAULT_RULE = (1.0 / TOKENS_PER_PARAM, 1.0)

_EXPONENT_GRID = (0.2, 0.4, 0.8)
_LOG_FLOOR_GRID = (-0.5, 0.5)
_LOG_SCALE_GRID = (2.0, 6.0, 10.0, 14.0)
_LOG_RSTAR_GRID = (np.log(3.0), np.log(15.0), np.log(60.0))


def _effective(base, repeats, log_rstar):
    """``base (1 + R* (1 - exp(-R / R*)))`` and its log-derivative with respect to log R*."""
    rstar = np.exp(log_rstar)
    decay = np.exp(-repeats / rstar)
    saturation = 1.0 - decay
    value = base * (1.0 + rstar * saturation)
    d_log_value = base * rstar * (saturation - repeats / rstar * decay) / value
    return value, d_log_value


def unique_params_rule(base: Mapping[str, float]) -> tuple[float, float]:
    """``(scale, power)`` with ``U_N = scale U_D^power`` the compute-optimal size for ``U_D``.

    Muennighoff et al. (2023) take ``U_N`` as the compute-optimal parameter count for
    ``U_D`` tokens under the Chinchilla terms ``base`` (``A``, ``B``, ``alpha``,
    ``beta``): with ``G = (alpha A / (beta B))^(1 / (alpha + beta))`` the optimum has
    ``N = G (G D)^(beta / alpha)``. Their C4 terms give ``U_N = 0.0510 U_D``.
    """
    G = optimum_coefficients(base)["G"]
    power = float(base["beta"]) / float(base["alpha"])
    return G ** (1.0 + power), power


def _bases(X, rule=DEFAULT_RULE):
    """``U_D``, ``R_D``, ``U_N``, ``R_N`` of each point."""
    unique_data = np.minimum(X["unique_tokens"], X["tokens"])
    repeats_data = X["tokens"] / unique_data - 1.0
    unique_params = np.minimum(X["params"], rule[0] * unique_data ** rule[1])
    repeats_params = X["params"] / unique_params - 1.0
    return unique_data, repeats_data, unique_params, repeats_params


def _function(X, theta, rule=DEFAULT_RULE):
    theta = np.asarray(theta, dtype=float)
    E, A, B, alpha, beta, rstar_d, rstar_n = (theta[..., k:k + 1] for k in range(7))
    unique_data, repeats_data, unique_params, repeats_params = _bases(X, rule)
    data, _ = _effective(unique_data, repeats_data, np.log(rstar_d))
    params, _ = _effective(unique_params, repeats_params, np.log(rstar_n))
    return E + A * params ** -alpha + B * data ** -beta


def _terms(X, z, rule=DEFAULT_RULE):
    z = np.asarray(z, dtype=float)
    e, a, b, alpha, beta, log_rstar_d, log_rstar_n = (z[..., k:k + 1] for k in range(7))
    unique_data, repeats_data, unique_params, repeats_params = _bases(X, rule)
    data, d_data = _effective(unique_data, repeats_data, log_rstar_d)
    params, d_params = _effective(unique_params, repeats_params, log_rstar_n)
    log_params, log_data = np.log(params), np.log(data)
    value, weights = logsumexp_terms(e, a - alpha * log_params, b - beta * log_data)
    return value, weights, alpha, beta, log_params, log_data, d_params, d_data


def _log_function(X, z, rule=DEFAULT_RULE):
    return _terms(X, z, rule)[0]


def _log_value_and_jacobian(X, z, rule=DEFAULT_RULE):
    value, (w_e, w_a, w_b), alpha, beta, log_params, log_data, d_params, d_data = _terms(X, z,
                                                                                        rule)
    rows = np.empty((7,) + value.shape)          # built as (P, ..., n), returned as a view
    rows[0], rows[1], rows[2] = w_e, w_a, w_b
    rows[3] = -w_a * log_params
    rows[4] = -w_b * log_data
    rows[5] = -w_b * beta * d_data
    rows[6] = -w_a * alpha * d_params
    return value, np.moveaxis(rows, 0, -1)


DATA_CONSTRAINED = register_law(Law(
    name="data_constrained",
    inputs=("params", "tokens", "unique_tokens"),
    params=(Param("E", 0.0, np.inf, _LOG_FLOOR_GRID, log=True),
            Param("A", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("B", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha", 0.0, np.inf, _EXPONENT_GRID),
            Param("beta", 0.0, np.inf, _EXPONENT_GRID),
            Param("rstar_d", 1e-3, 1e6, _LOG_RSTAR_GRID, log=True),
            Param("rstar_n", 1e-3, 1e6, _LOG_RSTAR_GRID, log=True)),
    formula="E + A / N'^alpha + B / D'^beta; D' = U_D (1 + rstar_d (1 - exp(-R_D / rstar_d))), "
            "N' = U_N (1 + rstar_n (1 - exp(-R_N / rstar_n))); U_D = min(U, D), "
            "R_D = D / U_D - 1, U_N = min(N, U_D / 19.6), R_N = N / U_N - 1",
    function=_function, log_function=_log_function,
    log_value_and_jacobian=_log_value_and_jacobian,
    extra={"arguments": ("N", "D", "U")},
    description="Loss of N parameters trained on D tokens drawn from U unique ones, repeated "
                "data and excess parameters decaying in value (Muennighoff et al. 2023)."))


def data_constrained_law(base: Mapping[str, float] | None = None) -> Law:
    """The law with ``U_N`` from the Chinchilla terms ``base`` (:func:`unique_params_rule`).

    With ``base`` None, the registered law (``U_N = 0.051 U_D``). The returned law keeps
    the registered name, so a fit's ``to_dict`` round trip gives back the default rule.
    """
    if base is None:
        return DATA_CONSTRAINED
    rule = unique_params_rule(base)
    return replace(DATA_CONSTRAINED, function=partial(_function, rule=rule),
                   log_function=partial(_log_function, rule=rule),
                   log_value_and_jacobian=partial(_log_value_and_jacobian, rule=rule),
                   extra={**DATA_CONSTRAINED.extra, "unique_params_rule": rule})
