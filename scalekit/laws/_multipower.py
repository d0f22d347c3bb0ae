"""The multi-power law of a loss curve under a learning-rate schedule.

Luo et al. (2025), "A multi-power law for loss curve prediction across learning
rate schedules" (ICLR 2025), eq. (5)–(6):

    L(t) = L0 + A S1(t)^-alpha - LD(t),      S1(t) = sum_{tau <= t} eta_tau,
    LD(t) = B sum_{k=1..t} (eta_{k-1} - eta_k) G(eta_k^-gamma S_k(t)),
    S_k(t) = sum_{k <= tau <= t} eta_tau,    G(x) = 1 - (C x + 1)^-beta,

with ``eta`` the rate of every step from 0 (the warm-up included, as in the
authors' fits; the warm-up's area plays the part of their ``S_W``).

Evaluation in O((T + M) Q). Written out, LD at every step is a double sum, O(T²).
Only the K steps where the rate changes contribute, and with the prefix sums
``P`` of the rates ``S_k(t) = P_t - P_{k-1}``. The kernel separates in ``k`` and
``t`` through the standard Gamma-integral (Laplace) representation: with
``c_k = C eta_k^-gamma`` and ``a = 1/c_k + S_k(t)``,

    (1 + c_k S_k(t))^-beta = c_k^-beta a^-beta,
    a^-beta = 1/Gamma(beta) * integral over x of exp(beta x - e^x a) dx,

and ``exp(-e^x a) = exp(-e^x / c_k) exp(-e^x P_t) exp(e^x P_{k-1})``. In ``x`` the
integrand is analytic in the strip ``|Im x| < pi/2``, so the trapezoid rule on the
lattice ``x = j h`` converges geometrically (error ~ (cos w)^-beta exp(-2 pi w / h)
for a strip of half-width w; ``h`` is set from that bound for about 1e-13). The
lattice sum is taken whole:

- nodes with ``e^x a`` above ``40 + 5 beta`` for every pair add below 1e-17 and are
  left out;
- the infinitely many nodes left of ``U0 = e^{j0 h}`` (where ``U0 a <= 0.05``) are
  summed in closed form: expanding ``exp(-e^x a)`` in powers of ``e^x a``, each
  power of ``a = (1/c_k - P_{k-1}) + P_t`` is a polynomial in ``P_t`` whose
  coefficients are prefix sums over the sources, and the sum over the lattice of
  each term is a geometric series (:data:`_SERIES` terms);
- for each node between, the sum over the sources obeys a recurrence between
  consecutive requested steps, ``R(t_m) = exp(-e^x (P_{t_m} - P_{t_{m-1}})) R(t_{m-1})
  + (the sources in (t_{m-1}, t_m])``, in which every factor is at most 1.

So the cost is O(K Q) for the sources and O(M Q) for the steps, Q ~ 60–90 nodes,
instead of O(M K); the Jacobian in (C, beta, gamma) is the same recurrence on
derivative weights. It agrees with the literal double sum to 1e-10 relative (3e-11
at worst measured; where ``Q`` is ~1e-14 in the first warm-up steps, to the rounding
of the drops it adds) (``tests/laws/test_multipower.py``, ``bench/bench_multipower.py``). A source whose
rate is 0 has ``c_k = inf``: its ``G`` is 1 once the area after it is positive, else 0.

Parameters (fitting space): ``L0`` as it is; ``A``, ``alpha``, ``B``, ``C``,
``beta``, ``gamma`` as logarithms (all positive). The Jacobian is analytic.
"""

from __future__ import annotations

from collections.abc import Sequence

import math

import numpy as np

from scalekit.laws._base import Law, Param

PARAMS = ("L0", "A", "alpha", "B", "C", "beta", "gamma")
#: Half-width of the strip of analyticity used to set the lattice step, and the error aimed at.
_STRIP, _TOL = 1.2, 1e-13
#: Left of the explicit nodes ``e^x a <= _LEFT`` for every pair; the series there has
#: ``_SERIES + 1`` terms (remainder below (2 * 0.05)^11 / 11! ~ 3e-19).
_LEFT, _SERIES = 0.05, 10
_N = np.arange(_SERIES + 1)
_BINOMIAL = np.array([[math.comb(n, i) for n in _N] for i in _N], dtype=float)  # [i, n] = C(n, i)


class ScheduleTerms:
    """The schedule-only arrays of the law at requested steps of one schedule.

    Parameters
    ----------
    rates : 1-d array
        The rate of every step from 0 (covering the largest requested step).
    steps : 1-d int array
        The steps at which the law is evaluated (any order, repeats allowed).
    """

    def __init__(self, rates, steps):
        rates = np.asarray(rates, dtype=float)
        steps = np.asarray(steps, dtype=np.int64)
        self.t, self.inverse = np.unique(steps, return_inverse=True)
        prefix = np.cumsum(rates)
        self.s1 = prefix[steps]
        self.p_t = prefix[self.t]
        self.gap = np.diff(self.p_t, prepend=0.0)              # P_{t_m} - P_{t_{m-1}}
        change = np.flatnonzero(np.diff(rates[:self.t.max(initial=0) + 1])) + 1  # eta_{k-1} != eta_k
        drop = rates[change - 1] - rates[change]
        segment = np.searchsorted(self.t, change)              # the first step >= k
        self.total_drop = np.cumsum(np.bincount(segment, drop, minlength=self.t.size))
        zero = rates[change] == 0                              # c_k = inf: G = [area > 0]
        flat = np.searchsorted(prefix, self.p_t)               # the first i with P_i = P_t
        zero_cum = np.r_[0.0, np.cumsum(drop[zero])]           # area 0 for k > flat
        self.flat_drop = (zero_cum[np.searchsorted(change[zero], self.t, side="right")]
                          - zero_cum[np.searchsorted(change[zero], flat, side="right")])
        keep = ~zero
        self.drop = drop[keep]
        self.log_rate = np.log(rates[change[keep]])
        self.p_before = prefix[change[keep] - 1]
        self.segment = segment[keep]
        self.area_first = self.p_t[self.segment] - self.p_before   # S_k at its first step


def _lattice(beta: float, a_low: float, a_high: float):
    """Step and node indices (j0 … j1) of the lattice for ``a`` in [a_low, a_high]."""
    h = 2 * np.pi * _STRIP / (np.log(2 / _TOL) - beta * np.log(np.cos(_STRIP)))
    j0 = int(np.floor(np.log(_LEFT / a_high) / h))
    j1 = max(j0, int(np.ceil(np.log((40.0 + 5.0 * beta) / a_low) / h)))
    return h, j0, j1


def loss_drop_sums(terms: ScheduleTerms, C: float, beta: float, gamma: float,
                   derivatives: bool = False):
    """``Q = sum_k (eta_{k-1} - eta_k) G(eta_k^-gamma S_k(t))`` at the steps (LD = B Q).

    With ``derivatives``, also ``dQ/dlog C``, ``dQ/dlog beta``, ``dQ/dlog gamma``
    (rows 1–3).
    """
    M, K = terms.t.size, terms.drop.size
    rows = 4 if derivatives else 1
    S = np.zeros((rows, M))            # the kernel sum and its derivatives (ln C, beta, ln gamma)
    if K:
        # beyond e^+-700, G is 0 or 1 to double precision; the clip keeps 1/c_k finite
        log_c = np.clip(np.log(C) - gamma * terms.log_rate, -700.0, 700.0)
        inv_c = np.exp(-log_c)
        h, j0, j1 = _lattice(beta, float((inv_c + terms.area_first).min()),
                             float(inv_c.max() + terms.p_t[-1]))
        x = h * np.arange(j0, j1 + 1)
        u = np.exp(x)
        weights = [np.ones(K), inv_c, terms.log_rate, terms.log_rate * inv_c][:rows]
        segments = _segment_matrix(terms, weights)
        explicit = _explicit(terms, segments, beta, log_c, inv_c, u, x)   # (rows, M, Q)
        left = _left(terms, segments, beta, h, j0 * h, log_c, inv_c, C, gamma)  # rows x (M,)
        S[0] = explicit[0].sum(axis=1) + left[0]
        if derivatives:
            S[1] = explicit[1] @ u - beta * explicit[0].sum(axis=1) + left[1]
            S[3] = -gamma * (explicit[3] @ u - beta * explicit[2].sum(axis=1) + left[3])
            S[2] = (explicit[0] @ x - np.log(C) * explicit[0].sum(axis=1)
                    + gamma * explicit[2].sum(axis=1) + left[2])
        S *= h * np.exp(-math.lgamma(beta))
        if derivatives:
            from scipy.special import digamma  # scipy.special is loaded only when fitting

            S[2] = beta * (S[2] - digamma(beta) * S[0])
    out = -S
    out[0] += terms.total_drop - terms.flat_drop
    out = out[:, terms.inverse]
    return out if derivatives else out[0]


def _segment_matrix(terms, weights):
    """Sparse (len(weights) M x K): row ``r M + m`` sums the sources of segment ``m`` (those
    in ``(t_{m-1}, t_m]``) times ``drop_k`` and the ``r``-th weight."""
    from scipy import sparse  # loaded on first use: the laws face stays light

    M, K = terms.t.size, terms.drop.size
    rows = len(weights)
    data = np.concatenate([terms.drop * w for w in weights])
    index = (terms.segment[None, :] + M * np.arange(rows)[:, None]).ravel()
    return sparse.csr_matrix((data, (index, np.tile(np.arange(K), rows))), shape=(rows * M, K))


def _explicit(terms, segments, beta, log_c, inv_c, u, x):
    """The lattice sums over the explicit nodes at each step, for each weighting of the
    sources (``segments`` holds ``drop_k w_k``):
    ``sum_{k <= t} drop_k w_k (u/c_k)^beta exp(-u (1/c_k + S_k(t)))``.

    ``(u/c_k)^beta`` stays inside the exponent: apart, ``c_k^-beta`` overflows for a tiny
    ``c_k`` whose ``exp(-u/c_k)`` is 0 (inf times 0)."""
    M = terms.t.size
    E = beta * np.subtract.outer(-log_c, -x) - np.multiply.outer(inv_c + terms.area_first, u)
    np.exp(E, out=E)
    fresh = (segments @ E).reshape(-1, M, u.size)            # the sources of each segment
    decay = np.exp(-np.multiply.outer(terms.gap, u))
    for m in range(1, M):
        fresh[:, m] += decay[m] * fresh[:, m - 1]
    return fresh


def _left(terms, segments, beta, h, log_u0, log_c, inv_c, C, gamma):
    """The lattice sums over the nodes left of ``U0 = e^{log_u0}`` in closed form, at each
    step: rows as in :func:`loss_drop_sums` before scaling (value; d/dln C; d/dbeta;
    d/dln gamma without the factor -gamma)."""
    M = terms.t.size
    u0 = np.exp(log_u0)
    omega = np.exp(beta * (log_u0 - log_c))                  # (U0 / c_k)^beta
    v = u0 * (inv_c - terms.p_before)
    growth = np.expm1((beta + _N) * h)
    coef = (-1.0) ** _N / np.array([math.factorial(n) for n in _N], dtype=float) / growth
    # phi[m, i] = sum_{n >= i} coef_n C(n, i) y_m^(n - i), y = U0 P_t: the series in v
    shift = np.clip(_N[None, :] - _N[:, None], 0, None)
    ypow = (u0 * terms.p_t)[:, None, None] ** shift[None]   # (M, i, n)
    phi = (ypow * (_BINOMIAL * coef)[None]).sum(axis=2)
    # moments[r, m, i] = sum_{k <= t_m} drop_k w_r omega_k v_k^i
    moments = np.cumsum((segments @ (np.vander(v, _N.size, increasing=True) * omega[:, None]))
                        .reshape(-1, M, _N.size), axis=1)
    out = [(moments[0] * phi).sum(axis=1)]
    if len(moments) > 1:
        def by_log_c(r):                                     # d/dln c_k of omega v^i, weighted
            shifted = np.c_[np.zeros(M), moments[r + 1][:, :-1]] * (u0 * _N)
            return ((-beta * moments[r] - shifted) * phi).sum(axis=1)
        dcoef = coef * (-h * (growth + 1) / growth)
        dphi = (ypow * (_BINOMIAL * dcoef)[None]).sum(axis=2)
        d_beta = (((log_u0 - np.log(C)) * moments[0] + gamma * moments[2]) * phi
                  + moments[0] * dphi).sum(axis=1)
        out += [by_log_c(0), d_beta, by_log_c(2)]
    return out


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


def multipower_law(schedules: Sequence) -> Law:
    """The multi-power law for runs with these schedules (rate arrays, or objects with
    ``rates``); its inputs are ``curve`` (the index of a run's schedule) and ``step``.

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
                parts.append((where, ScheduleTerms(run, steps)))
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
    """``Q`` at each step by the literal double sum, O(t) per step: the reference (``G``
    through ``expm1``/``log1p``, so that a small ``G`` keeps its digits)."""
    rates = np.asarray(rates, dtype=float)
    out = []
    for t in np.asarray(steps, dtype=np.int64):
        k = np.arange(1, t + 1)
        area = np.cumsum(rates[1:t + 1][::-1])[::-1]                # S_k(t), k = 1..t
        with np.errstate(divide="ignore", invalid="ignore"):
            x = C * rates[k] ** -gamma * area
            G = np.where(rates[k] > 0, -np.expm1(-beta * np.log1p(x)), area > 0)
        out.append(np.sum((rates[k - 1] - rates[k]) * G))
    return np.asarray(out)
