"""The sigmoid ``y = a / (1 + exp(-k (x - x0))) + b`` from a loss to an accuracy.

Bhagia et al. (2024), "Establishing task scaling laws via compute-efficient model
ladders", step 2: task accuracy as a sigmoid of the task loss (bits-per-byte).
With ``a < 0`` accuracy falls from ``b`` (at zero loss) towards ``a + b`` (chance)
as the loss grows; ``k`` is the steepness and ``x0`` the midpoint. Bounds as in the
paper's repository: ``a`` in [-1, 0], ``b`` in [0, 1], ``k >= 0``.
"""

from __future__ import annotations

import numpy as np

from scalekit.laws.base import Law, Param
from scalekit.laws.registry import register_law


def _function(X, theta):
    theta = np.asarray(theta, dtype=float)
    a, x0, k, b = (theta[..., j:j + 1] for j in range(4))
    with np.errstate(over="ignore"):
        return a / (1.0 + np.exp(-k * (X["x"] - x0))) + b


def _log_value_and_jacobian(X, z):
    z = np.asarray(z, dtype=float)                  # no log parameters: z is theta
    a, x0, k, b = (z[..., j:j + 1] for j in range(4))
    gap = X["x"] - x0
    with np.errstate(over="ignore"):
        s = 1.0 / (1.0 + np.exp(-k * gap))
    with np.errstate(divide="ignore", invalid="ignore"):
        y = a * s + b
        inverse = 1.0 / y
        value = np.log(y)
    slope = a * s * (1.0 - s) * inverse             # d log y / d (k (x - x0))
    rows = np.empty((4,) + value.shape)             # built as (P, ..., n), returned as a view
    rows[0] = s * inverse
    rows[1] = -k * slope
    rows[2] = gap * slope
    rows[3] = inverse
    return value, np.moveaxis(rows, 0, -1)


def _data_grid(X, y):
    x = X["x"]
    return {"x0": tuple(np.quantile(x, [0.0, 0.5, 1.0]) + np.array([-0.5, 0.0, 0.5]))}


SIGMOID = register_law(Law(
    name="sigmoid",
    inputs=("x",),
    params=(Param("a", -1.0, 0.0, (-0.75, -0.5, -0.25)),
            Param("x0", -np.inf, np.inf, (1.0,)),
            Param("k", 0.0, np.inf, (1.0, 3.0, 10.0)),
            Param("b", 0.0, 1.0, (0.75, 0.95))),
    formula="a / (1 + exp(-k (x - x0))) + b",
    function=_function, log_value_and_jacobian=_log_value_and_jacobian, data_grid=_data_grid,
    description="Accuracy as a sigmoid of a loss (Bhagia et al. 2024, step 2)."))
