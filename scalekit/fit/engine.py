"""`fit_law`: batched multi-start fit, polish, standard errors and bootstrap."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.checks import check_number, fail
from scalekit.errors import InputError
from scalekit.fit.bootstrap import bootstrap_fits, default_jobs, resample_counts
from scalekit.fit.multistart import distinct_optima, minimize_batch
from scalekit.fit.objective import check_loss, log_residuals
from scalekit.fit.polish import polish
from scalekit.fit.result import FitResult
from scalekit.fit.select import information_criteria
from scalekit.fit.uncertainty import (covariance, natural_stderr, percentile_intervals,
                                      wald_intervals)
from scalekit.laws.base import Law

#: Starts whose objective is within this relative tolerance of the best count as "at best"
#: (or within ``AT_BEST_ATOL``, for data the law fits exactly).
AT_BEST_RTOL = 1e-6
AT_BEST_ATOL = 1e-20
#: At most this many distinct candidate optima are polished with scipy: the best
#: one and others within ``POLISH_RTOL`` of its objective (a local polish does not
#: turn a clearly worse optimum into the best one).
N_POLISH = 5
POLISH_RTOL = 1e-3
#: Starts of each bootstrap resample: the best fit and up to this many other distinct
#: optima of the full fit within ``BOOTSTRAP_OPTIMA_RTOL`` of the best objective ...
BOOTSTRAP_OPTIMA = 8
BOOTSTRAP_OPTIMA_RTOL = 0.1
#: ... plus this many drawn at random from the law's start grid.
BOOTSTRAP_RANDOM_STARTS = 8


def fit_law(law: Law | str, X: Mapping, y, *, loss: str = "huber", delta: float = 1e-3,
            starts=None, bootstrap: int = 0, ci_level: float = 0.95, seed: int = 0,
            n_jobs: int | None = None) -> FitResult:
    """Fit ``law`` to points ``(X, y)`` by a robust loss on log residuals.

    Every start of the law's grid (or ``starts``) is optimised at once by
    :func:`~scalekit.fit.multistart.minimize_batch`; the best distinct optima are
    polished with L-BFGS-B (:mod:`scalekit.fit.polish`).

    Parameters
    ----------
    law : Law or str
        A law or a registered name (see :func:`scalekit.laws.available_laws`).
    X : mapping of str to 1-d array, or DataFrame
        The law's inputs.
    y : 1-d array
        Positive observations (loss), same length as the inputs.
    loss : {"huber", "squared"}
        Loss on the log residuals, summed over points (:mod:`scalekit.fit.objective`).
    delta : float
        Huber threshold (Hoffmann et al. 2022 use 1e-3).
    starts : array (S, P), optional
        Starts in the fitting space; the law's grid by default.
    bootstrap : int
        Resamples of the points, each a multi-start fit (:mod:`scalekit.fit.bootstrap`);
        0 gives normal intervals from the standard errors instead.
    ci_level : float
        Level of every interval.
    seed : int
        Seeds the one :class:`numpy.random.Generator` behind every random choice.
    n_jobs : int, optional
        Processes for the bootstrap; all available CPUs by default.

    Returns
    -------
    FitResult
    """
    if isinstance(law, str):
        from scalekit.laws import get_law

        law = get_law(law)
    check_loss(loss, delta)
    bootstrap = check_number("bootstrap", bootstrap, low=0, integer=True)
    check_number("ci_level", ci_level, low=0, high=1, low_open=True, high_open=True)
    check_number("seed", seed, low=0, integer=True)
    if n_jobs is not None:
        check_number("n_jobs", n_jobs, low=1, integer=True)
    X, y = _check_points(law, X, y)
    log_y = np.log(y)
    grid = (law.start_grid(X, y) if starts is None
            else np.atleast_2d(np.asarray(starts, dtype=float)))
    if grid.ndim != 2 or grid.shape[1] != len(law.params) or not np.isfinite(grid).all():
        raise fail("starts", f"an array of shape {grid.shape}",
                   f"a finite array of shape (S, {len(law.params)})")

    batch = minimize_batch(law, X, log_y, grid, loss=loss, delta=delta)
    if not np.isfinite(batch.objective).any():
        raise InputError(f"law {law.name!r} is not finite at any start on these data")
    candidates = distinct_optima(batch.z, batch.objective, N_POLISH)
    near = batch.objective[candidates] <= batch.objective[candidates[0]] * (1 + POLISH_RTOL)
    candidates = batch.z[candidates[near]]
    polished = [polish(law, X, log_y, z, loss=loss, delta=delta) for z in candidates]
    best = min(polished, key=lambda p: p.objective)
    at_best = batch.objective <= best.objective * (1.0 + AT_BEST_RTOL) + AT_BEST_ATOL
    n = len(y)
    P = len(law.params)

    cov = covariance(law, X, log_y, best.z, loss=loss, delta=delta)
    theta = law.to_natural(best.z)
    r = log_residuals(law, X, log_y, best.z)
    warnings = []
    batch_converged = bool(batch.converged[at_best].any())
    converged = best.success or batch_converged
    message = (f"converged (L-BFGS-B polish: {best.message.lower()})" if best.success else
               "converged (batched Levenberg-Marquardt; the L-BFGS-B polish found no further "
               "decrease)" if batch_converged else f"not converged: {best.message}")
    if not converged:
        warnings.append(f"the optimiser did not converge: {best.message}")
    if not np.isfinite(np.diagonal(cov)).all():
        warnings.append("standard errors are undefined: the curvature matrix of the "
                        "objective is singular at the optimum")
    lower, upper = law.fitting_bounds()
    for name, zk, lo, hi in zip(law.param_names, best.z, lower, upper):
        if np.isclose(zk, lo) or np.isclose(zk, hi):
            warnings.append(f"parameter {name} sits at its bound")

    stats = {"n_points": n, "n_params": P, "objective": best.objective, "loss": loss,
             "delta": delta, "n_starts": len(grid), "n_at_best": int(at_best.sum()),
             "at_best_rtol": AT_BEST_RTOL, "converged": converged, "message": message,
             **information_criteria(r, P),
             "residual_scale": float(np.sqrt((r ** 2).sum() / max(n - P, 1))),
             "bootstrap": bootstrap}

    draws = None
    if bootstrap:
        draws, failed = _bootstrap(law, X, log_y, batch, best.z, grid, loss=loss, delta=delta,
                                   n_resamples=bootstrap, seed=seed, n_jobs=default_jobs(n_jobs))
        if failed:
            warnings.append(f"{failed} of {bootstrap} bootstrap resamples gave no finite fit "
                            "and were left out")
        intervals = percentile_intervals(draws, ci_level)
        stats["ci_method"] = "bootstrap percentile"
    else:
        intervals = wald_intervals(law, best.z, cov, ci_level)
        stats["ci_method"] = "normal (fitting space)"

    values = {name: float(v) for name, v in zip(law.param_names, theta)}
    return FitResult(
        law=law, values=values,
        stderr={name: float(v) for name, v in
                zip(law.param_names, natural_stderr(law, best.z, cov))},
        ci={name: (float(lo), float(hi)) for name, (lo, hi) in zip(law.param_names, intervals)},
        ci_level=ci_level, stats=stats,
        derived=dict(law.derive(values)) if law.derive is not None else {},
        warnings=warnings, bootstrap_values=draws, covariance=cov)


def _bootstrap(law, X, log_y, batch, best_z, grid, *, loss, delta, n_resamples, seed, n_jobs):
    rng = np.random.default_rng(seed)
    counts = resample_counts(rng, len(log_y), n_resamples)
    others = distinct_optima(batch.z, batch.objective, BOOTSTRAP_OPTIMA + 1)[1:]
    others = others[batch.objective[others] <= batch.objective.min() * (1 + BOOTSTRAP_OPTIMA_RTOL)]
    optima = np.vstack([best_z, batch.z[others]])
    n_random = min(BOOTSTRAP_RANDOM_STARTS, len(grid))
    picks = np.stack([rng.choice(len(grid), n_random, replace=False) for _ in range(n_resamples)])
    starts = np.concatenate([np.broadcast_to(optima, (n_resamples,) + optima.shape),
                             grid[picks]], axis=1)
    z, objective = bootstrap_fits(law, X, log_y, counts, starts, loss=loss, delta=delta,
                                  n_jobs=n_jobs)
    ok = np.isfinite(objective)
    return law.to_natural(z[ok]), int((~ok).sum())


def _check_points(law: Law, X, y) -> tuple[dict[str, np.ndarray], np.ndarray]:
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise fail("y", f"an array of shape {y.shape}", "a 1-d array")
    inputs = {}
    for name in law.inputs:
        if name not in X:
            raise InputError(f"law {law.name!r} needs input {name!r}, which X does not have")
        column = np.asarray(X[name], dtype=float)
        if column.shape != y.shape:
            raise InputError(f"input {name!r} has shape {column.shape}, but y has {y.shape}")
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            raise InputError(f"input {name!r} is not finite at point {bad[0]}")
        inputs[name] = column
    bad = np.flatnonzero(~(np.isfinite(y) & (y > 0)))
    if bad.size:
        raise InputError(f"y must be positive and finite (its log is fitted), but point "
                         f"{bad[0]} is {y[bad[0]]!r}")
    if len(y) <= len(law.params):
        raise InputError(f"law {law.name!r} has {len(law.params)} parameters, so it needs more "
                         f"than {len(law.params)} points, but got {len(y)}")
    return inputs, y
