"""The multi-power law of a loss curve under a learning-rate schedule.

Luo et al. (2025), "A multi-power law for loss curve prediction across learning
rate schedules" (ICLR 2025), eq. (5)–(6):

    L(t) = L0 + A S1(t)^-alpha - LD(t),      S1(t) = sum_{tau <= t} eta_tau,
    LD(t) = B sum_{k=1..t} (eta_{k-1} - eta_k) G(eta_k^-gamma S_k(t)),
    S_k(t) = sum_{k <= tau <= t} eta_tau,    G(x) = 1 - (C x + 1)^-beta,

with ``eta`` the rate of every step from 0 (the warm-up included, as in the
authors' fits; the warm-up's area plays the part of their ``S_W``).

Evaluation. Written out, LD at every step of a T-step run is a double sum, O(T²).
Only the steps where the rate changes contribute (``eta_{k-1} != eta_k``: K of
them, the warm-up and the decays), and with the prefix sums ``P_t = S1(t)`` the
inner area is a difference, ``S_k(t) = P_t - P_{k-1}``, so LD at M requested
steps costs O(M K) arithmetic on precomputed arrays (with O(T) for the prefix
sums): a fit reads only the logged steps. The term ``G`` is not separable in
``k`` and ``t`` (each ``k`` has its own scale ``C eta_k^-gamma``), so there is no
exact first-order recurrence over ``t``; the prefix-sum form is exact, and
agrees with the literal double sum to rounding (``bench/bench_multipower.py``).

Parameters (fitting space): ``L0`` as it is; ``A``, ``alpha``, ``B``, ``C``,
``beta``, ``gamma`` as logarithms (all positive). The Jacobian is analytic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scalekit.laws.base import Law, Param

PARAMS = ("L0", "A", "alpha", "B", "C", "beta", "gamma")
#: Elements of one block of the (steps x changes) arrays.
_BLOCK = 1 << 21


class ScheduleTerms:
    """The schedule-only arrays of the law at requested steps of one schedule.

    Parameters
    ----------
    rates : 1-d array
        The rate of every step from 0 (covering the largest requested step).
    steps : 1-d int array
        The steps at which the law is evaluated.
    stride : int
        1: the exact law. Larger: the rate's changes are taken every ``stride``
        steps only (a coarse approximation, for a fit's first stage).
    """

    def __init__(self, rates, steps, stride: int = 1):
        rates = np.asarray(rates, dtype=float)
        steps = np.asarray(steps, dtype=np.int64)
        prefix = np.cumsum(rates)
        self.s1 = prefix[steps]
        if stride == 1:
            change = np.flatnonzero(np.diff(rates)) + 1      # k >= 1 with eta_{k-1} != eta_k
            before = change - 1
        else:                                                # every stride-th step: approximate
            change = np.arange(stride, rates.size, stride)
            before = change - stride
            kept = rates[before] != rates[change]
            change, before = change[kept], before[kept]
        self.drop = rates[before] - rates[change]            # eta_{k-1} - eta_k
        self.log_rate = np.log(np.maximum(rates[change], 1e-30))   # a rate of 0: G = 1
        self.slope_drop = self.drop * (-self.log_rate)       # for dQ/dlog gamma (times gamma)
        area = prefix[steps][:, None] - prefix[change - 1][None, :]
        self.area = np.where(change[None, :] <= steps[:, None], area, 0.0)  # S_k(t), 0 if k > t
        self._steps, self._change = steps, change

    def blocks(self):
        """Row blocks of the area array and the changes each needs (those up to its last
        step: the rest are zeros), each block of bounded size."""
        rows = max(1, _BLOCK // max(1, self.area.shape[1]))
        order = np.argsort(self._steps, kind="stable")
        for start in range(0, order.size, rows):
            block = order[start:start + rows]
            if np.all(np.diff(block) == 1):
                block = slice(int(block[0]), int(block[-1]) + 1)
            last = int(np.searchsorted(self._change, self._steps[block].max(), side="right"))
            yield block, slice(0, last)


def loss_drop_sums(terms: ScheduleTerms, C: float, beta: float, gamma: float,
                   derivatives: bool = False):
    """``Q = sum_k (eta_{k-1} - eta_k) G(eta_k^-gamma S_k(t))`` at the steps (LD = B Q).

    With ``derivatives``, also ``dQ/dlog C``, ``dQ/dlog beta``, ``dQ/dlog gamma``.
    """
    n = terms.area.shape[0]
    out = np.zeros((4 if derivatives else 1, n))
    scale = C * np.exp(-gamma * terms.log_rate)              # C eta_k^-gamma
    for rows, cols in terms.blocks():
        drop = terms.drop[cols]
        x = terms.area[rows, cols] * scale[cols]             # 0 where k > t
        lu = np.log1p(x)
        power = np.exp(-beta * lu)                           # (1 + x)^-beta
        out[0, rows] = drop.sum() - power @ drop             # sum (1 - power) drop; 0 if k > t
        if derivatives:
            lu *= power
            out[2, rows] = beta * (lu @ drop)               # dQ/dlog beta
            power *= x
            power /= 1.0 + x                                 # dG/dlog C = beta * this
            out[1, rows] = beta * (power @ drop)
            out[3, rows] = beta * gamma * (power @ terms.slope_drop[cols])
    return out if derivatives else out[0]


def multipower_value_and_jacobian(terms: ScheduleTerms, theta, *, jacobian: bool = True):
    """The law (natural ``theta``, 7 values) at the steps and d(law)/d(fitting space)."""
    L0, A, alpha, B, C, beta, gamma = (float(v) for v in theta)
    q = loss_drop_sums(terms, C, beta, gamma, derivatives=jacobian)
    power = A * terms.s1 ** -alpha
    if not jacobian:
        return L0 + power - B * q
    value = L0 + power - B * q[0]
    J = np.stack([np.ones_like(value), power, -alpha * np.log(terms.s1) * power, -B * q[0],
                  -B * q[1], -B * q[2], -B * q[3]], axis=-1)
    return value, J


def multipower_law(schedules: Sequence, *, stride: int = 1) -> Law:
    """The multi-power law for runs with these schedules (rate arrays, or objects with
    ``rates``); its inputs are ``curve`` (the index of a run's schedule) and ``step``.
    ``stride`` > 1 gives the coarse approximation of :class:`ScheduleTerms`.

    The schedule-only arrays of the points last evaluated are kept, so a fit pays
    for them once.
    """
    rates = [np.asarray(getattr(s, "rates", s), dtype=float) for s in schedules]
    cache: dict = {}

    def terms_of(X):
        curve = np.asarray(X["curve"]).astype(np.int64)
        step = np.asarray(X["step"]).astype(np.int64)
        key = (curve.tobytes(), step.tobytes())
        if key not in cache:
            cache.clear()
            parts = []
            for index in np.unique(curve):
                where = np.flatnonzero(curve == index)
                steps = step[where]
                run = rates[index]
                if steps.max() >= run.size:  # a point logged after the last update
                    run = np.append(run, np.full(steps.max() + 1 - run.size, run[-1]))
                parts.append((where, ScheduleTerms(run, steps, stride)))
            cache[key] = parts
        return cache[key], len(step)

    def value_and_jacobian(X, z):
        z = np.asarray(z, dtype=float)
        flat = z.reshape(-1, z.shape[-1])
        parts, n = terms_of(X)
        values = np.empty((flat.shape[0], n))
        J = np.empty((flat.shape[0], n, 7))
        for row, zz in enumerate(flat):
            theta = np.r_[zz[0], np.exp(zz[1:])]
            for where, terms in parts:
                v, j = multipower_value_and_jacobian(terms, theta)
                values[row, where], J[row, where] = v, j
        with np.errstate(divide="ignore", invalid="ignore"):
            log_values = np.log(values)
            J = J / values[..., None]
        return (log_values.reshape(*z.shape[:-1], n), J.reshape(*z.shape[:-1], n, 7))

    def function(X, theta):
        theta = np.asarray(theta, dtype=float)
        flat = theta.reshape(-1, 7)
        parts, n = terms_of(X)
        values = np.empty((flat.shape[0], n))
        for row, th in enumerate(flat):
            for where, terms in parts:
                values[row, where] = multipower_value_and_jacobian(terms, th, jacobian=False)
        return values.reshape(*theta.shape[:-1], n)

    def log_function(X, z):
        z = np.asarray(z, dtype=float)
        theta = np.concatenate([z[..., :1], np.exp(z[..., 1:])], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(function(X, theta))

    return Law(
        name="multipower", inputs=("curve", "step"),
        params=(Param("L0", 0.0, np.inf), Param("A", 0.0, np.inf, log=True),
                Param("alpha", 0.0, 5.0, log=True), Param("B", 0.0, np.inf, log=True),
                Param("C", 0.0, np.inf, log=True), Param("beta", 0.0, 10.0, log=True),
                Param("gamma", 0.0, 5.0, log=True)),
        formula="L0 + A*S1(t)^-alpha - B*sum_k (eta_{k-1}-eta_k)*(1-(C*eta_k^-gamma*S_k(t)+1)"
                "^-beta)",
        function=function, log_function=log_function,
        log_value_and_jacobian=value_and_jacobian,
        description="Multi-power law of a loss curve under a learning-rate schedule (Luo et al. "
                    "2025).")


def loss_drop_direct(rates, steps, C: float, beta: float, gamma: float) -> np.ndarray:
    """``Q`` at each step by the literal double sum, O(T) per step: the reference."""
    rates = np.asarray(rates, dtype=float)
    out = []
    for t in np.asarray(steps, dtype=np.int64):
        k = np.arange(1, t + 1)
        area = np.cumsum(rates[1:t + 1][::-1])[::-1]                # S_k(t), k = 1..t
        with np.errstate(divide="ignore"):
            x = C * rates[k] ** -gamma * area
        out.append(np.sum((rates[k - 1] - rates[k]) * (1.0 - (x + 1.0) ** -beta)))
    return np.asarray(out)
