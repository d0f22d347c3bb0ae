"""Whole-curve forecasts for other learning-rate schedules with the multi-power law.

:func:`fit_multipower` fits :func:`scalekit.laws._multipower.multipower_law` to
several runs of one model at once (shared parameters, each run its own schedule)
through the shared fit engine, with the Huber loss (delta 1e-3) on log residuals
as Luo et al. (2025) do, and by default a weakly informative normal prior on the
shape (ln C, ln beta, ln gamma; see :func:`fit_multipower`).
:func:`multipower_forecast` predicts other schedules from that fit and, with
``evaluate``, scores the runs not fitted by the paper's measures
(mean and worst relative error |L - L̂| / L over a run's points, R²).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalekit.diagnostics import Diagnostic
from scalekit.checks import check_number
from scalekit.errors import InputError
from scalekit.formatting import collapse_notes, format_interval, format_number
from scalekit.results import ResultProtocol, frame_from_records
from scalekit.schedules import Schedule, parse_schedule, schedule_from_series
from scalekit.laws import (MULTIPOWER_PARAMS as PARAMS, ScheduleTerms, multipower_law,
                           multipower_value_and_jacobian)

#: Two-sided interval levels of the predictions (normal on the log loss, delta method).
LEVELS = (0.8, 0.95)
_Z = {0.8: 1.2815515655446004, 0.95: 1.959963984540054}
#: Start of the shape parameters (C, beta, gamma) for every fit (the repository's start,
#: thu-yao-01-luo/MultiPowerLaw), and the centre of their prior.
_SHAPE_START = (1.0, 0.5, 0.5)
#: Standard deviation of the default prior on ln C, ln beta, ln gamma: a factor e.
SHAPE_PRIOR = 1.0
#: Exponents tried for the closed-form start of (L0, A, alpha, B).
_ALPHAS = np.linspace(0.1, 1.0, 19)


def run_schedules(frame: pd.DataFrame, *, specs: Mapping[str, str | Schedule] | None = None,
                  total_steps: Mapping[str, int] | None = None) -> dict[str, Schedule]:
    """Each run's schedule: from ``specs`` (run -> spec or Schedule), else its ``lr`` series.

    ``total_steps`` (run -> steps) sets the end of a schedule read from a series.
    Runs with neither are left out.
    """
    specs, total_steps = dict(specs or {}), dict(total_steps or {})
    out = {}
    for run, curve in frame.groupby("run", sort=True):
        run = str(run)
        given = specs.get(run)
        if isinstance(given, Schedule):
            out[run] = given
        elif given is not None:
            out[run] = parse_schedule(given, name=run)
        elif "lr" in curve.columns and curve["lr"].notna().any():
            out[run] = schedule_from_series(curve["step"], curve["lr"], name=run,
                                            total_steps=total_steps.get(run))
    return out


def _points(frame, run, y, schedule):
    curve = frame.loc[frame["run"].astype(str) == run, ["step", y]].dropna()
    curve = curve[(curve["step"] > 0) & (curve["step"] <= schedule.total_steps)]
    return curve["step"].to_numpy(np.int64), curve[y].to_numpy(float)


def _start(schedules, steps, losses):
    """(L0, A, alpha, B) by least squares of L0 + A S1^-alpha - B (eta_max - eta) for each
    alpha of a grid; the shape parameters at :data:`_SHAPE_START` (fitting space)."""
    s1 = np.concatenate([s.area(t) for s, t in zip(schedules, steps, strict=True)])
    eta = np.concatenate([s.rates[np.minimum(t, s.total_steps - 1)]
                          for s, t in zip(schedules, steps, strict=True)])
    y = np.concatenate(losses)
    best = None
    for alpha in _ALPHAS:
        M = np.c_[np.ones_like(s1), s1 ** -alpha, eta - eta.max()]
        coef = np.linalg.lstsq(M, y, rcond=None)[0]
        sse = float(((M @ coef - y) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, alpha, coef)
    _, alpha, (L0, A, B) = best
    return np.r_[L0, np.log([max(A, 1e-3), alpha, max(B, 1.0), *_SHAPE_START])]


def fit_multipower(frame: pd.DataFrame, *, fit_on: Sequence[str], schedules: Mapping[str,
                   Schedule], y: str = "loss", delta: float = 1e-3, seed: int = 0,
                   shape_prior: float | None = SHAPE_PRIOR):
    """Fit the multi-power law to the runs ``fit_on`` at once; return the engine's FitResult.

    On a few runs of one horizon the loss drop's shape is not identified: B, C and
    beta trade off along a valley of the objective whose far end extrapolates to
    longer runs badly (docs/schedules.md). ``shape_prior`` is the standard deviation
    of a normal prior on ln C, ln beta and ln gamma, centred on the start (C, beta,
    gamma) = (1, 0.5, 0.5); the fit is then the posterior mode, with the Huber loss
    read as a normal likelihood of variance s² (the residual variance of the free
    fit) inflated by (1 + phi) / (1 - phi), phi the residuals' lag-1 autocorrelation
    within a run (the information of an AR(1) series). ``None`` fits them freely.
    """
    from scalekit.fit import fit_law, log_residuals

    missing = [run for run in fit_on if run not in schedules]
    if missing:
        raise InputError(f"The value of `fit_on` names run {missing[0]!r}, but it has no "
                         "learning-rate schedule (an lr column or a spec)")
    chosen = [schedules[run] for run in fit_on]
    steps, losses = zip(*(_points(frame, run, y, s) for run, s in zip(fit_on, chosen,
                                                                      strict=True)), strict=True)
    for run, t in zip(fit_on, steps, strict=True):
        if t.size < 3:
            raise InputError(f"run {run!r} has {t.size} points inside its schedule; the fit "
                             "needs at least 3 per run")
    curve = np.concatenate([np.full(t.size, i) for i, t in enumerate(steps)])
    X, y_all = {"curve": curve, "step": np.concatenate(steps)}, np.concatenate(losses)
    start = _start(chosen, steps, losses)
    law = multipower_law(chosen)
    fit = fit_law(law, X, y_all, starts=start[None], delta=delta, seed=seed, runs=curve)
    if shape_prior is None:
        return fit
    check_number("shape_prior", shape_prior, low=0, low_open=True)
    z = law.to_fitting(np.array([fit.values[p] for p in PARAMS]))
    prior = _shape_prior(fit, z, X, log_residuals(law, X, np.log(y_all), z), shape_prior)
    return fit_law(law, X, y_all, starts=z[None], delta=delta, seed=seed, runs=curve,
                   prior=prior)


def _shape_prior(fit, z, X, residuals, width: float):
    """(mean, precision, variance) of the prior on ln C, ln beta, ln gamma: precision
    1 / width², the likelihood's variance s² (1 + phi) / (1 - phi), phi the mean lag-1
    autocorrelation of the free fit's residuals within its runs (at least 0, at most 0.95)."""
    lags = []
    for index in np.unique(X["curve"]):
        r = residuals[X["curve"] == index][np.argsort(X["step"][X["curve"] == index])]
        if r.size > 2 and r[:-1].std() > 0 and r[1:].std() > 0:
            lags.append(np.corrcoef(r[:-1], r[1:])[0, 1])
    phi = float(np.clip(np.mean(lags), 0.0, 0.95)) if lags else 0.0
    variance = fit.stats["residual_scale"] ** 2 * (1 + phi) / (1 - phi)
    mean = np.r_[z[:4], np.log(_SHAPE_START)]
    return mean, np.diag(np.r_[np.zeros(4), np.full(3, width ** -2.0)]), variance


def forecast_schedule(fit, schedule: Schedule, steps) -> pd.DataFrame:
    """The fitted law along ``schedule`` at ``steps``: median and intervals, normal on the log
    loss with the parameters' variance (delta method) plus the fit's residual variance (the
    scatter of the fitted runs' points about the law)."""
    steps = np.asarray(steps, dtype=np.int64)
    theta = np.array([fit.values[name] for name in PARAMS])
    rates = schedule.rates_through(int(steps.max()))
    value, J = multipower_value_and_jacobian(ScheduleTerms(rates, steps), theta)
    out = pd.DataFrame({"step": steps, "lr": rates[steps], "q0.5": value})
    cov = fit.covariance
    if cov is not None and np.isfinite(cov).all() and cov.shape == (len(PARAMS),) * 2:
        g = J / value[:, None]                                  # d log L / d z
        scale = float(fit.stats.get("residual_scale", 0.0))
        sd = np.sqrt(np.maximum(np.einsum("np,pq,nq->n", g, cov, g), 0.0) + scale ** 2)
        for level in LEVELS:
            low, high = (1 - level) / 2, (1 + level) / 2
            out[f"q{low:g}"] = value * np.exp(-_Z[level] * sd)
            out[f"q{high:g}"] = value * np.exp(_Z[level] * sd)
    return out


def scores(observed, predicted) -> dict:
    """The paper's measures of one curve: mean and worst |L - L̂| / L, and R²."""
    observed, predicted = np.asarray(observed, float), np.asarray(predicted, float)
    rel = np.abs(observed - predicted) / observed
    total = ((observed - observed.mean()) ** 2).sum()
    r2 = 1.0 - ((observed - predicted) ** 2).sum() / total if total > 0 else float("nan")
    return {"mean_rel_error": float(rel.mean()), "worst_rel_error": float(rel.max()),
            "r2": float(r2), "n_points": int(rel.size)}


@dataclass(repr=False)
class ScheduleForecast(ResultProtocol):
    """A multi-power-law fit to some runs and its whole-curve forecasts of schedules.

    Attributes
    ----------
    fit_on : list of str
        The runs fitted at once.
    params : dict
        The fitted (L0, A, alpha, B, C, beta, gamma).
    stderr : dict
        Their standard errors.
    runs : list of dict
        With ``evaluate``: each run not fitted, scored at its logged points
        (``run``, ``mean_rel_error``, ``worst_rel_error``, ``r2``, ``n_points``).
    table : DataFrame
        ``schedule``, ``step``, ``lr``, ``q0.5`` and the interval columns.
    stats : dict
        Objective, points, fit seconds.
    diagnostics : list of Diagnostic
    """

    fit_on: list
    params: dict
    stderr: dict
    runs: list
    table: pd.DataFrame
    stats: dict = field(default_factory=dict)
    diagnostics: list = field(default_factory=list)

    def averages(self) -> dict:
        """Mean over the scored runs of each measure."""
        if not self.runs:
            return {}
        return {key: float(np.mean([r[key] for r in self.runs]))
                for key in ("mean_rel_error", "worst_rel_error", "r2")}

    def to_dict(self) -> dict:
        return {"method": "multipower", "fit_on": list(self.fit_on), "params": self.params,
                "stderr": self.stderr, "runs": self.runs, "average": self.averages(),
                "forecasts": self.table.to_dict(orient="records"), "stats": self.stats,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    def to_frame(self) -> pd.DataFrame:
        """The forecasts: one row per schedule and step, with the quantiles."""
        return self.table.copy()

    @classmethod
    def from_dict(cls, data: dict) -> ScheduleForecast:
        return cls(list(data["fit_on"]), dict(data["params"]), dict(data["stderr"]),
                   list(data["runs"]), frame_from_records(data["forecasts"]),
                   dict(data["stats"]), [Diagnostic.from_dict(d) for d in data["diagnostics"]])

    def _summary_title(self) -> str:
        return "Multi-power law fitted on " + ", ".join(self.fit_on)

    def _summary_sections(self):
        rows = [(r["run"], f"mean rel. error {format_number(r['mean_rel_error'])}, worst "
                           f"{format_number(r['worst_rel_error'])}, R² {format_number(r['r2'])}")
                for r in self.runs]
        avg = self.averages()
        if avg:
            rows.append(("average", f"mean {format_number(avg['mean_rel_error'])}, worst "
                                    f"{format_number(avg['worst_rel_error'])}"))
        finals = []
        for name, part in self.table.groupby("schedule", sort=False):
            last = part.iloc[-1]
            interval = (f", 95% {format_interval((last['q0.025'], last['q0.975']))}"
                        if "q0.025" in part else "")
            finals.append((name, f"{format_number(last['q0.5'])} at step "
                                 f"{format_number(last['step'])}{interval}"))
        params = [(name, f"{format_number(v)} ± {format_number(self.stderr.get(name, 0.0))}")
                  for name, v in self.params.items()]
        return [("Held-out runs", rows), ("Final forecasts", finals), ("Parameters", params),
                ("Notes and warnings", collapse_notes([d.message for d in self.diagnostics]))]

    def _repr_fields(self) -> dict:
        return {"fit_on": len(self.fit_on), "scored": len(self.runs),
                "schedules": int(self.table["schedule"].nunique()) if len(self.table) else 0}


def multipower_forecast(frame: pd.DataFrame, *, fit_on: Sequence[str],
                        predict_schedule: Sequence[str | Schedule] = (), evaluate: bool = False,
                        schedules: Mapping[str, str | Schedule] | None = None,
                        total_steps: Mapping[str, int] | None = None, y: str = "loss",
                        points: int = 200, seed: int = 0,
                        shape_prior: float | None = SHAPE_PRIOR) -> ScheduleForecast:
    """Fit the multi-power law on ``fit_on`` and forecast other schedules.

    Parameters
    ----------
    frame : DataFrame
        Tidy curves with ``run``, ``step``, ``y`` and, for runs without a spec in
        ``schedules``, an ``lr`` column.
    fit_on : sequence of str
        The runs fitted at once (shared parameters).
    predict_schedule : sequence of str or Schedule
        Schedules to forecast: a run of ``frame`` (at its logged steps), a spec
        (``cosine:warmup=…``) or a :class:`~scalekit.schedules.Schedule` (at
        ``points`` steps up to its end).
    evaluate : bool
        Score every run with a schedule that is not in ``fit_on``.
    schedules, total_steps : mapping, optional
        Runs' schedules as specs (instead of their ``lr`` series) and ends.
    shape_prior : float or None
        Width of the prior on the loss drop's shape (:func:`fit_multipower`).
    """
    fit_on = [str(run).strip() for run in fit_on]
    if not fit_on:
        raise InputError("The value of `fit_on` is empty, but must name the runs to fit")
    if "" in fit_on or len(set(fit_on)) < len(fit_on):
        raise InputError(f"The value of `fit_on` is {','.join(fit_on)!r}, but must name each "
                         "run once, with no empty name")
    runs = set(frame["run"].astype(str))
    unknown = [run for run in fit_on if run not in runs]
    if unknown:
        raise InputError(f"The value of `fit_on` names run {unknown[0]!r}, but the curves "
                         "have no such run")
    known = run_schedules(frame, specs=schedules, total_steps=total_steps)
    predict = [target if isinstance(target, Schedule) or target in known
               else parse_schedule(target, param="predict_schedule")
               for target in predict_schedule]
    if len(fit_on) < 2:
        raise InputError(f"The value of `fit_on` is {fit_on[0]!r}, but must name at least two "
                         "runs (of different schedules): one schedule leaves the law's schedule "
                         "terms unidentified (Luo et al. 2025 fit two or three)")
    started = time.perf_counter()
    fit = fit_multipower(frame, fit_on=fit_on, schedules=known, y=y, seed=seed,
                         shape_prior=shape_prior)
    seconds = time.perf_counter() - started
    parts, scored, notes = [], [], []
    fitted_area = max(float(known[run].area(_points(frame, run, y, known[run])[0]).max())
                      for run in fit_on)
    targets = list(predict) + ([run for run in sorted(known) if run not in fit_on]
                               if evaluate else [])
    for target in dict.fromkeys(targets):
        if isinstance(target, str):
            schedule = known[target]
            steps, observed = _points(frame, target, y, schedule)
            part = forecast_schedule(fit, schedule, steps)
            if evaluate and target not in fit_on:
                scored.append({"run": target, **scores(observed, part["q0.5"])})
        else:
            schedule = target
            steps = np.unique(np.linspace(1, schedule.total_steps, points).astype(np.int64))
            part = forecast_schedule(fit, schedule, steps)
        part.insert(0, "schedule", schedule.name)
        parts.append(part)
        notes += _beyond_the_fitted_area(schedule, int(steps.max()), fitted_area)
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["schedule", "step", "lr", "q0.5"])
    names = list(PARAMS)
    first = known[fit_on[0]].rates
    cov = fit.covariance
    stats = {"objective": fit.stats["objective"], "n_points": fit.stats["n_points"],
             "delta": fit.stats["delta"], "fit_seconds": seconds,
             "converged": fit.stats["converged"], "shape_prior": shape_prior,
             "prior_penalty": fit.stats.get("prior_penalty", 0.0),
             "interval": "normal on log loss: delta method + residual scale",
             "residual_scale": fit.stats["residual_scale"],
             "peak_rate": float(first.max()), "warmup_steps": int(np.argmax(first)) + 1,
             "covariance": (cov.tolist() if cov is not None and np.isfinite(cov).all()
                            else None)}
    return ScheduleForecast(fit_on, {k: fit.values[k] for k in names},
                            {k: fit.stderr[k] for k in names}, scored, table, stats,
                            list(fit.diagnostics) + notes)


def _beyond_the_fitted_area(schedule, last_step: int, fitted_area: float) -> list:
    """An ``extrapolation`` warning when a forecast runs past the largest area ``S1`` of the
    fitted points by more than 10%: there the law is carried beyond its data and its bands
    miss (docs/schedules.md, "Intervals")."""
    factor = float(schedule.area([last_step])[0]) / fitted_area
    if factor <= 1.1:
        return []
    return [Diagnostic("extrapolation", "warning",
                       f"schedule {schedule.name!r} reaches {factor:.1f}x the largest learning-"
                       "rate area S1 of the fitted runs: the law is carried beyond its data and "
                       "its bands do not cover such forecasts; fit a run that goes further to "
                       "check it", run=schedule.name, value=factor)]
