"""The non-increasing schedule with the least predicted final loss under a multi-power law.

Luo et al. (2025) optimise a free rate per step under their fitted law. Here the rates after
the warm-up are ``eta_t = peak * exp(-(e_warmup + … + e_t))`` with every ``e_t >= 0``: a
non-increasing positive schedule that starts at most at the peak, under box constraints
only, so L-BFGS-B optimises it. The log-decrement ``e_t`` is constant within each of
:data:`BLOCKS` equal blocks of steps: the rate changes at every step, but no faster than
its block allows. The law rewards abrupt drops (a drop taken in one step is weighted
whole by the kernel at the lower rate), so with a variable per step the optimum tends
to cliffs, and L-BFGS-B's bounded iterations are slow at 20,000 variables; the blocks
are a resolution chosen on purpose (docs/schedules.md). The
objective is the law at the last step ``T``, a single
sum over the steps (O(T)), and so is its gradient:

    L(T) = L0 + A S1^-alpha - B Q,  Q = sum_k (eta_{k-1} - eta_k) G_k,
    G_k = 1 - (1 + x_k)^-beta,  x_k = C eta_k^-gamma S_k,  S_k = sum_{k <= tau <= T} eta_tau,

    dQ/d eta_tau = G_{tau+1} - G_tau - gamma drop_tau g_tau x_tau / eta_tau
                   + sum_{k <= tau} drop_k g_k C eta_k^-gamma,    g = dG/dx,

and the ``e`` gradient is a suffix sum of ``-eta_t dL/d eta_t``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

#: Cumulative log decay beyond which a rate counts as 0 (peak * e^-600).
_FLOOR = 600.0
#: Equal blocks of steps after the warm-up, each with one log-decrement per step.
BLOCKS = 400


def final_loss_and_gradient(theta, rates):
    """The law (natural ``theta``) at step ``T = len(rates)`` (the last rate repeats at
    ``T``, as :meth:`Schedule.rates_through` does) and its gradient in ``rates``."""
    L0, A, alpha, B, C, beta, gamma = (float(v) for v in theta)
    eta = np.append(rates, rates[-1])
    s1 = eta.sum()
    area = np.cumsum(eta[::-1])[::-1][1:]                  # S_k, k = 1 … T
    k_eta = eta[1:]
    drop = eta[:-1] - k_eta
    # x in logs, capped where G is 1 to double precision: a rate near the floor makes
    # eta^-gamma overflow, and g x would be 0 * inf
    x = np.exp(np.minimum(np.log(C) - gamma * np.log(k_eta) + np.log(area), 700.0))
    G = -np.expm1(-beta * np.log1p(x))
    g = beta * np.exp(-(beta + 1) * np.log1p(x))
    gx = g * x
    q = float(drop @ G)
    dq = np.zeros(eta.size)                                # d Q / d eta_tau, tau = 0 … T
    dq[:-1] += G                                           # eta_tau in drop_{tau+1}
    dq[1:] -= G                                            # and in drop_tau
    dq[1:] -= gamma * drop * gx / k_eta                    # through c_tau
    dq[1:] += np.cumsum(drop * gx / area)                  # through S_k (g c = g x / S_k)
    d_eta = -alpha * A * s1 ** (-alpha - 1) - B * dq
    grad = d_eta[:-1].copy()
    grad[-1] += d_eta[-1]
    return L0 + A * s1 ** -alpha - B * q, grad


def optimise_free_schedule(theta, start, *, warmup: int, peak: float):
    """The non-increasing rates after ``warmup`` (at most ``peak``) with the least final loss,
    from the rates ``start`` (a full schedule, non-increasing after the warm-up; its
    log-decrements are averaged over each block); returns the rates and the optimiser's
    result."""
    start = np.asarray(start, dtype=float)
    head = start[:warmup]
    n = start.size - warmup
    step_block = np.arange(n) * min(BLOCKS, n) // n                # the block of each step
    width = np.bincount(step_block)
    tail = np.maximum(start[warmup:], peak * np.exp(-_FLOOR))
    per_step = np.maximum(-np.diff(np.log(np.r_[peak, tail])), 0.0)
    e0 = np.bincount(step_block, per_step) / width

    def rates_of(e):
        return np.r_[head, peak * np.exp(-np.minimum(np.cumsum(e[step_block]), _FLOOR))]

    def objective(e):
        rates = rates_of(e)
        value, grad = final_loss_and_gradient(theta, rates)
        tail_grad = -grad[warmup:] * rates[warmup:]               # d L / d log eta_t
        tail_grad[np.cumsum(e[step_block]) > _FLOOR] = 0.0     # at the floor eta is constant
        per_step = np.cumsum(tail_grad[::-1])[::-1]              # d L / d e_s, s >= warmup
        return value, np.bincount(step_block, per_step, minlength=e.size)

    result = minimize(objective, e0, jac=True, method="L-BFGS-B",
                      bounds=[(0.0, None)] * e0.size,
                      options={"maxiter": 5000, "ftol": 1e-10, "gtol": 1e-10})
    return rates_of(result.x), result
