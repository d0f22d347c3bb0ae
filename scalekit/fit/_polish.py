"""Polish a few candidate optima to full precision with scipy's L-BFGS-B.

The Huber objective on log residuals is tiny (about 1e-3 on the Chinchilla
points) and so are its gradients; L-BFGS-B's default stopping rules, which are
relative to ``max(|f|, 1)``, would then stop at once. The objective is therefore
divided by its value at the candidate (so it is about 1), and the tolerances are
tight (``ftol = 1e-15``, ``gtol = 1e-12``), with the analytic gradient
``J^T psi(r)``. With a ``prior`` (mean, precision) the objective gains the quadratic
penalty ``(z - mean)^T precision (z - mean) / 2`` (a normal prior: the optimum is the
posterior mode when the precision is in the objective's units).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalekit.fit._objective import log_residuals, log_value_and_jacobian
from scalekit.fit._robust import psi, rho
from scalekit.laws import Law


@dataclass(frozen=True)
class Polished:
    """One polished candidate: fitting-space ``z``, its objective, scipy's verdict."""

    z: np.ndarray
    objective: float
    success: bool
    message: str


def polish(law: Law, X, log_y: np.ndarray, z0: np.ndarray, *, loss: str, delta: float,
           weights: np.ndarray | None = None, prior=None) -> Polished:
    """Minimise the objective (plus the ``prior``'s penalty, see the module docstring) from
    ``z0`` with L-BFGS-B; never return a worse point."""
    weights = np.ones(len(log_y)) if weights is None else weights
    mean, precision = (None, None) if prior is None else prior
    lower, upper = law.fitting_bounds()
    bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
              for lo, hi in zip(lower, upper, strict=True)]
    z0 = np.clip(np.asarray(z0, dtype=float), lower, upper)

    def penalty(z):
        if prior is None:
            return 0.0, 0.0
        step = precision @ (z - mean)
        return 0.5 * float((z - mean) @ step), step

    def value(z):
        return float((rho(log_residuals(law, X, log_y, z), loss, delta) * weights).sum()
                     + penalty(z)[0])

    f0 = value(z0)
    scale = f0 if np.isfinite(f0) and f0 > 0 else 1.0

    def value_and_gradient(z):                 # one evaluation of the law for both
        log_value, J = log_value_and_jacobian(law, X, z)
        r = log_value - log_y
        extra, step = penalty(z)
        f = float((rho(r, loss, delta) * weights).sum()) + extra
        if not np.isfinite(f):
            return np.inf, np.zeros_like(z)
        g = (psi(r, loss, delta) * weights) @ J + step
        return f / scale, g / scale

    from scipy.optimize import minimize

    result = minimize(value_and_gradient, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000,
                               "maxfun": 50_000})
    f1 = value(result.x)
    message = str(result.message)
    if f1 <= f0:
        return Polished(np.asarray(result.x, dtype=float), f1, bool(result.success), message)
    return Polished(z0, f0, bool(result.success), message)
