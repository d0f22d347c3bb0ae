"""One learning curve shared by the runs of a sweep: ``L_r(x) = E_r + B x^-beta``.

Every run ``r`` shares the data term ``B x^-beta``; its level ``E_r`` is free, or
``E_r = E + A N_r^-alpha`` for runs of sizes ``N_r`` (the Chinchilla form of
Hoffmann et al. 2022, ``L = E + A/N^alpha + B/D^beta``). Inputs are ``lx``, the log
of ``x`` in a reference unit, and ``run``, the run's index (free levels), or
``ln_size``, the log of its size in a reference unit (tied levels). Every
parameter is positive and fitted as its logarithm; the law is evaluated as
``log L = logaddexp(log E_r, log B - beta lx)`` (:mod:`scalekit.laws._logsumexp`).
Used by :class:`scalekit.surrogates.JointSurrogate`; not registered (its
parameters depend on the runs).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms


def _positive(name: str) -> Param:
    return Param(name, 0.0, np.inf, (0.0,), log=True)


@cache
def shared_curve_law(n_runs: int | None) -> Law:
    """The law for ``n_runs`` runs with free levels, or (``None``) levels tied to size.

    Parameters: ``B``, ``beta``, then ``E_0 … E_{n_runs-1}`` or ``E``, ``A``, ``alpha``.
    """
    tied = n_runs is None
    levels = ("E", "A", "alpha") if tied else tuple(f"E_{r}" for r in range(n_runs))

    def parts(X, z):
        z = np.asarray(z, dtype=float)
        lx = X["lx"]
        beta = np.exp(z[..., 1:2])
        if tied:
            alpha = np.exp(z[..., 4:5])
            level, (w_e, w_a) = logsumexp_terms(z[..., 2:3], z[..., 3:4] - alpha * X["ln_size"])
            chain = (w_e, w_a, -w_a * alpha * X["ln_size"])
        else:
            level, chain = z[..., 2 + X["run"].astype(int)], None
        value, (w_level, w_power) = logsumexp_terms(level, z[..., 0:1] - beta * lx)
        return value, w_level, w_power, beta, chain

    def log_function(X, z):
        return parts(X, z)[0]

    def log_value_and_jacobian(X, z):
        value, w_level, w_power, beta, chain = parts(X, z)
        J = np.zeros(value.shape + (2 + len(levels),))
        J[..., 0] = w_power
        J[..., 1] = -w_power * beta * X["lx"]
        if tied:
            for k, slope in enumerate(chain):
                J[..., 2 + k] = w_level * slope
        else:
            J[..., np.arange(value.shape[-1]), 2 + X["run"].astype(int)] = w_level
        return value, J

    def function(X, theta):
        return np.exp(log_function(X, np.log(np.asarray(theta, dtype=float))))

    inputs = ("lx", "ln_size") if tied else ("lx", "run")
    formula = ("E + A*N^-alpha + B*x^-beta" if tied else "E_r + B*x^-beta")
    return Law(name="shared_curve", inputs=inputs,
               params=tuple(_positive(name) for name in ("B", "beta") + levels),
               formula=formula, function=function, log_function=log_function,
               log_value_and_jacobian=log_value_and_jacobian,
               description="One curve E_r + B x^-beta shared by the runs of a sweep.")
