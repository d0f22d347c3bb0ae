"""Is a shape in the data? A law tested against its nested monotone law.

A U-shape, an optimum or a critical value comes from a term of a law that the
monotone law nested in it lacks (the inference-k law's rise ``B (1 - k^-b)``, the
depth law's own depth term ``c_l l^-alpha_l``). :func:`nested_test` asks whether the
data need that term: both laws are fitted by least squares on relative residuals
``(y - f) / y`` (close to the log residuals the fitter uses), with the exponents on a
grid and the scales non-negative, solved exactly at each grid point (every subset of
the columns is solved and the feasible one of least residual kept). The statistic is
the likelihood ratio ``n log(RSS0 / RSS1)``; its reference is a parametric bootstrap
from the monotone fit with Gaussian relative noise of the larger law's residual
scale. No chi-square reference holds: under the monotone law the extra scale sits on
its bound 0 and its exponent is not identified.

:func:`slope_test` is the one-sided t-test of a log-log slope (the class-count law's
``gamma > 0``), exact for Gaussian log noise.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Level of every shape test.
LEVEL = 0.05
#: Parametric-bootstrap draws of :func:`nested_test`.
DRAWS = 199


@dataclass(frozen=True)
class ShapeTest:
    """Outcome of a test of a law against its nested monotone law.

    Attributes
    ----------
    statistic : float
        Likelihood ratio ``n log(RSS0 / RSS1)`` (or the slope's t statistic).
    p_value : float
    method : str
        ``"parametric bootstrap"`` (with ``draws``) or ``"t-test"``.
    draws : int
    level : float
    """

    statistic: float
    p_value: float
    method: str
    draws: int = 0
    level: float = LEVEL

    @property
    def rejected(self) -> bool:
        """Whether the monotone law is rejected at ``level``: the shape is in the data."""
        return bool(self.p_value <= self.level)

    def to_dict(self) -> dict:
        """Plain-JSON dict."""
        return {"statistic": float(self.statistic), "p_value": float(self.p_value),
                "method": self.method, "draws": self.draws, "level": self.level,
                "rejected": self.rejected}


def _least_squares(X, Y, root):
    """Least residual of each row of ``Y`` (R, n) on non-negative combinations of the
    columns of ``X`` ((1 or R), G, n, c) at each of G settings: RSS (R, G) and the
    coefficients (R, G, c) of the weighted problem with unit-norm columns, and those
    columns. Exact: every
    subset of the columns is solved and the feasible one of least residual kept."""
    Xw = X * root[:, None]
    norms = np.linalg.norm(Xw, axis=-2, keepdims=True)
    Xw = Xw / np.where(norms > 0, norms, 1.0)
    Yw = Y * root
    gram = Xw.swapaxes(-1, -2) @ Xw                                         # (., G, c, c)
    XtY = np.einsum("rgnc,rn->rgc", np.broadcast_to(Xw, (Y.shape[0],) + Xw.shape[1:]), Yw)
    yy = np.einsum("rn,rn->r", Yw, Yw)[:, None]
    c = X.shape[-1]
    best = np.full(XtY.shape[:2], np.inf)
    best_coef = np.zeros(XtY.shape)
    for size in range(1, c + 1):
        for subset in itertools.combinations(range(c), size):
            block = gram[..., subset, :][..., subset] + 1e-10 * np.eye(size)
            part = XtY[..., subset]
            coef = np.linalg.solve(block, part[..., None])[..., 0]
            rss = yy - np.einsum("rgi,rgi->rg", coef, part)
            rss[np.any(coef < 0, axis=-1)] = np.inf
            better = rss < best
            best = np.where(better, rss, best)
            full = np.zeros(XtY.shape)
            full[..., subset] = coef
            best_coef = np.where(better[..., None], full, best_coef)
    return np.maximum(best, 0.0), best_coef, Xw


class _Law:
    """A law linear in non-negative scales given its exponents: ``columns(exponents)``
    maps exponents (..., q) to columns (..., n, c); exponents lie on ``axes`` (q
    geometric grids, whose ends are the bounds)."""

    def __init__(self, columns, axes):
        self.columns, self.axes = columns, [np.asarray(a, dtype=float) for a in axes]
        grid = np.meshgrid(*self.axes, indexing="ij")
        self.grid = np.stack([g.ravel() for g in grid], axis=-1)             # (G, q)
        self.step = np.array([np.log(a[1] / a[0]) for a in self.axes])
        self.low = np.array([a[0] for a in self.axes])
        self.high = np.array([a[-1] for a in self.axes])

    def fit(self, Y, weights, *, zooms: int = 5, chunk: int = 2_000_000):
        """Least RSS of each row of ``Y`` (R, n): the grid, then ``zooms`` finer grids
        (5 points a side each, 2.5 times narrower each time) around each row's best.
        Returns RSS (R,) and the fitted values (R, n)."""
        root = np.sqrt(weights)
        rss = _least_squares(self.columns(self.grid)[None], Y, root)[0]
        g = np.argmin(rss, axis=1)
        exponents = self.grid[g]                                             # (R, q)
        q = exponents.shape[1]
        offsets = np.stack([o.ravel() for o in np.meshgrid(*(np.linspace(-1, 1, 5),) * q,
                                                           indexing="ij")], axis=-1)
        per = max(1, chunk // (offsets.shape[0] * Y.shape[1] * (q + 1)))
        best_rss, fitted = np.empty(Y.shape[0]), np.empty(Y.shape)
        for start in range(0, Y.shape[0], per):
            rows = slice(start, start + per)
            e, h = exponents[rows], self.step
            for _ in range(zooms):
                local = np.clip(e[:, None, :] * np.exp(h * offsets), self.low, self.high)
                r, cf, Xw = _least_squares(self.columns(local), Y[rows], root)
                j = np.argmin(r, axis=1)
                e, h = local[np.arange(e.shape[0]), j], h / 2.5
            pick = np.arange(e.shape[0])
            best_rss[rows] = r[pick, j]
            fitted[rows] = np.einsum("rnc,rc->rn", Xw[pick, j], cf[pick, j]) / root
        return best_rss, fitted


def nested_test(full: _Law, null: _Law, y, *, n_params: int, draws: int = DRAWS,
                seed: int = 0, level: float = LEVEL) -> ShapeTest:
    """Likelihood-ratio test of the monotone law ``null`` inside ``full``, by parametric
    bootstrap. ``n_params`` counts ``full``'s parameters (for its residual scale); ``y``
    must be positive."""
    y = np.asarray(y, dtype=float)
    n = y.size
    weights = 1.0 / y ** 2
    for _ in range(2):  # weights of the monotone fit, not of the points: low points weigh no more
        weights = 1.0 / null.fit(y[None], weights)[1][0] ** 2
    rss0, f0 = null.fit(y[None], weights)
    rss1, _ = full.fit(y[None], weights)
    statistic = float(n * np.log(rss0[0] / max(rss1[0], rss0[0] * 1e-300)))
    if not statistic > 1e-9:
        return ShapeTest(max(statistic, 0.0), 1.0, "parametric bootstrap", 0, level)
    sigma = float(np.sqrt(rss0[0] / max(n - n_params, 1)))
    rng = np.random.default_rng(seed)
    Y = f0[0] * (1.0 + sigma * rng.standard_normal((draws, n)))
    Y = np.maximum(Y, 1e-3 * np.min(f0[0]))
    stat = n * np.log(null.fit(Y, weights)[0] / np.maximum(full.fit(Y, weights)[0], 1e-300))
    p_value = (1.0 + np.sum(stat >= statistic * (1 - 1e-9))) / (draws + 1.0)
    return ShapeTest(statistic, float(p_value), "parametric bootstrap", draws, level)


def slope_test(x, y, *, level: float = LEVEL) -> ShapeTest:
    """One-sided t-test that ``log y`` rises with ``log x`` (slope > 0), by ordinary least
    squares; fewer than three points or one ``x`` give p = 1."""
    log_x, log_y = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if log_x.size < 3 or np.ptp(log_x) == 0:
        return ShapeTest(0.0, 1.0, "t-test", 0, level)
    fit = stats.linregress(log_x, log_y)
    if not fit.stderr > 0:
        return ShapeTest(np.inf if fit.slope > 0 else 0.0, 0.0 if fit.slope > 0 else 1.0,
                         "t-test", 0, level)
    t = fit.slope / fit.stderr
    return ShapeTest(float(t), float(stats.t.sf(t, log_x.size - 2)), "t-test", 0, level)


def inference_k_test(k, error, *, seed: int = 0, draws: int = DRAWS) -> ShapeTest:
    """``E + A k^-a + B (1 - k^-b)`` against the same law held non-increasing over the
    data's k (which nests ``B = 0``): a rise inside the data, not a better-shaped fall."""
    log_k = np.log(np.asarray(k, dtype=float))

    def decay(a):
        return np.exp(-a[..., None] * log_k)

    def full(e):
        rise = -np.expm1(-e[..., 1:2] * log_k)
        return np.stack([np.ones_like(rise), decay(e[..., 0]), rise], axis=-1)

    def monotone(e):
        a, b = e[..., 0:1], e[..., 1:2]
        # f' <= 0 on [1, K] iff a A >= b B K^(a - b), K the largest k if a > b, else 1:
        # with A = A' + B b K^(a - b) / a and A' >= 0 the scales stay non-negative
        worst = np.where(a > b, log_k.max(), 0.0)
        fall = decay(e[..., 0])
        rise = b / a * np.exp((a - b) * worst) * fall - np.expm1(-b * log_k)
        return np.stack([np.ones_like(fall), fall, rise], axis=-1)

    a_axis, b_axis = np.geomspace(0.05, 10.0, 24), np.geomspace(0.02, 10.0, 20)
    return nested_test(_Law(full, [a_axis, b_axis]), _Law(monotone, [a_axis, b_axis]), error,
                       n_params=5, draws=draws, seed=seed)


def depth_test(width, depth, tokens, loss, *, seed: int = 0, draws: int = DRAWS) -> ShapeTest:
    """The depth law against its nested law without a depth term of its own (``c_l = 0``)."""
    logs = [np.log(np.asarray(v, dtype=float)) for v in (width, depth, tokens)]

    def powers(e, which):
        return [np.exp(-e[..., j, None] * logs[column]) for j, column in enumerate(which)]

    def full(e):
        terms = powers(e, (0, 1, 2))
        return np.stack([np.ones_like(terms[0]), *terms], axis=-1)

    def null(e):
        terms = powers(e, (0, 2))
        return np.stack([np.ones_like(terms[0]), *terms], axis=-1)

    axis = np.geomspace(0.05, 5.0, 10)
    return nested_test(_Law(full, [axis] * 3), _Law(null, [axis] * 2), loss, n_params=7,
                       draws=draws, seed=seed)
