"""Batched bounded nonlinear least squares: a scaled Levenberg–Marquardt trust region.

Minimises ``f(z) = 1/2 |r(z)|^2`` from many starts at once (each row of a batch is
its own problem: rows never interact), for models with few parameters. Each
iteration stacks the rows' small normal equations and solves them in one
:func:`numpy.linalg.solve`:

    (J^T J + mu D^2) s = -J^T r,

with ``D^2`` the running maximum of the diagonal of ``J^T J`` (the column norms
of the Jacobian: Moré's scaling, "The Levenberg-Marquardt algorithm:
implementation and theory", Lecture Notes in Mathematics 630, 1978, which is
also ``x_scale="jac"`` in :func:`scipy.optimize.least_squares`), so the steps do
not depend on the units of the parameters. The damping ``mu`` follows the gain
ratio ``rho`` (actual over predicted reduction) by Nielsen's rule (H. B. Nielsen,
"Damping parameter in Marquardt's method", IMM-REP-1999-05, DTU): after a step
with ``rho > 0`` it is kept and ``mu`` is multiplied by ``max(1/3, 1 - (2 rho -
1)^3)``; otherwise it is refused and ``mu`` grows by a factor that doubles at each
refusal in a row. There is no cap on a step's length: along a long, nearly
straight valley the accepted steps grow geometrically.

Bounds are kept by projection; a coordinate at a bound whose gradient pushes it out
of the box is held there and the step is solved for the others. A row stops once
an accepted step lowers ``f`` by at most ``ftol f`` and moves no scaled coordinate
by more than ``xtol (|D z| + xtol)``, once the Gauss–Newton model predicts no
reduction above ``ftol f`` (a stationary point, bounds included), or once the
damping reaches ``1e16`` (no step lowers ``f`` any more).
"""

from __future__ import annotations

import numpy as np

from scalekit.fit._multistart import BatchResult

_MU_START = 1e-3
_MU_MAX = 1e16
_F_EXACT = 1e-30   # objectives below this count as exact


def least_squares_batch(evaluate, starts: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                        *, max_iter: int = 1000, ftol: float = 1e-13,
                        xtol: float = 1e-12) -> BatchResult:
    """Minimise ``1/2 |r(z)|^2`` from every row of ``starts`` within ``[lower, upper]``.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(z, rows)`` gives the residuals (a, n) and their Jacobian (a, n, P)
        at ``z`` (a, P) for the batch rows ``rows`` (an index array of length a).
    starts, lower, upper : ndarray (S, P)
        Starting points (projected into the box) and the box, per row.
    max_iter, ftol, xtol
        Iteration cap and stopping tolerances (see the module docstring).

    Returns
    -------
    BatchResult
        Per row: ``z``, ``objective`` (``1/2 |r|^2``, ``inf`` where not finite), whether
        it ``converged`` (met a stopping rule before ``max_iter``), its ``iterations``
        (one evaluation each).
    """
    z_out = np.clip(np.asarray(starts, dtype=float), lower, upper)
    S, P = z_out.shape
    rows = np.arange(S)
    with np.errstate(all="ignore"):
        r, J = evaluate(z_out, rows)
        f = _objective(r)
    f_out, converged = f.copy(), np.zeros(S, dtype=bool)
    iterations = np.zeros(S, dtype=int)
    live = np.isfinite(f)
    rows, z, f, r, J = rows[live], z_out[live], f[live], r[live], J[live]
    lower, upper = np.asarray(lower, float)[live], np.asarray(upper, float)[live]
    H, g = _normal(J, r)
    d2 = np.diagonal(H, axis1=-2, axis2=-1).copy()
    mu = np.full(len(rows), _MU_START)
    nu = np.full(len(rows), 2.0)
    eye = np.eye(P)
    for _ in range(max_iter):
        if rows.size == 0:
            break
        with np.errstate(all="ignore"):
            held = ((z <= lower) & (g > 0)) | ((z >= upper) & (g < 0))
            free = ~held
            both = free[:, :, None] & free[:, None, :]
            gf = np.where(free, g, 0.0)
            scale = np.maximum(d2, 1e-12 * d2.max(axis=-1, keepdims=True) + 1e-300)
            system = np.where(both, H + (mu[:, None] * scale)[:, :, None] * eye, eye)
            step = -np.linalg.solve(system, gf[..., None])[..., 0]
            step = np.where(np.isfinite(step), step, 0.0)
            z_try = np.clip(z + step, lower, upper)
            s = z_try - z
            predicted = -(np.einsum("ap,ap->a", g, s)
                          + 0.5 * np.einsum("ap,apq,aq->a", s, H, s))
            r_try, J_try = evaluate(z_try, rows)
            f_try = _objective(r_try)
            iterations[rows] += 1
            gain = f - f_try
            rho = np.where(predicted > 0, gain / predicted, -1.0)
            accept = (rho > 0) & (gain > 0)
            small_f = gain <= ftol * f + _F_EXACT
            dz = np.sqrt(scale)
            small_z = (np.abs(s) * dz).max(axis=-1) <= xtol * ((np.abs(z) * dz).max(axis=-1) + xtol)
            # The Gauss-Newton model at z (free coordinates, no damping): its predicted
            # reduction bounds what any step of this row could still gain near z.
            newton = np.linalg.solve(np.where(both, H + (1e-12 * scale)[:, :, None] * eye, eye),
                                     gf[..., None])
            decrement = 0.5 * np.einsum("ap,ap->a", gf, newton[..., 0])
        stationary = np.isfinite(decrement) & (decrement <= ftol * f + _F_EXACT)
        done = stationary | (accept & small_f & small_z) | (mu >= _MU_MAX) | (f <= _F_EXACT)
        z = np.where(accept[:, None], z_try, z)
        f = np.where(accept, f_try, f)
        factor = np.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
        mu = np.where(accept, mu * factor, mu * nu)
        nu = np.where(accept, 2.0, 2.0 * nu)
        if accept.any():
            H_try, g_try = _normal(J_try[accept], r_try[accept])
            H[accept], g[accept] = H_try, g_try
            d2[accept] = np.maximum(d2[accept], np.diagonal(H_try, axis1=-2, axis2=-1))
        if done.any():
            z_out[rows], f_out[rows] = z, f
            converged[rows[done]] = True
            keep = ~done
            rows, z, f, mu, nu, H, g, d2 = (a[keep] for a in (rows, z, f, mu, nu, H, g, d2))
            lower, upper = lower[keep], upper[keep]
    z_out[rows], f_out[rows] = z, f
    return BatchResult(z_out, f_out, converged, iterations)


def _objective(r: np.ndarray) -> np.ndarray:
    f = 0.5 * np.einsum("an,an->a", r, r)
    return np.where(np.isfinite(f), f, np.inf)


def _normal(J: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``J^T J`` (a, P, P) and ``J^T r`` (a, P); the identity and 0 where not finite."""
    H = np.einsum("anp,anq->apq", J, J)
    g = np.einsum("anp,an->ap", J, r)
    bad = ~(np.isfinite(H).all(axis=(-2, -1)) & np.isfinite(g).all(axis=-1))
    if bad.any():
        H[bad], g[bad] = np.eye(H.shape[-1]), 0.0
    return H, g
