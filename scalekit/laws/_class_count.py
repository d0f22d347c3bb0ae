"""Classification error against the number of classes: ``eps(K) = min(c K^gamma, 1 - 1/K)``.

Nadgir, Balasubramanian and Chaudhari, "How does chain of thought decompose
complex tasks?": the error of one prediction step grows as a power of the number
of answers it chooses among, until it reaches chance, ``1 - 1/K``. The planner
in :mod:`scalekit.planners._cot` composes such steps into a tree.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._registry import register_law


def chance_error(classes) -> np.ndarray:
    """Error of a uniform guess among ``classes`` answers, ``1 - 1/K``."""
    return 1.0 - 1.0 / np.asarray(classes, dtype=float)


def class_count_error(classes, c: float, gamma: float) -> np.ndarray:
    """``min(c K^gamma, 1 - 1/K)`` for an array of class counts ``K``."""
    classes = np.asarray(classes, dtype=float)
    return np.minimum(c * classes ** gamma, chance_error(classes))


def _function(X, theta):
    theta = np.asarray(theta, dtype=float)
    K = X["classes"]
    return np.minimum(theta[..., 0:1] * K ** theta[..., 1:2], chance_error(K))


def _log_function(X, z):
    z = np.asarray(z, dtype=float)
    log_K = np.log(X["classes"])
    power = z[..., 0:1] + z[..., 1:2] * log_K
    return np.minimum(power, np.log(chance_error(X["classes"])))


def _log_jacobian(X, z):
    z = np.asarray(z, dtype=float)
    log_K = np.log(X["classes"])
    below_chance = (z[..., 0:1] + z[..., 1:2] * log_K) < np.log(chance_error(X["classes"]))
    active = below_chance.astype(float)
    return np.stack([active, active * log_K], axis=-1)


def _derive(values: Mapping[str, float]) -> dict:
    """Class count where the power law reaches chance (the error saturates there)."""
    c, gamma = float(values["c"]), float(values["gamma"])

    def above_chance(log_k: float) -> bool:
        return np.log(c) + gamma * log_k >= np.log(chance_error(np.exp(log_k)))

    low, high = np.log(2.0), np.log(2.0)
    if above_chance(low):
        return {"saturation_classes": 2.0}
    while not above_chance(high):
        if high > 700.0:
            return {"saturation_classes": None}
        low, high = high, 2.0 * high
    for _ in range(100):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if above_chance(middle) else (middle, high)
    return {"saturation_classes": float(np.exp(high))}


CLASS_COUNT = register_law(Law(
    name="class_count",
    inputs=("classes",),
    params=(Param("c", 0.0, np.inf, (-8.0, -5.0, -3.0, -1.0), log=True),
            Param("gamma", -2.0, 5.0, (0.1, 0.5, 1.0, 2.0))),
    formula="min(c K^gamma, 1 - 1/K)",
    function=_function, log_function=_log_function, log_jacobian=_log_jacobian,
    derive=_derive,
    description=("Error of one step choosing among K classes, capped at chance "
                 "(Nadgir, Balasubramanian & Chaudhari, chain-of-thought decomposition).")))
