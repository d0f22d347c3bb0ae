"""Broken neural scaling law with a chosen number of breaks.

Caballero, Gupta, Rish and Krueger (2022), "Broken neural scaling laws", eq. (1):

    y = a + b x^-c0 prod_{i=1..n} (1 + (x / d_i)^(1 / f_i))^(-c_i f_i)

Each break ``i`` at ``x = d_i`` bends the slope on a log-log plot by ``c_i``, with
sharpness ``f_i`` (small = sharp). Fitted as ``log y = logsumexp(log a, T)`` with
``T = log b - c0 log x - sum_i c_i f_i softplus((log x - log d_i) / f_i)``; ``a``,
``b``, ``d_i`` and ``f_i`` are positive and fitted as logarithms. The break
positions start at quantiles of the data's ``x``.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from scalekit.checks import check_number
from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law

_LOG_SCALE_GRID = (-2.0, 1.0, 4.0, 8.0)
_FIRST_SLOPE_GRID = (0.0, 0.5, 1.0)
_BREAK_SLOPE_GRID = (0.5, 2.0, 8.0)
_LOG_SHARPNESS_GRID = (float(np.log(0.1)), 0.0)
_LOG_FLOOR_OFFSETS = (-5.0, -2.0, -0.2)


def _sigmoid(v):
    return 0.5 * (1.0 + np.tanh(0.5 * v))


@cache
def bnsl(n_breaks: int = 1) -> Law:
    """The broken power law with ``n_breaks`` breaks (named ``bnsl`` for one, else ``bnsl<k>``).

    Parameters: ``a``, ``b``, ``c0``, then ``c<i>``, ``d<i>``, ``f<i>`` for each break.
    """
    n_breaks = check_number("n_breaks", n_breaks, low=1, high=4, integer=True)
    breaks = range(1, n_breaks + 1)

    def unpack(z):
        z = np.asarray(z, dtype=float)
        columns = [z[..., k:k + 1] for k in range(3 + 3 * n_breaks)]
        return columns[0], columns[1], columns[2], [columns[3 + 3 * i:6 + 3 * i] for i in
                                                    range(n_breaks)]

    def function(X, theta):
        a, b, c0, rest = unpack(theta)
        x = X["x"]
        y = b * x ** -c0
        for c, d, f in rest:
            y = y * (1.0 + (x / d) ** (1.0 / f)) ** (-c * f)
        return a + y

    def parts(X, z):
        log_a, log_b, c0, rest = unpack(z)
        log_x = np.log(X["x"])
        T = log_b - c0 * log_x
        pieces = []
        for c, log_d, log_f in rest:
            f = np.exp(log_f)
            v = (log_x - log_d) / f
            soft = np.logaddexp(0.0, v)
            T = T - c * f * soft
            pieces.append((c, f, v, soft))
        total, (w_floor, w_power) = logsumexp_terms(log_a, T)
        return total, w_floor, w_power, log_x, pieces

    def log_function(X, z):
        return parts(X, z)[0]

    def log_value_and_jacobian(X, z):
        total, w_floor, w_power, log_x, pieces = parts(X, z)
        rows = np.empty((3 + 3 * n_breaks,) + total.shape)
        rows[0], rows[1], rows[2] = w_floor, w_power, -w_power * log_x
        for i, (c, f, v, soft) in enumerate(pieces):
            slope = _sigmoid(v)
            rows[3 + 3 * i] = -w_power * f * soft
            rows[4 + 3 * i] = w_power * c * slope
            rows[5 + 3 * i] = -w_power * c * f * (soft - v * slope)
        return total, np.moveaxis(rows, 0, -1)

    def data_grid(X, y):
        log_x = np.log(X["x"])
        quantiles = np.linspace(0.0, 1.0, n_breaks + 2)[1:-1]
        spread = [(q - 0.5 / (n_breaks + 1), q, q + 0.5 / (n_breaks + 1)) for q in quantiles]
        grids = {"a": tuple(float(np.log(y.min()) + o) for o in _LOG_FLOOR_OFFSETS)}
        for i, qs in zip(breaks, spread, strict=True):
            grids[f"d{i}"] = tuple(float(np.quantile(log_x, q)) for q in qs[::1 if n_breaks == 1
                                                                                else 2])
        return grids

    params = [Param("a", 0.0, np.inf, _LOG_FLOOR_OFFSETS, log=True),
              Param("b", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
              Param("c0", -np.inf, np.inf, _FIRST_SLOPE_GRID)]
    # Each further break multiplies the grid: keep it to 2 x 2 x 2 starts per break then.
    slope_grid = _BREAK_SLOPE_GRID if n_breaks == 1 else _BREAK_SLOPE_GRID[::2]
    for i in breaks:
        params += [Param(f"c{i}", -np.inf, np.inf, slope_grid),
                   Param(f"d{i}", 0.0, np.inf, (0.0,), log=True),
                   Param(f"f{i}", 1e-3, 1e3, _LOG_SHARPNESS_GRID, log=True)]
    factors = " ".join(f"(1 + (x/d{i})^(1/f{i}))^(-c{i} f{i})" for i in breaks)
    return Law(
        name="bnsl" if n_breaks == 1 else f"bnsl{n_breaks}", inputs=("x",),
        params=tuple(params), formula=f"a + b x^-c0 {factors}",
        function=function, log_function=log_function,
        log_value_and_jacobian=log_value_and_jacobian, data_grid=data_grid,
        description=f"Broken power law with {n_breaks} break(s) (Caballero et al. 2022).",
        extra={"n_breaks": n_breaks})


BNSL = register_law(bnsl(1))
