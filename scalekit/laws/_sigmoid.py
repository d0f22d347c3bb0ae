"""Step-2 laws of the model ladder: from a loss to an accuracy.

Bhagia et al. (2024), "Establishing task scaling laws via compute-efficient model
ladders", step 2, as their repository (allenai/OLMo-ladder, ``src/scripts/step2.py`` and
``src/scaling/fitting_functions.py``) fits it:

- ``sigmoid``, ``y = a / (1 + exp(-k (x - x0))) + b``, for a task's bits-per-byte or the
  C4 loss: with ``a < 0`` accuracy falls from ``b`` (at zero loss) towards ``a + b``
  (chance) as the loss grows; ``k`` is the steepness and ``x0`` the midpoint. Bounds as
  theirs: ``a`` in [-1, 0], ``b`` in [0, 1], ``k >= 0``.
- ``log_sigmoid``, ``y = 1 - a log(1 + exp(k (x - x0)))``, for the task's cross-entropy
  (their ``--use_log_sigmoid``: ``1 - |a| log(1 - 1 / (1 + exp(-k (x - x0))))`` with the
  sign of ``a`` turned so that ``a >= 0``): accuracy tends to 1 at low loss and falls
  about linearly, with slope ``a k``, beyond ``x0``. Bounds as theirs: ``a, x0, k >= 0``.
"""

from __future__ import annotations

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._registry import register_law


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


def _log_sigmoid(X, theta):
    theta = np.asarray(theta, dtype=float)
    a, x0, k = (theta[..., j:j + 1] for j in range(3))
    return 1.0 - a * np.logaddexp(0.0, k * (X["x"] - x0))


def _log_sigmoid_log_value_and_jacobian(X, z):
    z = np.asarray(z, dtype=float)                  # no log parameters: z is theta
    a, x0, k = (z[..., j:j + 1] for j in range(3))
    gap = X["x"] - x0
    u = k * gap
    softplus = np.logaddexp(0.0, u)
    s = np.exp(u - softplus)                        # the logistic sigmoid, from the softplus
    y = 1.0 - a * softplus
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = 1.0 / y
        value = np.log(y)
    rows = np.empty((3,) + value.shape)             # built as (P, ..., n), returned as a view
    rows[0] = -softplus * inverse
    rows[1] = a * k * s * inverse
    rows[2] = -a * gap * s * inverse
    return value, np.moveaxis(rows, 0, -1)


def _log_sigmoid_grid(X, y):
    x = X["x"]
    return {"x0": tuple(np.quantile(x, [0.0, 0.5, 1.0]))}


LOG_SIGMOID = register_law(Law(
    name="log_sigmoid",
    inputs=("x",),
    params=(Param("a", 0.0, np.inf, (0.05, 0.2, 0.5)),
            Param("x0", 0.0, np.inf, (1.0,)),
            Param("k", 0.0, np.inf, (1.0, 3.0, 10.0))),
    formula="1 - a log(1 + exp(k (x - x0)))",
    function=_log_sigmoid, log_value_and_jacobian=_log_sigmoid_log_value_and_jacobian,
    data_grid=_log_sigmoid_grid,
    description="Accuracy as a log-sigmoid of the task cross-entropy (Bhagia et al. 2024, "
                "step 2 for task CE)."))
