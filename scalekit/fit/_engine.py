"""`fit_law`: batched multi-start fit, polish, standard errors and bootstrap."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.checks import check_choice, check_number, fail
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.executors import worker_count
from scalekit.fit._bootstrap import bootstrap_fits, default_jobs, resample_counts, resample_run_counts
from scalekit.fit._constrain import constrained_law
from scalekit.fit._diagnose import fit_diagnostics
from scalekit.fit._inputs import law_inputs
from scalekit.fit._multistart import distinct_optima, multistart
from scalekit.fit._objective import log_residuals
from scalekit.fit._robust import check_loss
from scalekit.fit._polish import polish
from scalekit.fit._result import FitResult
from scalekit.fit._criteria import information_criteria
from scalekit.fit._uncertainty import (covariance, function_intervals, natural_stderr, percentile_intervals,
                                       wald_intervals)
from scalekit.laws import Law

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
#: What a bootstrap resample draws: whole runs (their points together) or single points.
RESAMPLE = ("runs", "points")


def fit_law(law: Law | str, X: Mapping, y, *, loss: str = "huber", delta: float = 1e-3,
            starts=None, early_stop: bool = True, bootstrap: int = 0, ci_level: float = 0.95,
            seed: int = 0, n_jobs: int | None = None, fixed: Mapping[str, float] | None = None,
            bounds: Mapping[str, tuple[float, float]] | None = None, runs=None,
            resample: str | None = None, prior=None) -> FitResult:
    """Fit ``law`` to points ``(X, y)`` by a robust loss on log residuals.

    The starts of the law's grid run in a seeded random order, many at once, in
    rounds, until the stopping rule of :func:`~scalekit.fit._multistart.multistart`
    says every optimum has been found (or the grid is spent); the best distinct
    optima are polished with L-BFGS-B (:mod:`scalekit.fit._polish`). ``stats``
    says how many starts ran and why the multi-start stopped.

    Parameters
    ----------
    law : Law or str
        A law or a registered name (see :func:`scalekit.laws.available_laws`).
    X : mapping of str to 1-d array, or DataFrame
        The law's inputs, by name or usual symbol (``N``, ``D``, ``C`` for
        ``params``, ``tokens``, ``compute``).
    y : 1-d array
        Positive observations (loss), same length as the inputs.
    loss : {"huber", "squared", "soft_l1"}
        Loss on the log residuals, summed over points (:mod:`scalekit.fit._robust`).
    delta : float
        Huber threshold (Hoffmann et al. 2022 use 1e-3), or the soft-L1 scale.
    starts : array (S, P), optional
        Starts in the fitting space (free parameters only), all of which run; the law's
        grid by default.
    early_stop : bool
        Stop the law's grid early by the stopping rule; False runs every start.
    bootstrap : int
        Resamples, each a multi-start fit (:mod:`scalekit.fit._bootstrap`); 0 gives
        Student-t intervals (``n - p`` degrees of freedom) from the standard errors instead.
    ci_level : float
        Level of every interval.
    seed : int
        Seeds the one :class:`numpy.random.Generator` behind every random choice.
    n_jobs : int, optional
        Processes for the bootstrap; all available CPUs by default. Never more than the
        resamples or the CPUs: when fewer run than ``n_jobs`` asks for, the result's
        ``stats["workers_note"]`` says so.
    fixed : mapping of parameter name to value, optional
        Parameters held at these values (e.g. ``{"E": 1.69}``); reported with
        standard error 0.
    bounds : mapping of parameter name to (lower, upper), optional
        Search ranges in natural units replacing the law's (e.g. ``{"alpha": (0, 1)}``).
    runs : 1-d array, optional
        The run of each point, for the bootstrap over runs.
    resample : {"runs", "points"}, optional
        What a bootstrap resample draws; ``"runs"`` by default when ``runs`` is
        given and some run has several points, else ``"points"``.
    prior : (mean, precision, variance), optional
        A normal prior ``N(mean, precision^-1)`` on the fitting-space parameters (free
        ones), with ``variance`` the likelihood's, by which the loss is read (near 0
        Huber's is ``r^2 / 2``, a normal log-likelihood times ``variance``). Every start
        and the polish minimise the objective plus ``variance (z - mean)^T precision
        (z - mean) / 2``: the posterior mode. The sandwich covariance's bread gains
        ``variance * precision`` and its meat ``variance^2 * precision`` (the prior's
        score), so a parameter the data do not pin keeps the prior's spread.
        ``stats["objective"]`` stays the data's, ``stats["prior_penalty"]`` is the
        penalty. Not with a ``bootstrap``.

    Returns
    -------
    FitResult
    """
    if isinstance(law, str):
        from scalekit.laws import get_law

        law = get_law(law)
    law = constrained_law(law, fixed=fixed, bounds=bounds)
    check_loss(loss, delta)
    bootstrap = check_number("bootstrap", bootstrap, low=0, integer=True)
    check_number("ci_level", ci_level, low=0, high=1, low_open=True, high_open=True)
    check_number("seed", seed, low=0, integer=True)
    if n_jobs is not None:
        check_number("n_jobs", n_jobs, low=1, integer=True)
    X, y = check_points(law, X, y)
    _check_counts(law, X, y)
    prior = _check_prior(prior, len(law.params), bootstrap)
    resample, runs = _check_resample(resample, runs, len(y))
    log_y = np.log(y)
    grid = (law.start_grid(X, y) if starts is None
            else np.atleast_2d(np.asarray(starts, dtype=float)))
    if grid.ndim != 2 or grid.shape[1] != len(law.params) or not np.isfinite(grid).all():
        raise fail("starts", f"an array of shape {grid.shape}",
                   f"a finite array of shape (S, {len(law.params)})")

    rng = np.random.default_rng(seed)
    run = multistart(law, X, log_y, grid, loss=loss, delta=delta, rng=rng,
                     early_stop=bool(early_stop) and starts is None,
                     prior=None if prior is None else prior[:2])
    batch = run.batch
    if not np.isfinite(batch.objective).any():
        raise InputError(f"law {law.name!r} is not finite at any start on these data")
    candidates = distinct_optima(batch.z, batch.objective, N_POLISH)
    near = batch.objective[candidates] <= batch.objective[candidates[0]] * (1 + POLISH_RTOL)
    candidates = batch.z[candidates[near]]
    polished = [polish(law, X, log_y, z, loss=loss, delta=delta,
                       prior=None if prior is None else prior[:2])
                for z in candidates]
    best = min(polished, key=lambda p: p.objective)
    at_best = batch.objective <= best.objective * (1.0 + AT_BEST_RTOL) + AT_BEST_ATOL
    n = len(y)

    cov = covariance(law, X, log_y, best.z, loss=loss, delta=delta,
                     prior=None if prior is None else prior[1:])
    theta = law.to_natural(best.z)
    stats, diagnostics = _fit_stats(law, X, log_y, run, best, at_best, loss=loss, delta=delta,
                                    bootstrap=bootstrap)
    if prior is not None:
        d = best.z - prior[0]
        stats["prior_penalty"] = 0.5 * float(d @ prior[1] @ d)
        stats["objective"] = best.objective - stats["prior_penalty"]
    dof = stats["dof"]
    draws = None
    if bootstrap:
        draws, intervals = _bootstrap_intervals(
            law, X, log_y, batch, best.z, grid, stats, diagnostics, loss=loss, delta=delta,
            bootstrap=bootstrap, rng=rng, n_jobs=n_jobs, ci_level=ci_level, runs=runs,
            resample=resample)
    else:
        intervals = wald_intervals(law, best.z, cov, ci_level, dof)
        stats["ci_method"] = f"Student t ({dof} dof, fitting space)"

    stderr = natural_stderr(law, best.z, cov)
    diagnostics += fit_diagnostics(law, X, best.z, stderr, intervals, draws, ci_level, n)
    fixed_values = dict(law.extra.get("fixed", {}))
    values = {name: float(v) for name, v in zip(law.param_names, theta, strict=True)}
    derived, derived_ci, dropped = _derived(law, values, best.z, cov, draws, ci_level, dof)
    for name, count in dropped.items():
        diagnostics.append(Diagnostic(
            "derived_undefined", "warning", f"`{name}` is not finite in {count} of {len(draws)} "
            "bootstrap resamples (a parameter on its bound, e.g. B = 0); they were left out of "
            f"its interval; read it with care or fix the parameter", param=name, value=count))
    return FitResult(
        law=law, values={**fixed_values, **values},
        stderr={**{name: 0.0 for name in fixed_values},
                **{name: float(v) for name, v in zip(law.param_names, stderr, strict=True)}},
        ci={**{name: (v, v) for name, v in fixed_values.items()},
            **{name: (float(lo), float(hi)) for name, (lo, hi) in zip(law.param_names, intervals,
                                                                      strict=True)}},
        ci_level=ci_level, stats=stats, derived=derived, derived_ci=derived_ci,
        diagnostics=diagnostics, bootstrap_values=draws, covariance=cov)


def _check_prior(prior, P: int, bootstrap: int):
    """``prior`` as (mean (P,), penalty matrix ``variance * precision`` (P, P), variance),
    checked (finite, symmetric, variance >= 0), or None."""
    if prior is None:
        return None
    if bootstrap:
        raise fail("bootstrap", bootstrap, "0 with a `prior`")
    if len(prior) != 3:
        raise fail("prior", f"a sequence of {len(prior)}", "(mean, precision, variance)")
    mean, precision = (np.asarray(a, dtype=float) for a in prior[:2])
    variance = float(prior[2])
    if (mean.shape != (P,) or precision.shape != (P, P) or not np.isfinite(mean).all()
            or not np.isfinite(precision).all() or not np.allclose(precision, precision.T)
            or not np.isfinite(variance) or variance < 0):
        raise fail("prior", f"arrays of shapes {mean.shape} and {precision.shape} and "
                   f"variance {variance:g}", f"a finite mean ({P},), a symmetric finite "
                   f"precision ({P}, {P}) and a variance >= 0")
    return mean, variance * precision, variance


def _fit_stats(law, X, log_y, run, best, at_best, *, loss, delta, bootstrap):
    """The fit's statistics (``FitResult.stats``) and its convergence diagnostic, if any."""
    batch = run.batch
    n, P = len(log_y), len(law.params)
    r = log_residuals(law, X, log_y, best.z)
    diagnostics = []
    batch_converged = bool(batch.converged[at_best].any())
    converged = best.success or batch_converged
    message = (f"converged (L-BFGS-B polish: {best.message.lower()})" if best.success else
               "converged (batched Levenberg-Marquardt; the L-BFGS-B polish found no further "
               "decrease)" if batch_converged else f"not converged: {best.message}")
    if not converged:
        diagnostics.append(Diagnostic("not_converged", "warning",
                                      f"the optimiser did not converge ({best.message}); give "
                                      "other starts or a simpler law"))
    dof = n - P
    stats = {"n_points": n, "n_params": P, "objective": best.objective, "loss": loss,
             "delta": delta, "n_starts": len(run.starts), "n_starts_grid": run.n_grid,
             "n_at_best": int(at_best.sum()), "at_best_rtol": AT_BEST_RTOL,
             "n_optima": run.n_optima, "p_unseen": run.p_unseen, "stop_reason": run.stop_reason,
             "converged": converged, "message": message,
             **information_criteria(r, P),
             "residual_scale": float(np.sqrt((r ** 2).sum() / max(dof, 1))),
             "dof": dof, "bootstrap": bootstrap,
             "input_range": {name: [float(X[name].min()), float(X[name].max())]
                             for name in law.inputs}}
    if {"params", "tokens"} <= set(law.inputs):
        nd = X["params"] * X["tokens"]
        stats["nd_range"] = [float(nd.min()), float(nd.max())]
    if law.extra.get("fixed"):
        stats["fixed"] = sorted(law.extra["fixed"])
    return stats, diagnostics


def _bootstrap_intervals(law, X, log_y, batch, z, grid, stats, diagnostics, *, loss, delta,
                         bootstrap, rng, n_jobs, ci_level, runs, resample):
    """The bootstrap draws and percentile intervals; what it did joins ``stats`` and a
    resample with no finite fit ``diagnostics``."""
    workers, note = worker_count(default_jobs(n_jobs), bootstrap)
    if note and n_jobs is not None:
        stats["workers_note"] = note
    draws, failed = _bootstrap(law, X, log_y, batch, z, grid, loss=loss, delta=delta,
                               n_resamples=bootstrap, rng=rng, n_jobs=workers,
                               runs=runs if resample == "runs" else None)
    if failed:
        diagnostics.append(Diagnostic(
            "not_converged", "warning", f"{failed} of {bootstrap} bootstrap resamples gave "
            "no finite fit and were left out, so the intervals may be too narrow; check the "
            "not_identified notes", value=failed))
    stats["ci_method"] = "bootstrap percentile (expanded)"
    stats["resample"] = resample
    if resample == "runs":
        stats["n_runs"] = int(len(np.unique(runs)))
    return draws, percentile_intervals(draws, ci_level, stats["dof"])


def _derived(law, values, z, cov, draws, level, dof):
    """The law's derived quantities, their intervals (same draws as the parameters) and
    how many draws each left out because it is not finite there (a parameter on its
    bound, such as ``B = 0`` for Chinchilla's ``G``)."""
    if law.derive is None:
        return {}, {}, {}
    derived = dict(law.derive(values))
    names = [k for k, v in derived.items() if isinstance(v, (int, float, np.floating))]
    if not names:
        return derived, {}, {}

    def function(theta):
        out = law.derive(dict(zip(law.param_names, theta, strict=True)))
        values = np.array([out[k] for k in names], dtype=float)
        return np.where(np.isfinite(values), values, np.nan)   # left out of the percentiles

    dropped = {}
    with np.errstate(all="ignore"):
        if draws is not None and len(draws):
            bad = ~np.isfinite(np.array([function(theta) for theta in draws]))
            dropped = {k: int(n) for k, n in zip(names, bad.sum(axis=0), strict=True) if n}
        ends = function_intervals(function, law, z, cov, draws, level, dof)
    return derived, {k: (float(lo), float(hi)) for k, (lo, hi) in zip(names, ends, strict=True)}, dropped


def _check_resample(resample, runs, n):
    if resample is not None:
        check_choice("resample", resample, RESAMPLE)
    if runs is None:
        if resample == "runs":
            raise InputError("resample='runs' needs the run of each point (runs=...)")
        return "points", None
    runs = np.asarray(runs)
    if runs.shape != (n,):
        raise fail("runs", f"an array of shape {runs.shape}", f"a 1-d array of {n} run labels")
    several = len(np.unique(runs)) < n
    return (resample or ("runs" if several else "points")), runs


def _bootstrap(law, X, log_y, batch, best_z, grid, *, loss, delta, n_resamples, rng, n_jobs,
               runs=None):
    counts = (resample_counts(rng, len(log_y), n_resamples) if runs is None
              else resample_run_counts(rng, runs, n_resamples))
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


def check_points(law: Law, X, y) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The law's inputs as arrays and ``y``, checked: same shape, finite, ``y > 0``."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise fail("y", f"an array of shape {y.shape}", "a 1-d array")
    inputs = law_inputs(law, X)
    for name, column in inputs.items():
        if column.shape != y.shape:
            raise InputError(f"input {name!r} has shape {column.shape}, but y has {y.shape}")
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            raise InputError(f"input {name!r} is not finite at point {bad[0]}")
    bad = np.flatnonzero(~(np.isfinite(y) & (y > 0)))
    if bad.size:
        raise InputError(f"y must be positive and finite (its log is fitted), but point "
                         f"{bad[0]} is {y[bad[0]]!r}")
    return inputs, y


def _check_counts(law: Law, inputs, y) -> None:
    """More points, and distinct points, than parameters; ``y`` not constant."""
    if len(y) <= len(law.params):
        raise InputError(f"law {law.name!r} has {len(law.params)} parameters, so it needs more "
                         f"than {len(law.params)} points, but got {len(y)}: add runs, fit every "
                         "checkpoint (`all_points`) or a law with fewer parameters (`law`)")
    distinct = len(np.unique(np.column_stack(list(inputs.values())), axis=0))
    if distinct <= len(law.params):
        raise InputError(f"law {law.name!r} has {len(law.params)} free parameters, so it needs "
                         f"more than {len(law.params)} distinct points (values of "
                         f"{', '.join(law.inputs)}), but the {len(y)} points hold {distinct}: "
                         "add runs or fit a law with fewer parameters (`law`)")
    if np.ptp(y) == 0:
        raise InputError(f"every point has the same metric value ({y[0]:g}), but a law needs "
                         "it to vary: check the metric column")
