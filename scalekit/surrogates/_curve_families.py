"""Parametric learning-curve families and a batched least-squares fitter.

The eleven families of Domhan, Springenberg and Hutter (2015), "Speeding up
automatic hyperparameter optimization of deep neural networks by extrapolation
of learning curves" (IJCAI), Table 1, adapted from rising accuracies to falling
losses, plus the saturating power law of scaling-law work and the estimator M4
of Alabdulmohsin, Neyshabur and Zhai (2022), "Revisiting neural scaling laws in
language and vision" (NeurIPS): ``(L - Linf) / (L0 - L)^alpha = beta x^c``
(there c < 0; here written ``t^-c`` with c > 0, and ``L0 = Linf + D``), a power
law in the excess loss that bends over to the initial loss ``L0`` at small x.

Every family is a :class:`~scalekit.laws._base.Law` on normalised axes of one
curve: ``t = x / x_last`` and ``tau = x / x_first`` (``x_first``, ``x_last``:
first and last fitted point) and the loss divided by its last fitted value, so
that one start rule serves every curve; ``y0`` is the first normalised loss.
Twelve are expressions of :func:`~scalekit.laws._expression.law_from_expression`
(exact derivatives), M4 is :func:`~scalekit.laws._m4.m4_law` (implicit
differentiation). They are fitted by the engine's batched minimiser,
:func:`scalekit.fit._multistart.minimize_batch`, thousands of curves at once
with per-row data and masks (:func:`fit_family`).

Adaptation to losses: families that rise to an asymptote in the paper (pow3,
pow4, MMF, exp4, Janoschek, Weibull, ilog2) keep their form with the sign of the
amplitude flipped, so they fall to the asymptote; vap and log-power already
fall for the right signs; Hill3, which rises from zero, models the *drop* since
the first observed point, ``y0 - Hill3(t - t_first)``, and log-log-linear the
loss as ``c - a ln(b + ln tau)``. As in the paper some
families share a function class (exp4, Janoschek and Weibull are one class in
three parametrisations); the parametrisation still changes where a fit lands.
No family assumes the data are monotone or convex; residuals are those of every
fit of the engine, ``log f - log y``, under Huber's loss at a threshold set from
each curve's own scatter, so one spike does not bend a fit. A logistic
``1 / (1 + e^w)`` is written ``0.5 - 0.5 tanh(w / 2)``, which saturates instead of
overflowing, and exponents that could overflow are clamped to [-50, 50].
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from scalekit.fit import minimize_batch
from scalekit.fit import log_residuals
from scalekit.fit import irls_weights, robust_scale
from scalekit.laws import Law, Param
from scalekit.laws import law_from_expression
from scalekit.laws import m4_law

#: The normalised axes a family reads (see the module docstring).
AXES = ("t", "tau", "y0")
#: Least-squares steps every start of every curve takes before each curve goes on from
#: its best start only, under Huber's loss.
FIRST_ROUND = 9
#: Of those, the least-squares steps taken before the Huber threshold is set.
SQUARED_STEPS = 4


@dataclass(frozen=True)
class CurveFamily:
    """A learning-curve family: a law on the normalised axes and its start rule.

    Parameters
    ----------
    law : Law
        The curve, reading ``t``, ``tau`` and ``y0`` (see the module docstring).
    starts : callable
        ``starts(y0, R) -> (B, S, P)`` start values in natural units (the law's
        parameter order) from the first normalised loss ``y0`` and ``R = x_last /
        x_first`` (both shape (B,)).
    """

    law: Law
    starts: Callable[[np.ndarray, np.ndarray], np.ndarray]

    @property
    def name(self) -> str:
        return self.law.name

    @property
    def n_params(self) -> int:
        return len(self.law.params)


def _grid(*columns) -> np.ndarray:
    """Stack per-start columns (each (B,) or scalar) into (B, S, P)."""
    arrays = np.broadcast_arrays(*[np.asarray(c, dtype=float) for c in columns])
    return np.stack(arrays, axis=-1)


def _drop(y0):
    return np.maximum(y0 - 1.0, 1e-3)


def _clamped(w: str) -> str:
    return f"minimum(maximum({w}, -50), 50)"


def _logistic(w: str) -> str:
    """``1 / (1 + exp(w))`` as an expression that saturates instead of overflowing."""
    return f"(0.5 - 0.5*tanh(0.5*({w})))"


def _vap_starts(y0, R):
    lr = np.log(R)[:, None]
    c = -np.log(np.maximum(y0, 1.0 + 1e-3))[:, None] / lr * np.array([0.5, 1.0])
    b = np.zeros_like(c)
    return _grid(-c * lr, b, c)


def _pow3_starts(y0, R):
    c = np.array([0.5, 0.9, 0.5])[None, :] + 0 * y0[:, None]
    alpha = np.array([0.3, 0.5, 1.0])[None, :] + 0 * c
    return _grid(c, 1.0 - c, alpha)


def _loglinear_starts(y0, R):
    b = np.array([0.3, 1.0, 3.0])[None, :] + 0 * y0[:, None]
    a = _drop(y0)[:, None] / np.log((b + np.log(R)[:, None]) / b)
    return _grid(y0[:, None] + a * np.log(b), a, b)


def _hill3_starts(y0, R):
    kappa = np.array([0.1, 0.5, 1.0])[None, :] + 0 * y0[:, None]
    eta = np.ones_like(kappa)
    return _grid(_drop(y0)[:, None] * (1 + kappa), kappa, eta)


def _logpower_starts(y0, R):
    a = np.maximum(y0, 1.0 + 1e-3)[:, None] * np.array([1.05, 1.5, 3.0])
    c = np.array([1.0, 0.5, 0.3])[None, :] + 0 * a
    return _grid(a, -np.log(np.maximum(a - 1.0, 1e-3)) / c, c)


def _pow4_starts(y0, R):
    c = np.array([0.5, 0.8])[None, :] + 0 * y0[:, None]
    alpha = np.array([0.5, 1.0])[None, :] + 0 * c
    base = (1.0 - c) ** (-1.0 / alpha)          # value 1 at t = 1
    b = 0.02 * base
    return _grid(c, base - b, b, alpha)


def _mmf_starts(y0, R):
    alpha = np.array([0.5, 0.9])[None, :] + 0 * y0[:, None]
    d = np.maximum(y0[:, None] - alpha, 1e-3) * 1.2
    delta = np.array([0.5, 1.0])[None, :] + 0 * alpha
    kappa = np.maximum(d / (1.0 - alpha) - 1.0, 1e-3) ** (1.0 / delta)
    return _grid(alpha, d, kappa, delta)


def _exp4_starts(y0, R):
    c = np.array([0.5, 0.9])[None, :] + 0 * y0[:, None]
    b = np.log(np.maximum(y0[:, None] - c, 1e-3) * 1.2)
    a = np.maximum(b - np.log(1.0 - c), 1e-3)
    alpha = np.array([0.3, 0.3])[None, :] + 0 * c
    return _grid(c, a, alpha, b)


def _janoschek_starts(y0, R):
    alpha = np.array([0.5, 0.9])[None, :] + 0 * y0[:, None]
    d = np.maximum(y0[:, None] - alpha, 1e-3) * 1.2
    kappa = np.maximum(np.log(d / (1.0 - alpha)), 1e-3)
    delta = np.array([0.3, 0.5])[None, :] + 0 * alpha
    return _grid(alpha, d, kappa, delta)


def _weibull_starts(y0, R):
    grid = _janoschek_starts(y0, R)
    grid[..., 2] = grid[..., 2] ** (1.0 / grid[..., 3])
    return grid


def _ilog2_starts(y0, R):
    a = _drop(y0) / (1.0 / np.log(2.0) - 1.0 / np.log(1.0 + R))
    c = 1.0 - a / np.log(1.0 + R)
    scale = np.array([1.0, 2.0])[None, :]
    return _grid(1.0 - (1.0 - c[:, None]) * scale, a[:, None] * scale)


def _m4_starts(y0, R):
    linf = np.array([0.5, 0.8, 0.5, 0.8])[None, :] + 0 * y0[:, None]
    top = np.maximum(y0, 1.0 + 1e-3)[:, None] * 1.2
    dspan = top - linf
    alpha = np.array([0.5, 0.5, 1.5, 1.5])[None, :] + 0 * linf
    s1 = (1.0 - linf) / dspan                      # L = 1 at t = 1
    beta = np.exp((1.0 - alpha) * np.log(dspan) + np.log(s1) - alpha * np.log(1.0 - s1))
    return _grid(linf, dspan, alpha, beta, 0.5 + 0 * linf)


#: Range of a positive parameter on the normalised axes: a value that runs off to 0 or
#: infinity in a flat direction (pow4's b where the curve is a pow3) stops at a bound.
POSITIVE_RANGE = (1e-12, 1e12)


def _m4_family_law() -> Law:
    """M4 (:func:`~scalekit.laws._m4.m4_law` on ``t``) with every parameter positive and
    fitted as a logarithm, ``L0 = Linf + D``: ``(Linf, D, alpha, beta, c)``."""
    base = m4_law(input="t")
    lower, upper = POSITIVE_RANGE

    def to_base(z):
        v = np.exp(z)
        return np.stack([v[..., 0], v[..., 0] + v[..., 1], v[..., 2], z[..., 3], v[..., 4]],
                        axis=-1), v

    def log_value_and_jacobian(X, z):
        zb, v = to_base(np.asarray(z, dtype=float))
        value, J = base.log_value_and_jacobian(X, zb)
        out = np.empty_like(J)
        out[..., 0] = (J[..., 0] + J[..., 1]) * v[..., 0:1]
        out[..., 1] = J[..., 1] * v[..., 1:2]
        out[..., 2] = J[..., 2] * v[..., 2:3]
        out[..., 3] = J[..., 3]
        out[..., 4] = J[..., 4] * v[..., 4:5]
        return value, out

    def function(X, theta):
        with np.errstate(divide="ignore"):
            return np.exp(base.log_function(X, to_base(np.log(np.asarray(theta, float)))[0]))

    return Law(name="m4", inputs=("t",),
               params=tuple(Param(n, lower, upper, log=True)
                            for n in ("Linf", "D", "alpha", "beta", "c")),
               formula="(L - Linf)/(Linf + D - L)^alpha = beta*t^-c", function=function,
               log_function=lambda X, z: base.log_function(X, to_base(np.asarray(z, float))[0]),
               log_value_and_jacobian=log_value_and_jacobian, description=base.description)


def _family(name: str, expression: str, signed: tuple[str, ...], starts) -> CurveFamily:
    """A family from its expression on ``t``, ``tau``, ``y0``; parameters are positive
    (fitted as logarithms, within ``POSITIVE_RANGE``) except those in ``signed``."""
    law = law_from_expression(expression, inputs=AXES, name=name,
                              params={p: {"log": False} for p in signed})
    lower, upper = POSITIVE_RANGE
    params = tuple(replace(p, lower=lower, upper=upper) if p.log else p for p in law.params)
    return CurveFamily(replace(law, params=params), starts)


FAMILIES: dict[str, CurveFamily] = {f.name: f for f in (
    _family("vap", "exp(" + _clamped("a + b/tau + c*log(tau)") + ")", ("a", "b", "c"),
            _vap_starts),
    _family("pow3", "c + a*t**-alpha", ("c",), _pow3_starts),
    _family("loglinear", "c - a*log(b + log(tau))", ("c",), _loglinear_starts),
    _family("hill3",                      # the drop since the first point, t_first = t/tau
            "y0 - m*" + _logistic("(log(kappa) - log(maximum(t - t/tau, 1e-12)))*eta"), (),
            _hill3_starts),
    _family("logpower", "a*" + _logistic("(log(t) - b)*c"), ("b",), _logpower_starts),
    _family("pow4", "c + (a*t + b)**-alpha", ("c",), _pow4_starts),
    _family("mmf", "alpha + d*" + _logistic("(log(kappa) + log(t))*delta"), ("alpha",),
            _mmf_starts),
    _family("exp4", "c + exp(" + _clamped("-a*t**alpha + b") + ")", ("c", "b"), _exp4_starts),
    _family("janoschek", "alpha + d*exp(-kappa*t**delta)", ("alpha",), _janoschek_starts),
    _family("weibull", "alpha + d*exp(-exp(" + _clamped("(log(kappa) + log(t))*delta") + "))",
            ("alpha",), _weibull_starts),
    _family("ilog2", "c + a/log(1 + tau)", ("c",), _ilog2_starts),
    _family("satpow", "E + A*t**-alpha", (), _pow3_starts),
    CurveFamily(_m4_family_law(), _m4_starts),
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
    def from_data(cls, x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> CurveScale:
        idx = np.arange(x.shape[1])
        first = np.where(mask, idx, x.shape[1]).min(axis=1)
        last = np.where(mask, idx, -1).max(axis=1)
        rows = np.arange(x.shape[0])
        return cls(x[rows, first], x[rows, last], y[rows, last], y[rows, first])

    def take(self, rows: np.ndarray) -> CurveScale:
        """The scales of the curves ``rows``."""
        return CurveScale(self.x_first[rows], self.x_last[rows], self.y_last[rows],
                          self.y_first[rows])

    def axes(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The normalised inputs ``t``, ``tau`` and ``y0`` at ``x`` (B, m), each (B, m)."""
        t = x / self.x_last[:, None]
        return {"t": t, "tau": x / self.x_first[:, None],
                "y0": np.broadcast_to((self.y_first / self.y_last)[:, None], t.shape)}


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
        Root mean square log residual of the fit (Huber's weights applied).
    ok : ndarray of bool (B,)
        The fit converged to finite values.
    start : ndarray of int (B,)
        Which entry of the start grid led to the fit.
    """

    family: CurveFamily
    theta: np.ndarray
    scale: CurveScale
    rms: np.ndarray
    ok: np.ndarray
    start: np.ndarray | None = None

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Loss at ``x`` (B, m); NaN where the fit failed or the curve leaves y > 0."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        with np.errstate(all="ignore"):
            y = self.family.law.function(self.scale.axes(x), self.theta)
            y = y * self.scale.y_last[:, None]
        bad = ~np.isfinite(y) | (y <= 0) | ~self.ok[:, None]
        return np.where(bad, np.nan, y)


def fit_family(family: CurveFamily, x: np.ndarray, y: np.ndarray, mask: np.ndarray, *,
               iterations: int = 60, huber: float = 2.5,
               start: np.ndarray | None = None) -> FamilyFit:
    """Fit ``family`` to B padded curves at once, by the engine's batched minimiser.

    Every start of every curve takes ``FIRST_ROUND`` least-squares steps; each curve
    then goes on from its best start only, under Huber's loss with the threshold
    ``huber`` robust standard deviations of that start's residuals
    (:func:`scalekit.fit._robust.robust_scale`), so one spike does not bend a fit.
    Curves are fitted in groups of equal length (rounded up to 8 points), so that a
    curve's fit does not depend, not even in the last bit, on the curves beside it.

    Parameters
    ----------
    x, y : ndarray (B, n)
        Positive x and y; entries where ``mask`` is False are ignored.
    mask : ndarray of bool (B, n)
        Which points belong to each curve (at least ``P + 1`` per row).
    iterations : int
        Levenberg–Marquardt steps in all (both rounds).
    huber : float
        Huber threshold in robust standard deviations; 0 fits least squares throughout.
    start : ndarray of int (B,), optional
        Use only this entry of the family's start grid for each curve (e.g. the
        one that won on a shorter prefix of the same curve) instead of all.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    scale = CurveScale.from_data(x, np.where(mask, y, 1.0), mask)
    B = x.shape[0]
    starts = family.starts(scale.y_first / scale.y_last,
                           np.maximum(scale.x_last / scale.x_first, 1.0 + 1e-9))
    if start is not None:
        starts = starts[np.arange(B), np.asarray(start)][:, None, :]
    # each curve's points first, then padding at its first x (where the law is finite
    # if it is anywhere), in groups of one width
    order = np.argsort(~mask, axis=1, kind="stable")
    x, y, mask = (np.take_along_axis(a, order, axis=1) for a in (x, y, mask))
    x = np.where(mask, x, scale.x_first[:, None])
    log_y = np.where(mask, np.log(np.where(mask, y, 1.0) / scale.y_last[:, None]), 0.0)
    widths = np.maximum(-(-mask.sum(axis=1) // 8) * 8, 8)
    if widths.max() > x.shape[1]:
        extra = ((0, 0), (0, widths.max() - x.shape[1]))
        x, log_y, mask = np.pad(x, extra, mode="edge"), np.pad(log_y, extra), np.pad(mask, extra)
    P = family.n_params
    theta, rms, best = np.empty((B, P)), np.empty(B), np.zeros(B, dtype=int)
    for width in np.unique(widths):
        rows = np.flatnonzero(widths == width)
        X = scale.take(rows).axes(x[rows, :width])
        theta[rows], rms[rows], best[rows] = _fit_group(
            family.law, X, log_y[rows, :width], mask[rows, :width].astype(float),
            starts[rows], iterations=iterations, huber=huber)
    ok = np.isfinite(theta).all(axis=1) & np.isfinite(rms) & (rms < 1e3)
    return FamilyFit(family, theta, scale, rms, ok, best if start is None else np.asarray(start))


def _fit_group(law: Law, X, log_y, weights, starts, *, iterations: int, huber: float):
    """The rounds of :func:`fit_family` on curves of one width: natural parameters
    (B, P), rms log residuals (B,) and the index of each curve's best start (B,)."""
    B, S, P = starts.shape
    run = functools.partial(minimize_batch, law, ftol=1e-6, xtol=np.inf)
    rep = {k: np.repeat(v, S, axis=0) for k, v in X.items()}
    log_y_rep, weights_rep = np.repeat(log_y, S, axis=0), np.repeat(weights, S, axis=0)
    z = run(rep, log_y_rep, law.to_fitting(starts.reshape(B * S, P)), loss="squared", delta=1.0,
            weights=weights_rep, max_iter=min(SQUARED_STEPS, iterations)).z
    loss = "huber" if huber else "squared"

    def threshold(X, log_y, weights, z):
        """``huber`` robust standard deviations of each row's residuals (1 for least squares)."""
        if not huber:
            return np.ones(len(z))
        spread = robust_scale(np.nan_to_num(log_residuals(law, X, log_y, z)), weights)
        return huber * (spread + 1e-4)

    delta = threshold(rep, log_y_rep, weights_rep, z)
    first = run(rep, log_y_rep, z, loss=loss, delta=delta, weights=weights_rep,
                max_iter=max(min(FIRST_ROUND, iterations) - SQUARED_STEPS, 0))
    objective = first.objective.reshape(B, S)
    best = np.argmin(np.where(np.isfinite(objective), objective, np.inf), axis=1)
    z = first.z[np.arange(B) * S + best]
    delta = threshold(X, log_y, weights, z)      # again, from the leading start's better fit
    if iterations > FIRST_ROUND:
        z = run(X, log_y, z, loss=loss, delta=delta, weights=weights,
                max_iter=iterations - FIRST_ROUND).z
    r = log_residuals(law, X, log_y, z)
    used = weights * (irls_weights(r, delta[:, None]) if huber else 1.0)
    with np.errstate(invalid="ignore"):
        rms = np.sqrt((used * r * r).sum(axis=1) / np.maximum(used.sum(axis=1), 1e-300))
    return law.to_natural(z), rms, best
