"""Error against the number of inference-time samples: ``E + A k^-a + B (1 - k^-b)``.

Halder and Pehlevan, "Demystifying LLM-as-a-judge: an analytically tractable
model for inference-time scaling": when k samples are drawn and one is chosen by
a judge, the error first falls with k; with the judge's reward close to the
teacher it keeps falling (best-of-k with the teacher as reward falls as 1/k^2),
while a misspecified reward gives a finite optimal k beyond which more samples
hurt. The family covers both: ``B = 0`` is monotone decay towards ``E``; with
``B > 0`` and ``a > b`` the curve is U-shaped with its minimum at
``k* = (a A / (b B))^(1 / (a - b))`` and rises towards ``E + B``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law


def _function(X, theta):
    theta = np.asarray(theta, dtype=float)
    k = X["k"]
    E, A, a, B, b = (theta[..., j:j + 1] for j in range(5))
    return E + A * k ** -a + B * (1.0 - k ** -b)


def _terms(X, z):
    z = np.asarray(z, dtype=float)
    log_k = np.log(X["k"])
    e, log_a_scale, a, log_b_scale, b = (z[..., j:j + 1] for j in range(5))
    with np.errstate(divide="ignore"):
        rising = log_b_scale + np.log(-np.expm1(-b * log_k))
    return logsumexp_terms(e, log_a_scale - a * log_k, rising)


def _log_function(X, z):
    return _terms(X, z)[0]


def _log_jacobian(X, z):
    z = np.asarray(z, dtype=float)
    log_k = np.log(X["k"])
    _, (w_e, w_a, w_b) = _terms(X, z)
    b = z[..., 4:5]
    with np.errstate(divide="ignore", invalid="ignore"):
        d_rise = np.where(log_k > 0, log_k / np.expm1(b * log_k), 0.0)
    return np.stack([w_e, w_a, -w_a * log_k, w_b, w_b * d_rise], axis=-1)


def optimal_k(values: Mapping[str, float]) -> dict:
    """The k of least error under the law, and the shape of the curve.

    Returns ``k_opt`` (``None`` when the error keeps falling as k grows),
    ``error_at_opt`` and ``shape`` (``"monotone"`` or ``"U-shaped"``).
    """
    E, A, a, B, b = (float(values[name]) for name in ("E", "A", "a", "B", "b"))
    if B > 0 and a > b:
        with np.errstate(over="ignore", divide="ignore"):  # from logs: no OverflowError
            k_star = max(1.0, float(np.exp((np.log(a * A) - np.log(b * B)) / (a - b))))
        error = E + A * k_star ** -a + B * (1.0 - k_star ** -b)
        return {"k_opt": k_star, "error_at_opt": error, "shape": "U-shaped"}
    if B > A:  # rises overall: no sample beyond the first helps
        return {"k_opt": 1.0, "error_at_opt": E + A, "shape": "monotone"}
    return {"k_opt": None, "error_at_opt": E + B, "shape": "monotone"}


INFERENCE_K = register_law(Law(
    name="inference_k",
    inputs=("k",),
    params=(Param("E", 0.0, np.inf, (-6.0, -3.0, -1.0), log=True),
            Param("A", 0.0, np.inf, (-4.0, -2.0, 0.0), log=True),
            Param("a", 0.0, 10.0, (0.5, 1.0, 2.0)),
            Param("B", 0.0, np.inf, (-12.0, -4.0, -2.0), log=True),
            Param("b", 0.0, 10.0, (0.1, 0.5, 1.0))),
    formula="E + A k^-a + B (1 - k^-b)",
    function=_function, log_function=_log_function, log_jacobian=_log_jacobian,
    derive=optimal_k,
    description=("Error after choosing among k inference-time samples: monotone or U-shaped "
                 "(Halder & Pehlevan, LLM-as-a-judge).")))
