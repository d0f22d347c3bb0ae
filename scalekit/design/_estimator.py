"""The estimator a design fits its law by (loss, threshold, scale): one for the criterion
that chooses the runs and for the final answer they give.

``scale="log"`` fits the log values with the engine's loss (``huber``, ``squared``,
``soft_l1``); ``scale="raw"`` is least squares on the values themselves,
``sum (f(x) - y)^2`` (what R² on the values scores, and Li et al. 2026's objective).
In the log coordinates every fit here works in, a raw residual is ``y r`` to first
order (``r`` the log residual), so raw least squares is least squares on log
residuals weighted by ``y^2`` (:meth:`Estimator.weights`): the multi-start and the
criterion's Laplace posterior use those weights (a run of value ``y`` is observed with
log variance ``s^2 / y^2``, ``s^2`` the raw noise), and the final fit is polished on the
exact raw residuals.

Where Huber's (or soft-L1's) threshold is not given, it is set from the residual noise:
:data:`HUBER_K` robust standard deviations of the log residuals of a least-squares fit
(Huber 1964's 1.345: 95% efficiency under normal noise), so that the loss is a least
squares fit that only caps the outliers, at any noise level.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from scalekit.checks import check_choice, check_number, fail
from scalekit.fit import (LOSSES, fit_diagnostics, fit_law, fit_with_prior, log_residuals,
                          log_value_and_jacobian, minimize_batch, multistart, natural_stderr,
                          wald_intervals)

SCALES = ("log", "raw")
#: The default estimator, chosen by leave-one-task-out over the six ScaleBench tasks
#: (docs/design.md).
DEFAULT_LOSS, DEFAULT_DELTA, DEFAULT_SCALE = "huber", None, "log"
#: A threshold not given is this many robust standard deviations of the log residuals ...
HUBER_K = 1.345
#: ... and at least this (a least-squares fit through few runs can be near exact).
DELTA_FLOOR = 1e-4


@dataclass(frozen=True)
class Estimator:
    """``loss`` (one of :data:`scalekit.fit.LOSSES`) on the ``scale`` (``log`` or ``raw``)
    residuals; ``delta`` the threshold of ``huber`` and ``soft_l1`` in log units (None:
    set from the residual noise). ``raw`` is least squares only."""

    loss: str = DEFAULT_LOSS
    delta: float | None = DEFAULT_DELTA
    scale: str = DEFAULT_SCALE

    def __post_init__(self):
        check_choice("loss", self.loss, LOSSES)
        check_choice("scale", self.scale, SCALES)
        if self.delta is not None:
            check_number("delta", self.delta, low=0, low_open=True)
        if self.scale == "raw" and self.loss != "squared":
            raise fail("loss", self.loss, "'squared' with `scale` 'raw' (least squares on "
                       "the values)")

    @property
    def auto(self) -> bool:
        """True when the threshold is set from the residuals."""
        return self.loss != "squared" and self.delta is None

    def weights(self, y: np.ndarray) -> np.ndarray | None:
        """Weights of the squared log residuals (``raw``: ``(y / rms(y))^2``), else None."""
        if self.scale == "log":
            return None
        y = np.asarray(y, dtype=float)
        return (y / np.sqrt(np.mean(y * y))) ** 2

    def threshold(self, law, X, log_y, z) -> float:
        """The loss's ``delta``: as given, else ``HUBER_K`` robust standard deviations of
        the log residuals at ``z`` (at least ``DELTA_FLOOR``); 1 for least squares."""
        if self.loss == "squared":
            return 1.0
        if self.delta is not None:
            return float(self.delta)
        r = log_residuals(law, X, log_y, z)
        r = r[np.isfinite(r)]
        spread = 1.4826 * float(np.median(np.abs(r))) if len(r) else 0.0
        return max(HUBER_K * spread, DELTA_FLOOR)

    def fit(self, law, X, log_y, starts, *, rng, early_stop: bool) -> np.ndarray | None:
        """Best fitting-space optimum of the engine's batched multi-start from ``starts``
        (no polish): least squares first where the threshold is set from its residuals,
        then the loss from that optimum; None if no start is finite."""
        loss, delta = ("squared", 1.0) if self.auto else (self.loss, self.delta or 1.0)
        run = multistart(law, X, log_y, starts, loss=loss, delta=delta, rng=rng,
                         early_stop=early_stop, weights=self.weights(np.exp(log_y)))
        best = int(np.argmin(run.batch.objective))
        if not np.isfinite(run.batch.objective[best]):
            return None
        z = run.batch.z[best]
        if self.auto:
            delta = self.threshold(law, X, log_y, z)
            again = minimize_batch(law, X, log_y, z[None], loss=self.loss, delta=delta)
            if np.isfinite(again.objective[0]):
                z = again.z[0]
        return z

    def noise(self, law, X, log_y, z) -> float:
        """The residual variance at ``z`` (log units; ``raw``: of the weighted residuals,
        i.e. the raw variance over ``rms(y)^2``), ``n - P`` degrees of freedom."""
        r = log_residuals(law, X, log_y, z)
        w = self.weights(np.exp(log_y))
        r2 = r * r if w is None else w * r * r
        return float(np.nansum(r2)) / max(len(r) - len(law.params), 1)


def final_fit(law, X, y, *, loss: str = DEFAULT_LOSS, delta: float | None = DEFAULT_DELTA,
              scale: str = DEFAULT_SCALE, seed: int = 0):
    """The fit of the final answer, by the estimator the design chose its runs with:
    the engine's (:func:`scalekit.fit.fit_law`: the law's grid, stopping rule, polish)
    with ``loss`` and ``delta`` on the log values (``delta`` None: set from the residual
    noise of a least-squares fit, see the module docstring), or with ``scale="raw"``
    least squares on the values (the engine's multi-start weighted as the module
    docstring says, then polished on the raw residuals); with no more distinct runs
    than the law has parameters, the most probable law under a weak prior
    (:func:`scalekit.fit.fit_with_prior`, marked ``prior_fit``)."""
    estimator = Estimator(loss, delta, scale)
    if distinct_runs(law, X) <= len(law.params):
        return fit_with_prior(law, X, y, seed=seed)
    if estimator.scale == "raw":
        return _raw_fit(law, X, np.asarray(y, dtype=float), estimator, seed)
    if not estimator.auto:
        return fit_law(law, X, y, loss=loss, delta=estimator.delta or 1e-3, seed=seed)
    first = fit_law(law, X, y, loss="squared", seed=seed)
    z = law.to_fitting(first.theta)
    threshold = estimator.threshold(law, {c: np.asarray(X[c], float) for c in law.inputs},
                                    np.log(np.asarray(y, float)), z)
    return fit_law(law, X, y, loss=loss, delta=threshold, starts=z[None], seed=seed)


def distinct_runs(law, X) -> int:
    """How many distinct rows of the law's inputs ``X`` holds."""
    return len(np.unique(np.column_stack([np.asarray(X[c], float) for c in law.inputs]), axis=0))


def _raw_fit(law, X, y, estimator, seed):
    """Least squares on the values: the log fit's grid weighted by ``y^2`` finds the
    basin, scipy's bounded trust-region polish on ``f(x) - y`` the optimum; the
    engine's log fit supplies the statistics that do not depend on the scale."""
    from scipy.optimize import least_squares

    base = fit_law(law, X, y, loss="squared", seed=seed)
    X = {c: np.asarray(X[c], float) for c in law.inputs}
    log_y = np.log(y)
    rng = np.random.default_rng(seed)
    weighted = estimator.fit(law, X, log_y, law.start_grid(X, y), rng=rng, early_stop=True)
    lower, upper = law.fitting_bounds()
    span = np.where(np.isfinite(upper - lower), upper - lower, 1.0)
    best, best_cost = law.to_fitting(base.theta), np.inf
    for start in [z for z in (weighted, best) if z is not None]:
        start = np.clip(start, lower + 1e-9 * span, upper - 1e-9 * span)
        with np.errstate(all="ignore"):
            fit = least_squares(lambda z: np.exp(law.log_predict_fitting(X, z)) - y, start,
                                bounds=(lower, upper), method="trf", max_nfev=200 * len(start))
        if np.isfinite(fit.cost) and fit.cost < best_cost:
            best, best_cost = fit.x, fit.cost
    value, J = log_value_and_jacobian(law, X, best)
    fitted = np.exp(value)
    n, P = len(y), len(law.params)
    dof = n - P
    raw_noise = float(np.sum((fitted - y) ** 2)) / max(dof, 1)
    J_raw = np.nan_to_num(fitted[:, None] * J)
    cov = raw_noise * np.linalg.pinv(J_raw.T @ J_raw)
    stderr = natural_stderr(law, best, cov)
    intervals = wald_intervals(law, best, cov, base.ci_level, dof)
    r = value - log_y
    stats = {**base.stats, "objective": 0.5 * float(np.sum((fitted - y) ** 2)),
             "loss": "squared", "scale": "raw", "delta": None,
             "residual_scale": float(np.sqrt(np.sum(r * r) / max(dof, 1))),
             "raw_residual_scale": float(np.sqrt(raw_noise)),
             "ci_method": f"Student t ({dof} dof, fitting space; raw least squares)"}
    names = law.param_names
    theta = law.to_natural(best)
    keep = [d for d in base.diagnostics if d.code in ("not_converged",)]
    return replace(base, values={k: float(v) for k, v in zip(names, theta, strict=True)},
                   stderr={k: float(v) for k, v in zip(names, stderr, strict=True)},
                   ci={k: (float(lo), float(hi)) for k, (lo, hi) in
                       zip(names, intervals, strict=True)},
                   stats=stats, covariance=cov, derived={}, derived_ci={},
                   bootstrap_values=None,
                   diagnostics=keep + fit_diagnostics(law, X, best, stderr, intervals, None,
                                                      base.ci_level, n))
