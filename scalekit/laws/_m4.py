"""The scaling-law estimator M4 of Alabdulmohsin, Neyshabur and Zhai (2022).

"Revisiting neural scaling laws in language and vision" (NeurIPS 2022), eq. 4:

    (L - Linf) / (L0 - L)^alpha = beta * x^-c

(the paper writes ``x^c`` with ``c < 0``; here ``c >= 0``). ``Linf`` is the loss
with infinite data, ``L0`` the loss of random guessing; the excess loss follows a
power law where it is small and bends over to ``L0`` at small ``x``. The law is
the equation solved for ``L`` in ``(Linf, L0)``: with ``L = Linf + b s(u)``,
``b = L0 - Linf`` and ``s`` the logistic function, it reads

    g(u) = ln s(u) - alpha ln s(-u) - k = 0,   k = ln beta - c ln x - (1 - alpha) ln b,

and ``g`` rises in ``u`` (slope ``s(-u) + alpha s(u)``), so one root exists; it is
found by Newton steps kept inside a bracket (bisection where a step leaves it).
The Jacobian follows from the implicit function theorem.

Parameters (fitting space): ``Linf`` and ``L0`` as they are, ``alpha >= 0``,
``log beta``, ``c >= 0``. The paper's constraints on the data of one curve
(``0 <= Linf <= min L - 1e-3``, ``L0 >= max L + 1e-3``, and for error rates
``L0 <= 1 + 1e-3``) are bounds of :func:`m4_law`; the registered ``m4`` has
only ``Linf >= 0`` and ``L0 > 0`` and is not finite where ``L0 <= Linf``.
"""

from __future__ import annotations

import functools

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._registry import register_law

#: The paper's margin between the observed losses and the bounds on Linf and L0.
MARGIN = 1e-3
_LN2 = float(np.log(2.0))


def _sigmoid(u):
    return 0.5 * (1.0 + np.tanh(0.5 * u))


def solve_logit(k: np.ndarray, alpha: np.ndarray, *, iterations: int = 60,
                start: np.ndarray | None = None) -> np.ndarray:
    """The root ``u`` of ``ln s(u) - alpha ln s(-u) = k`` (broadcast arrays, alpha >= 0).

    ``g(u) = ln s(u) - alpha ln s(-u) - k`` is concave for alpha < 1 and convex
    for alpha > 1, so Newton steps from the asymptotic guess (``k`` for k < 0,
    ``k / alpha`` above) converge monotonically after the first. They are kept
    inside the bracket ``[min(k, k/a) - max(a - 1, 0) ln 2, max(k, k/a) +
    max(1 - a, 0) ln 2 / a]`` (bisection where one would leave it) and stop
    once none moves by more than 1e-12 (1 + |u|). With alpha = 0 the root is
    ``logit(e^k)`` where k < 0; where k >= 0 there is none and L = L0 (u = 40).
    ``start`` (a nearby root, e.g. at the last parameters of an iteration) replaces
    the asymptotic guess where it lies in the bracket; the root is the same.
    """
    k, alpha = np.broadcast_arrays(np.asarray(k, float), np.asarray(alpha, float))
    zero = alpha <= 0
    a = np.where(zero, 1.0, alpha).ravel()
    flat_k = k.ravel()
    lo = np.minimum(flat_k, flat_k / a) - np.maximum(a - 1.0, 0.0) * _LN2 - 1e-12
    hi = np.maximum(flat_k, flat_k / a) + np.maximum(1.0 - a, 0.0) * _LN2 / a + 1e-12
    u = np.where(flat_k < 0, flat_k, flat_k / a)
    if start is not None:
        start = np.broadcast_to(start, k.shape).ravel()
        u = np.where((start >= lo) & (start <= hi), start, u)
    active = slice(None)            # points still moving; each stops on its own
    for _ in range(iterations):
        ua, aa = u[active], a[active]
        # g = ln s(u) - a ln s(-u) - k = a softplus(u) - softplus(-u) - k, with one exp
        e = np.exp(-np.abs(ua))
        tail = np.log1p(e)
        g = aa * (tail + np.maximum(ua, 0.0)) - (tail + np.maximum(-ua, 0.0)) - flat_k[active]
        s = np.where(ua >= 0, 1.0, e) / (1.0 + e)
        below = g < 0
        la = np.where(below, ua, lo[active])
        ha = np.where(below, hi[active], ua)
        lo[active], hi[active] = la, ha
        with np.errstate(divide="ignore", invalid="ignore"):
            step = ua - g / ((1.0 - s) + aa * s)
        inside = np.isfinite(step) & (step >= la) & (step <= ha)
        new = np.where(inside, step, 0.5 * (la + ha))
        moving = np.abs(new - ua) > 1e-12 * (1.0 + np.abs(new))
        u[active] = new
        active = np.flatnonzero(moving) if isinstance(active, slice) else active[moving]
        if active.size == 0:
            break
    flat_zero = zero.ravel()
    if flat_zero.any():
        kz = flat_k[flat_zero]
        with np.errstate(invalid="ignore", divide="ignore"):
            u[flat_zero] = np.where(kz < 0, kz - np.log1p(-np.exp(np.minimum(kz, -1e-300))),
                                    40.0)
    return u.reshape(k.shape)


def _parts(X, z, name):
    z = np.asarray(z, dtype=float)
    linf, l0, alpha, log_beta, c = (z[..., k:k + 1] for k in range(5))
    log_x = np.log(X[name])
    with np.errstate(invalid="ignore", divide="ignore"):
        b = l0 - linf
        log_b = np.log(b)
        k = log_beta - c * log_x - (1.0 - alpha) * log_b
        u = solve_logit(np.where(b > 0, k, 0.0), alpha)
        log_l = np.logaddexp(np.log(linf), log_b - np.logaddexp(0.0, -u))
    log_l = np.where(b > 0, log_l, np.nan)
    return log_l, linf, alpha, b, log_b, u, log_x


def _log_function(X, z, name):
    return _parts(X, z, name)[0]


def _log_value_and_jacobian(X, z, name):
    log_l, linf, alpha, b, log_b, u, log_x = _parts(X, z, name)
    s, rest = _sigmoid(u), _sigmoid(-u)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        scale = np.exp(-log_l)                        # d ln L = dL / L
        # dL/dk = b s(u) s(-u) / g'(u); 0 where the law saturates at L0 (alpha = 0).
        dl_dk = b * s * rest / np.maximum(rest + alpha * s, 1e-300)
        dl_dlinf = 1.0 - s + dl_dk * (1.0 - alpha) / b
        rows = np.empty((5,) + log_l.shape)
        rows[0] = dl_dlinf * scale
        rows[1] = (1.0 - dl_dlinf) * scale
        rows[2] = dl_dk * (log_b - np.logaddexp(0.0, u)) * scale
        rows[3] = dl_dk * scale
        rows[4] = -dl_dk * log_x * scale
    return log_l, np.moveaxis(rows, 0, -1)


def to_limit(z: np.ndarray) -> np.ndarray:
    """Fitting-space parameters ``(Linf, L0, alpha, ln beta, c)`` in limit coordinates
    ``(Linf, ln L0, kappa = alpha / L0, ln beta + alpha ln L0, c)`` (rows of ``z``).

    Along M4's valley ``L0`` and ``alpha`` grow together toward the limit
    ``(L0 - L)^alpha -> L0^alpha e^(-kappa L)`` of ``L0 -> inf`` at fixed ``kappa``;
    in these coordinates that valley is a straight line (``ln L0`` alone moves), so
    a fit walks it in steps that grow geometrically, and the law is computed
    there without the cancellation of ``ln beta ~ -alpha ln L0``.
    """
    z = np.asarray(z, dtype=float)
    w = z.copy()
    log_l0 = np.log(z[..., 1])
    w[..., 1], w[..., 2] = log_l0, z[..., 2] / z[..., 1]
    w[..., 3] = z[..., 3] + z[..., 2] * log_l0
    return w


def from_limit(w: np.ndarray) -> np.ndarray:
    """The inverse of :func:`to_limit` (``ln beta`` is ``-inf`` where it underflows)."""
    w = np.asarray(w, dtype=float)
    z = w.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        l0 = np.exp(w[..., 1])
        alpha = w[..., 2] * l0
        z[..., 1], z[..., 2], z[..., 3] = l0, alpha, w[..., 3] - alpha * w[..., 1]
    return z


#: How far (in ln L0) above its lower bound ``L0`` may go in limit coordinates: there
#: ``L / L0 < e^-40`` and M4 equals its limit ``L0 -> inf`` to double precision.
LIMIT_SPAN = 40.0


def limit_bounds(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The box of :func:`to_limit`'s coordinates for fitting-space bounds (rows of)
    ``lower``, ``upper``: ``ln L0`` at most :data:`LIMIT_SPAN` above its lower bound
    (where that is positive), ``alpha / L0 >= 0``, ``ln beta + alpha ln L0`` free."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w_lower, w_upper = to_limit(lower), to_limit(upper)
    w_upper[..., 1] = np.where(np.isfinite(w_lower[..., 1]),
                               np.minimum(w_upper[..., 1], w_lower[..., 1] + LIMIT_SPAN),
                               w_upper[..., 1])
    w_lower[..., 2], w_upper[..., 2] = 0.0, np.inf
    w_lower[..., 3], w_upper[..., 3] = -np.inf, np.inf
    return w_lower, w_upper


def limit_terms(x: np.ndarray, w: np.ndarray, *, start=None):
    """``ln L`` at inputs ``x`` (a, n), its Jacobian in the limit coordinates of
    :func:`to_limit` (a, n, 5) and the logit roots ``u`` (a, n), for parameters
    ``w`` (a, 5); ``start``: roots at nearby parameters (see :func:`solve_logit`).

    With ``delta = Linf / L0`` the root's right-hand side is ``k = w3 - c ln x -
    ln b + alpha ln(1 - delta)``; every term stays finite as ``L0 -> inf``.
    """
    linf, log_l0, kappa, log_beta_l, c = (w[..., j:j + 1] for j in range(5))
    log_x = np.log(x)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        l0 = np.exp(log_l0)
        alpha = kappa * l0
        b = l0 - linf
        log_b = np.log(b)
        shrink = np.log1p(-linf / l0)                # ln(b / L0)
        k = log_beta_l - c * log_x - log_b + alpha * shrink
        u = solve_logit(np.where(b > 0, k, 0.0), alpha, start=start)
        e = np.exp(-np.abs(u))                       # s(u), s(-u), softplus(+-u) from one exp
        tail = np.log1p(e)
        positive = u >= 0
        s = np.where(positive, 1.0, e) / (1.0 + e)
        rest = np.where(positive, e, 1.0) / (1.0 + e)
        # u = inf where a tiny alpha puts L at L0: there dL/dk = 0, and so is its product
        softplus = np.where(np.isinf(u), 0.0, tail + np.maximum(u, 0.0))
        log_l = np.where(b > 0, np.logaddexp(np.log(linf), log_b - tail - np.maximum(-u, 0.0)),
                         np.nan)
        scale = np.exp(-log_l)
        # dL/dk = b s(u) s(-u) / g'(u); 0 where the law saturates at L0 (alpha = 0, k >= 0)
        dl_dk = np.where((alpha <= 0) & (k >= 0), 0.0,
                         b * s * rest / np.maximum(rest + alpha * s, 1e-300))
        ratio = linf / b                             # delta / (1 - delta)
        rows = np.empty((5,) + log_l.shape)
        rows[0] = (1.0 - s + dl_dk * (1.0 - alpha) / b) * scale
        rows[1] = (s * l0 - dl_dk * softplus * alpha
                   + dl_dk * (alpha * (ratio + shrink) - l0 / b)) * scale
        rows[2] = l0 * dl_dk * (shrink - softplus) * scale
        rows[3] = dl_dk * scale
        rows[4] = -dl_dk * log_x * scale
    return log_l, np.moveaxis(rows, 0, -1), u


def _function(X, theta, name):
    z = np.asarray(theta, dtype=float).copy()
    z[..., 3] = np.log(z[..., 3])
    return np.exp(_log_function(X, z, name))


def _data_grid(X, y, name):
    """Starts near the paper's: Linf just below the lowest loss or at half of it, c = 0.5.

    ``log beta`` is set so that the law passes through the median point for each
    start of the other parameters (the paper's first least-squares step does the
    same job); the grid keeps three such values.
    """
    y = np.asarray(y, dtype=float)
    lo, hi = float(y.min()), float(y.max())
    linf = (max(lo - MARGIN, 0.0), 0.5 * lo)
    l0 = (hi + MARGIN, 1.5 * hi + MARGIN)
    alphas, cs = (0.0, 1.0), (0.5,)
    ym = float(np.median(y))
    log_xm = float(np.median(np.log(X[name])))
    betas = [np.log(max(ym - a, 1e-9)) - al * np.log(max(b - ym, 1e-9)) + c * log_xm
             for a in linf for b in l0 for al in alphas for c in cs]
    return {"Linf": linf, "L0": l0, "alpha": alphas, "c": cs,
            "beta": tuple(float(v) for v in np.quantile(betas, (0.1, 0.5, 0.9)))}


def m4_law(*, linf_max: float = np.inf, l0_min: float = 0.0, l0_max: float = np.inf,
           input: str = "x") -> Law:
    """M4 with bounds ``0 <= Linf <= linf_max`` and ``l0_min <= L0 <= l0_max``.

    :func:`paper_bounds` gives the paper's bounds for one curve's losses; ``input``
    names the law's input column (the learning-curve family reads ``"t"``).
    """
    return Law(
        name="m4", inputs=(input,),
        params=(Param("Linf", 0.0, linf_max), Param("L0", l0_min, l0_max),
                Param("alpha", 0.0, np.inf), Param("beta", 0.0, np.inf, log=True),
                Param("c", 0.0, np.inf)),
        formula="(L - Linf) / (L0 - L)^alpha = beta * x^-c",
        function=functools.partial(_function, name=input),
        log_function=functools.partial(_log_function, name=input),
        log_value_and_jacobian=functools.partial(_log_value_and_jacobian, name=input),
        data_grid=functools.partial(_data_grid, name=input),
        description="Estimator M4 of Alabdulmohsin, Neyshabur & Zhai (2022), solved for L.")


def paper_bounds(y, *, upper: float | None = None) -> dict[str, float]:
    """The bounds Alabdulmohsin et al. (2022) keep M4's Linf and L0 within, for losses ``y``.

    ``0 <= Linf <= min(y) - 1e-3`` and ``L0 >= max(y) + 1e-3``; with ``upper`` (1
    for error rates and other metrics bounded by 1) also ``L0 <= upper + 1e-3``.
    """
    y = np.asarray(y, dtype=float)
    return {"linf_max": max(float(y.min()) - MARGIN, 0.0), "l0_min": float(y.max()) + MARGIN,
            "l0_max": np.inf if upper is None else max(upper + MARGIN, float(y.max()) + MARGIN)}


M4 = register_law(m4_law())
