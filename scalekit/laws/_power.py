"""One-input power laws: ``power``, ``saturating_power`` and the compute ``frontier``.

All are fitted in the log space: ``log y = log A - alpha log x`` for the pure power
law and ``log y = logsumexp(log E, log A - alpha log x)`` for the saturating ones
(Hoffmann et al. 2022 fit the same form). Start grids are in the fitting space
(``log`` of the positive parameters, exponents as they are).
"""

from __future__ import annotations

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law

_EXPONENT_GRID = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
_LOG_SCALE_GRID = (-5.0, 0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0)
_LOG_FLOOR_GRID = (-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)


def _power_law(input_name: str) -> Law:
    def function(X, theta):
        theta = np.asarray(theta, dtype=float)
        x = X[input_name]
        return theta[..., 0:1] * x ** -theta[..., 1:2]

    def log_function(X, z):
        z = np.asarray(z, dtype=float)
        return z[..., 0:1] - z[..., 1:2] * np.log(X[input_name])

    def log_value_and_jacobian(X, z):
        value = log_function(X, z)
        rows = np.empty((2,) + value.shape)      # built as (P, ..., n), returned as a view
        rows[0] = 1.0
        rows[1] = -np.log(X[input_name])
        return value, np.moveaxis(rows, 0, -1)

    return Law(
        name="power", inputs=(input_name,),
        params=(Param("A", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
                Param("alpha", -np.inf, np.inf, _EXPONENT_GRID)),
        formula=f"A * {input_name}^-alpha",
        function=function, log_function=log_function,
        log_value_and_jacobian=log_value_and_jacobian, description="Pure power law A x^-alpha.")


def _saturating_power_law(name: str, input_name: str, description: str) -> Law:
    def function(X, theta):
        theta = np.asarray(theta, dtype=float)
        x = X[input_name]
        return theta[..., 0:1] + theta[..., 1:2] * x ** -theta[..., 2:3]

    def log_function(X, z):
        return _terms(X, z)[0]

    def log_value_and_jacobian(X, z):
        value, (w_floor, w_power) = _terms(X, z)
        rows = np.empty((3,) + value.shape)      # built as (P, ..., n), returned as a view
        rows[0], rows[1] = w_floor, w_power
        np.multiply(w_power, -np.log(X[input_name]), out=rows[2])
        return value, np.moveaxis(rows, 0, -1)

    def _terms(X, z):
        z = np.asarray(z, dtype=float)
        log_x = np.log(X[input_name])
        return logsumexp_terms(z[..., 0:1], z[..., 1:2] - z[..., 2:3] * log_x)

    return Law(
        name=name, inputs=(input_name,),
        params=(Param("E", 0.0, np.inf, _LOG_FLOOR_GRID, log=True),
                Param("A", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
                Param("alpha", 0.0, np.inf, _EXPONENT_GRID)),
        formula=f"E + A * {input_name}^-alpha",
        function=function, log_function=log_function,
        log_value_and_jacobian=log_value_and_jacobian, description=description)


POWER = register_law(_power_law("x"))
SATURATING_POWER = register_law(_saturating_power_law(
    "saturating_power", "x", "Power law with an irreducible floor, E + A x^-alpha."))
FRONTIER = register_law(_saturating_power_law(
    "frontier", "compute",
    "Compute frontier L(C) = E + A C^-alpha of the best loss at each compute "
    "(Kaplan et al. 2020)."))
