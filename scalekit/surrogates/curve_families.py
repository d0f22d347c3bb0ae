"""Parametric learning-curve families and a batched least-squares fitter.

The eleven families of Domhan, Springenberg and Hutter (2015), "Speeding up
automatic hyperparameter optimization of deep neural networks by extrapolation
of learning curves" (IJCAI), Table 1, adapted from rising accuracies to falling
losses, plus the saturating power law of scaling-law work and the estimator M4
of Alabdulmohsin, Neyshabur and Zhai (2022), "Revisiting neural scaling laws in
language and vision" (NeurIPS): ``(L - Linf) / (L0 - L)^alpha = beta x^c``
(there c < 0; here written ``t^-c`` with c > 0, and ``L0 = Linf + D``), a power
law in the excess loss that bends over to the initial loss ``L0`` at small x.

Every family is written on normalised axes of one curve: ``t = x / x_last`` and
``tau = x / x_first`` (``x_first``, ``x_last``: first and last fitted point) and
on the loss divided by its last fitted value, so that one start grid serves
every curve. ``y0`` is the first normalised loss.

Adaptation to losses: families that rise to an asymptote in the paper (pow3,
pow4, MMF, exp4, Janoschek, Weibull, ilog2) keep their form with the sign of the
amplitude flipped, so they fall to the asymptote; vap and log-power already
fall for the right signs; Hill3, which rises from zero, models the *drop* since
the first observed point, ``y0 - Hill3(t - t_first)``, and log-log-linear the
loss as ``c - a ln(b + ln tau)``. As in the paper some
families share a function class (exp4, Janoschek and Weibull are one class in
three parametrisations); the parametrisation still changes where a fit lands.
No family assumes the data are monotone or convex: residuals are robust
(Huber) and relative, ``(f - y) / y``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from scalekit.fit.robust import irls_weights, robust_scale

Axes = tuple[np.ndarray, ...]  # t, tau, y0, ln t, ln tau — broadcastable


@dataclass(frozen=True)
class Family:
    """One parametric curve family on normalised axes.

    Parameters
    ----------
    name : str
        Short name (``"pow3"``).
    params : tuple of str
        Parameter names, in the order of the last axis of ``theta``.
    positive : tuple of bool
        Parameters fitted as logarithms (they stay positive).
    formula : str
        The curve, for reports (``t = x/x_last``, ``tau = x/x_first``).
    function : callable
        ``function((t, tau, y0, ln t, ln tau), theta) -> y``; ``theta`` has
        shape (B, P) and the axes shape (B, n).
    starts : callable
        ``starts(y0, R) -> (B, S, P)`` natural start values from the first
        normalised loss ``y0`` and ``R = x_last / x_first`` (both shape (B,)).
    """

    name: str
    params: tuple[str, ...]
    positive: tuple[bool, ...]
    formula: str
    function: Callable[[Axes, np.ndarray], np.ndarray]
    starts: Callable[[np.ndarray, np.ndarray], np.ndarray]

    @property
    def n_params(self) -> int:
        return len(self.params)

    def to_free(self, theta: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.positive, np.log(np.abs(theta) + 1e-300), theta)

    def to_natural(self, u: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.where(self.positive, np.exp(np.clip(u, -700, 700)), u)


def _cols(theta: np.ndarray) -> list[np.ndarray]:
    return [theta[:, k:k + 1] for k in range(theta.shape[1])]


def _grid(*columns) -> np.ndarray:
    """Stack per-start columns (each (B,) or scalar) into (B, S, P)."""
    arrays = np.broadcast_arrays(*[np.asarray(c, dtype=float) for c in columns])
    return np.stack(arrays, axis=-1)


def _drop(y0):
    return np.maximum(y0 - 1.0, 1e-3)


def _vap(ax, th):
    _, tau, _, _, ltau = ax
    a, b, c = _cols(th)
    return np.exp(np.clip(a + b / tau + c * ltau, -50, 50))


def _vap_starts(y0, R):
    lr = np.log(R)[:, None]
    c = -np.log(np.maximum(y0, 1.0 + 1e-3))[:, None] / lr * np.array([0.5, 1.0])
    b = np.zeros_like(c)
    return _grid(-c * lr, b, c)


def _pow3(ax, th):
    c, a, alpha = _cols(th)
    return c + a * np.exp(-alpha * ax[3])


def _pow3_starts(y0, R):
    c = np.array([0.5, 0.9, 0.5])[None, :] + 0 * y0[:, None]
    alpha = np.array([0.3, 0.5, 1.0])[None, :] + 0 * c
    return _grid(c, 1.0 - c, alpha)


def _satpow(ax, th):
    e, a, alpha = _cols(th)
    return e + a * np.exp(-alpha * ax[3])


def _loglinear(ax, th):
    c, a, b = _cols(th)
    return c - a * np.log(b + ax[4])


def _loglinear_starts(y0, R):
    b = np.array([0.3, 1.0, 3.0])[None, :] + 0 * y0[:, None]
    a = _drop(y0)[:, None] / np.log((b + np.log(R)[:, None]) / b)
    return _grid(y0[:, None] + a * np.log(b), a, b)


def _hill3(ax, th):
    m, kappa, eta = _cols(th)
    with np.errstate(divide="ignore"):
        log_gap = np.log(ax[0] - ax[0] / ax[1])     # ln(t - t_first): 0 drop at the first point
    return ax[2] - m / (1.0 + np.exp(np.clip(eta * (np.log(kappa) - log_gap), -50, 50)))


def _hill3_starts(y0, R):
    kappa = np.array([0.1, 0.5, 1.0])[None, :] + 0 * y0[:, None]
    eta = np.ones_like(kappa)
    return _grid(_drop(y0)[:, None] * (1 + kappa), kappa, eta)


def _logpower(ax, th):
    a, b, c = _cols(th)
    return a / (1.0 + np.exp(np.clip(c * (ax[3] - b), -50, 50)))


def _logpower_starts(y0, R):
    a = np.maximum(y0, 1.0 + 1e-3)[:, None] * np.array([1.05, 1.5, 3.0])
    c = np.array([1.0, 0.5, 0.3])[None, :] + 0 * a
    return _grid(a, -np.log(np.maximum(a - 1.0, 1e-3)) / c, c)


def _pow4(ax, th):
    c, a, b, alpha = _cols(th)
    return c + np.exp(-alpha * np.log(a * ax[0] + b))


def _pow4_starts(y0, R):
    c = np.array([0.5, 0.8])[None, :] + 0 * y0[:, None]
    alpha = np.array([0.5, 1.0])[None, :] + 0 * c
    base = (1.0 - c) ** (-1.0 / alpha)          # value 1 at t = 1
    b = 0.02 * base
    return _grid(c, base - b, b, alpha)


def _mmf(ax, th):
    alpha, d, kappa, delta = _cols(th)
    return alpha + d / (1.0 + np.exp(np.clip(delta * (np.log(kappa) + ax[3]), -50, 50)))


def _mmf_starts(y0, R):
    alpha = np.array([0.5, 0.9])[None, :] + 0 * y0[:, None]
    d = np.maximum(y0[:, None] - alpha, 1e-3) * 1.2
    delta = np.array([0.5, 1.0])[None, :] + 0 * alpha
    kappa = np.maximum(d / (1.0 - alpha) - 1.0, 1e-3) ** (1.0 / delta)
    return _grid(alpha, d, kappa, delta)


def _exp4(ax, th):
    c, a, alpha, b = _cols(th)
    return c + np.exp(np.clip(-a * np.exp(alpha * ax[3]) + b, -50, 50))


def _exp4_starts(y0, R):
    c = np.array([0.5, 0.9])[None, :] + 0 * y0[:, None]
    b = np.log(np.maximum(y0[:, None] - c, 1e-3) * 1.2)
    a = np.maximum(b - np.log(1.0 - c), 1e-3)
    alpha = np.array([0.3, 0.3])[None, :] + 0 * c
    return _grid(c, a, alpha, b)


def _janoschek(ax, th):
    alpha, d, kappa, delta = _cols(th)
    return alpha + d * np.exp(-kappa * np.exp(delta * ax[3]))


def _janoschek_starts(y0, R):
    alpha = np.array([0.5, 0.9])[None, :] + 0 * y0[:, None]
    d = np.maximum(y0[:, None] - alpha, 1e-3) * 1.2
    kappa = np.maximum(np.log(d / (1.0 - alpha)), 1e-3)
    delta = np.array([0.3, 0.5])[None, :] + 0 * alpha
    return _grid(alpha, d, kappa, delta)


def _weibull(ax, th):
    alpha, d, kappa, delta = _cols(th)
    return alpha + d * np.exp(-np.exp(np.clip(delta * (np.log(kappa) + ax[3]), -50, 50)))


def _weibull_starts(y0, R):
    grid = _janoschek_starts(y0, R)
    grid[..., 2] = grid[..., 2] ** (1.0 / grid[..., 3])
    return grid


def _ilog2(ax, th):
    c, a = _cols(th)
    return c + a / np.log(1.0 + ax[1])


def _ilog2_starts(y0, R):
    a = _drop(y0) / (1.0 / np.log(2.0) - 1.0 / np.log(1.0 + R))
    c = 1.0 - a / np.log(1.0 + R)
    scale = np.array([1.0, 2.0])[None, :]
    return _grid(1.0 - (1.0 - c[:, None]) * scale, a[:, None] * scale)


def _satpow_starts(y0, R):
    return _pow3_starts(y0, R)


def _m4(ax, th, *, newton: int = 8):
    """M4: solve (L - Linf) / (L0 - L)^alpha = beta * t^-c for L in (Linf, L0).

    With L = Linf + D * s(u) (D = L0 - Linf, s the logistic function) the
    equation reads g(u) = ln s(u) - alpha ln s(-u) - k = 0 with
    k = ln beta - c ln t - (1 - alpha) ln D; g rises in u with slope
    s(-u) + alpha s(u), between min(1, alpha) and max(1, alpha), so Newton
    steps from the alpha = 1 solution u = k converge fast.
    """
    linf, dspan, alpha, beta, c = _cols(th)
    k = np.log(beta) - c * ax[3] - (1.0 - alpha) * np.log(dspan)
    u = k.copy()
    for _ in range(newton):
        g = -np.logaddexp(0.0, -u) + alpha * np.logaddexp(0.0, u) - k
        s = 0.5 * (1.0 + np.tanh(0.5 * u))
        u = u - g / ((1.0 - s) + alpha * s)
    return linf + dspan * 0.5 * (1.0 + np.tanh(0.5 * u))


def _m4_starts(y0, R):
    linf = np.array([0.5, 0.8, 0.5, 0.8])[None, :] + 0 * y0[:, None]
    top = np.maximum(y0, 1.0 + 1e-3)[:, None] * 1.2
    dspan = top - linf
    alpha = np.array([0.5, 0.5, 1.5, 1.5])[None, :] + 0 * linf
    s1 = (1.0 - linf) / dspan                      # L = 1 at t = 1
    beta = np.exp((1.0 - alpha) * np.log(dspan) + np.log(s1) - alpha * np.log(1.0 - s1))
    return _grid(linf, dspan, alpha, beta, 0.5 + 0 * linf)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("vap", ("a", "b", "c"), (False, False, False),
           "exp(a + b/tau + c*ln(tau))", _vap, _vap_starts),
    Family("pow3", ("c", "a", "alpha"), (False, True, True),
           "c + a*t^-alpha", _pow3, _pow3_starts),
    Family("loglinear", ("c", "a", "b"), (False, True, True),
           "c - a*ln(b + ln(tau))", _loglinear, _loglinear_starts),
    Family("hill3", ("m", "kappa", "eta"), (True, True, True),
           "y0 - m/(1 + (kappa/(t - t_first))^eta)", _hill3, _hill3_starts),
    Family("logpower", ("a", "b", "c"), (True, False, True),
           "a/(1 + (t/e^b)^c)", _logpower, _logpower_starts),
    Family("pow4", ("c", "a", "b", "alpha"), (False, True, True, True),
           "c + (a*t + b)^-alpha", _pow4, _pow4_starts),
    Family("mmf", ("alpha", "d", "kappa", "delta"), (False, True, True, True),
           "alpha + d/(1 + (kappa*t)^delta)", _mmf, _mmf_starts),
    Family("exp4", ("c", "a", "alpha", "b"), (False, True, True, False),
           "c + exp(-a*t^alpha + b)", _exp4, _exp4_starts),
    Family("janoschek", ("alpha", "d", "kappa", "delta"), (False, True, True, True),
           "alpha + d*exp(-kappa*t^delta)", _janoschek, _janoschek_starts),
    Family("weibull", ("alpha", "d", "kappa", "delta"), (False, True, True, True),
           "alpha + d*exp(-(kappa*t)^delta)", _weibull, _weibull_starts),
    Family("ilog2", ("c", "a"), (False, True),
           "c + a/ln(1 + tau)", _ilog2, _ilog2_starts),
    Family("satpow", ("E", "A", "alpha"), (True, True, True),
           "E + A*t^-alpha, E >= 0", _satpow, _satpow_starts),
    Family("m4", ("Linf", "D", "alpha", "beta", "c"), (True, True, True, True, True),
           "(L - Linf)/(Linf + D - L)^alpha = beta*t^-c", _m4, _m4_starts),
)}
"""Every family by name; ``satpow`` is the saturating power law E + A x^-alpha and
``m4`` the estimator M4 of Alabdulmohsin, Neyshabur & Zhai (2022)."""

DEFAULT_FAMILIES: tuple[str, ...] = tuple(name for name in FAMILIES if name != "m4")
"""The families an ensemble uses unless told otherwise: all but ``m4``, whose
implicit form (Newton steps at every point) costs about as much to fit as the
other twelve together."""


@dataclass(frozen=True)
class CurveScale:
    """Per-curve normalisation: first and last fitted x, last fitted y, first y."""

    x_first: np.ndarray  # (B,)
    x_last: np.ndarray
    y_last: np.ndarray
    y_first: np.ndarray

    @classmethod
    def from_data(cls, x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> "CurveScale":
        idx = np.arange(x.shape[1])
        first = np.where(mask, idx, x.shape[1]).min(axis=1)
        last = np.where(mask, idx, -1).max(axis=1)
        rows = np.arange(x.shape[0])
        return cls(x[rows, first], x[rows, last], y[rows, last], y[rows, first])

    def axes(self, x: np.ndarray) -> Axes:
        t = x / self.x_last[:, None]
        tau = x / self.x_first[:, None]
        return t, tau, (self.y_first / self.y_last)[:, None] + 0 * t, np.log(t), np.log(tau)

    def repeat(self, s: int) -> "CurveScale":
        return CurveScale(*(np.repeat(a, s) for a in
                            (self.x_first, self.x_last, self.y_last, self.y_first)))


@dataclass(frozen=True)
class FamilyFit:
    """Result of fitting one family to B curves.

    Attributes
    ----------
    theta : ndarray (B, P)
        Natural parameters on the normalised axes.
    scale : CurveScale
        The normalisation the parameters refer to.
    rms : ndarray (B,)
        Root mean square relative residual of the fit (robust weights applied).
    ok : ndarray of bool (B,)
        The fit converged to finite values.
    start : ndarray of int (B,)
        Which entry of the start grid led to the fit.
    """

    family: Family
    theta: np.ndarray
    scale: CurveScale
    rms: np.ndarray
    ok: np.ndarray
    start: np.ndarray | None = None

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Loss at ``x`` (B, m); NaN where the fit failed or the curve leaves y > 0."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        with np.errstate(all="ignore"):
            y = self.family.function(self.scale.axes(x), self.theta) * self.scale.y_last[:, None]
        bad = ~np.isfinite(y) | (y <= 0) | ~self.ok[:, None]
        return np.where(bad, np.nan, y)


def fit_family(family: Family, x: np.ndarray, y: np.ndarray, mask: np.ndarray, *,
               iterations: int = 60, huber: float = 2.5,
               start: np.ndarray | None = None) -> FamilyFit:
    """Fit ``family`` to B padded curves at once (batched Levenberg–Marquardt).

    Parameters
    ----------
    x, y : ndarray (B, n)
        Positive x and y; entries where ``mask`` is False are ignored.
    mask : ndarray of bool (B, n)
        Which points belong to each curve (at least ``P + 1`` per row).
    iterations : int
        Levenberg–Marquardt steps; every start of every curve moves together
        until step 9, after which only each curve's best start goes on.
    huber : float
        Residuals beyond ``huber`` robust standard deviations are down-weighted
        (iteratively reweighted least squares for Huber's loss,
        :func:`scalekit.fit.robust.irls_weights`), so one spike does not bend a fit.
    start : ndarray of int (B,), optional
        Use only this entry of the family's start grid for each curve (e.g. the
        one that won on a shorter prefix of the same curve) instead of all.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    scale = CurveScale.from_data(x, np.where(mask, y, 1.0), mask)
    B, n = x.shape
    y0 = scale.y_first / scale.y_last
    R = np.maximum(scale.x_last / scale.x_first, 1.0 + 1e-9)
    starts = family.starts(y0, R)                       # (B, S, P)
    if start is not None:
        starts = starts[np.arange(B), np.asarray(start)][:, None, :]
    S, P = starts.shape[1], starts.shape[2]
    rep = scale.repeat(S)
    ax = rep.axes(np.repeat(x, S, axis=0))
    yn = np.repeat(np.where(mask, y, 1.0) / scale.y_last[:, None], S, axis=0)
    m = np.repeat(mask, S, axis=0).astype(float)
    u_all = family.to_free(starts.reshape(B * S, P))
    cost_all = np.full(B * S, np.inf)
    weights_all = m.copy()
    rows = np.arange(B * S)              # rows still iterating
    u, weights, lam = u_all.copy(), m.copy(), np.full(B * S, 1e-2)
    reweight_at = (4, 8) if huber else ()
    prune_at = max(reweight_at, default=6) + 1

    inv_y = 1.0 / yn

    def residuals(uu):
        with np.errstate(all="ignore"):
            r = family.function(ax, family.to_natural(uu)) * inv_y - 1.0
            r *= weights
        return np.nan_to_num(r, copy=False, nan=1e6, posinf=1e6, neginf=-1e6)

    r = residuals(u)
    cost = (r * r).sum(axis=1)
    eye = np.eye(P)
    for it in range(iterations):
        if it in reweight_at:
            raw = np.where(m > 0, r / np.maximum(weights, 1e-12), 0.0)
            sd = robust_scale(raw, m) + 1e-4
            weights = m * np.sqrt(irls_weights(raw, huber * sd[:, None]))
            r = residuals(u)
            cost = (r * r).sum(axis=1)
        h = 1e-7 * (1.0 + np.abs(u))
        J = np.empty(r.shape + (P,))
        for k in range(P):
            du = u.copy()
            du[:, k] += h[:, k]
            J[:, :, k] = (residuals(du) - r) / h[:, k:k + 1]
        Jt = J.transpose(0, 2, 1)
        A = Jt @ J
        g = (Jt @ r[:, :, None])[:, :, 0]
        diag = np.einsum("bkk->bk", A)
        damped = A + (lam[:, None] * (diag + 1e-9))[:, :, None] * eye
        try:
            step = np.linalg.solve(damped, -g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = -g / (lam[:, None] * (diag + 1e-9) + 1e-12)
        u_new = u + np.clip(step, -5.0, 5.0)
        r_new = residuals(u_new)
        cost_new = (r_new * r_new).sum(axis=1)
        better = np.isfinite(cost_new) & (cost_new < cost)
        small = better & (cost - cost_new <= 1e-6 * (1e-6 + cost))
        u = np.where(better[:, None], u_new, u)
        r = np.where(better[:, None], r_new, r)
        cost = np.where(better, cost_new, cost)
        lam = np.clip(np.where(better, lam * 0.3, lam * 4.0), 1e-12, 1e12)
        finished = small | (lam > 1e6) if it >= max(reweight_at, default=0) else np.zeros_like(small)
        if it == prune_at and S > 1:      # go on with each curve's most promising start only
            current = cost_all.copy()
            current[rows] = cost
            leader = np.argmin(current.reshape(B, S), axis=1) + np.arange(B) * S
            finished |= rows != leader[rows // S]
        if finished.any() or it == iterations - 1:
            if it == iterations - 1:
                finished[:] = True
            done_rows = rows[finished]
            u_all[done_rows], cost_all[done_rows] = u[finished], cost[finished]
            weights_all[done_rows] = weights[finished]
            keep = ~finished
            if not keep.any():
                break
            rows, u, r, cost, lam, weights = rows[keep], u[keep], r[keep], cost[keep], lam[keep], weights[keep]
            ax = tuple(a[keep] for a in ax)
            yn, m, inv_y = yn[keep], m[keep], inv_y[keep]
    cost = cost_all.reshape(B, S)
    best = np.argmin(np.where(np.isfinite(cost), cost, np.inf), axis=1)
    theta = family.to_natural(u_all.reshape(B, S, P)[np.arange(B), best])
    best_cost = cost[np.arange(B), best]
    used = weights_all.reshape(B, S, n)[np.arange(B), best]
    rms = np.sqrt(best_cost / np.maximum((used ** 2).sum(axis=1), 1.0))
    ok = np.isfinite(theta).all(axis=1) & (rms < 1e3)
    chosen = best if start is None else np.asarray(start)
    return FamilyFit(family, theta, scale, rms, ok, chosen)
