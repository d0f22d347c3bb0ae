"""Forecasts of every run of a tidy curve frame: the API behind ``scalekit forecast``.

:func:`forecast_frame` fits the chosen surrogate to each run's observed curve
(or, for ``joint``, one law to all runs) and returns quantiles of the metric at
requested positions. :func:`evaluate_frame` treats the runs as complete, cuts
them, and scores each method (:mod:`scalekit.surrogates.evaluate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.formatting import collapse_notes, format_interval, format_number
from scalekit.results import ResultProtocol, frame_from_records
from scalekit.schedules import Schedule, parse_schedule
from scalekit.surrogates._base import check_curve
from scalekit.surrogates._curve_families import FAMILIES
from scalekit.surrogates._scores import ForecastScores
from scalekit.surrogates._evaluate import (QUANTILES, Task, averaged_method, cut_curves, ensemble_method,
                                           ensemble_methods, estimator_method, evaluate, holdout_benchmark,
                                           joint_method, paper_m4_method, remembered, split_tasks)

METHODS = ("ensemble", "average", "gp", "joint", "ensemble+joint", "m4-paper",
           "stacked-backtest", *FAMILIES)


def _method(name: str):
    check_choice("method", name, METHODS)
    if name == "ensemble":
        return ensemble_method()
    if name == "average":
        return ensemble_method(weighting="equal")
    if name == "gp":
        from scalekit.surrogates._gp import GPSurrogate
        return estimator_method(lambda: GPSurrogate())
    if name == "joint":
        return joint_method()
    if name == "ensemble+joint":
        return averaged_method(ensemble_method(), joint_method())
    if name == "m4-paper":
        return paper_m4_method()
    if name == "stacked-backtest":
        return default_method()
    return ensemble_method(families=(name,))


def default_method(candidates=None):
    """``stacked-backtest``: M4 (the paper's settings), the ensemble and the equal-weight
    average, stacked per group with weights and spread learned on backtests of the
    prefixes (:class:`scalekit.surrogates._backtest_stack.BacktestStacked`).

    ``candidates`` (name to method) replaces those three, e.g. to share runs.
    """
    from scalekit.surrogates._backtest_stack import BacktestStacked

    if candidates is None:
        ensemble, average = ensemble_methods("backtest", "equal")  # the families fitted once
        candidates = {"m4-paper": paper_m4_method(), "ensemble": ensemble, "average": average}
    return BacktestStacked(candidates)


def _check_columns(frame: pd.DataFrame, *columns: str) -> None:
    for column in columns:
        if column not in frame.columns:
            raise InputError(f"the curves have no column {column!r}; choose the x axis as "
                             "`x` (step, tokens, compute) or map a column to it", column=column)


@dataclass(repr=False)
class Forecast(ResultProtocol):
    """Quantile forecasts of the runs of a curve frame (:func:`forecast_frame`).

    Attributes
    ----------
    method, x, y : str
        The surrogate, the x column and the metric forecast.
    to : float
        Where every run was forecast to, in units of ``x``.
    table : DataFrame
        ``run``, ``x`` and one ``q<level>`` column per quantile level.
    diagnostics : list of Diagnostic
        The runs that were not forecast, and why (code ``run_skipped``, ``run`` names it).
    """

    method: str
    x: str
    y: str
    to: float
    table: pd.DataFrame
    diagnostics: list = field(default_factory=list)

    @property
    def final(self) -> pd.DataFrame:
        """Each run's forecast at ``to`` (the last row of each run)."""
        return self.table.groupby("run").tail(1).reset_index(drop=True)

    def to_dict(self) -> dict:
        return {"method": self.method, "x": self.x, "y": self.y, "to": self.to,
                "forecasts": self.table.to_dict(orient="records"),
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: dict) -> Forecast:
        table = frame_from_records(data["forecasts"])
        return cls(data["method"], data["x"], data["y"], float(data["to"]), table,
                   [Diagnostic.from_dict(d) for d in data["diagnostics"]])

    def to_frame(self) -> pd.DataFrame:
        """The forecasts: ``run``, ``x`` and one ``q<level>`` column per quantile level."""
        return self.table.copy()

    def _summary_title(self) -> str:
        return f"Forecast of {self.y} at {self.x} = {format_number(self.to)} ({self.method})"

    def _summary_sections(self):
        rows = [(row.run, f"median {format_number(row._3)}, 80% "
                          f"{format_interval((row._2, row._4))}, 95% "
                          f"{format_interval((row._1, row._5))}")
                for row in self.final[["run", "q0.025", "q0.1", "q0.5", "q0.9", "q0.975"]]
                .itertuples(index=False, name="Row")]
        return [("Final forecasts", rows),
                ("Notes and warnings", collapse_notes(d.line() for d in self.diagnostics))]

    def _repr_fields(self) -> dict:
        return {"method": self.method, "runs": int(self.table["run"].nunique()),
                "to": self.to}


def forecast_frame(frame: pd.DataFrame, *, to: float, x: str = "step", y: str = "loss",
                   method: str = "stacked-backtest", points: int = 40, min_points: int = 5,
                   total_steps: int | None = None,
                   schedules: Mapping[str, str | Schedule] | None = None) -> Forecast:
    """Forecast every run of ``frame`` from its last point to ``x = to``.

    Parameters
    ----------
    frame : DataFrame
        Tidy curves (``run``, the ``x`` column and the ``y`` column).
    to : float
        Where to forecast to, in units of ``x``.
    x, y : str
        The x column (``step``, ``tokens``, ``compute``, …) and the metric column
        (lower is better).
    method : str
        ``stacked-backtest`` (:func:`default_method`), ``ensemble``, ``average``
        (the ensemble with equal family weights), ``m4-paper``,
        ``gp``, ``joint``, ``ensemble+joint`` (their quantiles averaged in log
        space) or one family name.
    points : int
        Forecast positions per run, log-spaced from the last observed x to ``to``.
    min_points : int
        Runs with fewer observed points are skipped with a warning (as are runs
        with a value of ``y`` <= 0).
    total_steps : int, optional
        Where every run ends (its schedule's last step); by default each run's
        ``total_steps`` or configured ``steps`` column where the curves have one. A
        run that ends before ``to`` (with ``x`` the step) is not forecast, with a
        warning.
    schedules : mapping of run to spec or Schedule, optional
        Runs' learning-rate schedules (``x`` the step; :func:`scalekit.schedules.
        parse_schedule` specs). The default method takes such a run's loss as a
        curve at the peak rate lowered by the drop the rate's fall brings
        (:mod:`scalekit.surrogates._backtest_stack`); a run ends at its schedule's
        last step unless ``total_steps`` says otherwise.

    Returns
    -------
    Forecast
        ``table``: ``run``, ``x``, one column ``q<level>`` per level of
        :data:`~scalekit.surrogates._evaluate.QUANTILES` (the last row of each run
        is at ``to``); ``diagnostics``: the runs not forecast and why.
    """
    check_number("to", to, low=0.0, low_open=True)
    check_number("points", points, low=1, integer=True)
    _check_columns(frame, "run", x, y)
    tasks, skipped, finished = [], [], 0
    if total_steps is not None:
        check_number("total_steps", total_steps, low=1, integer=True)
        ends = {run: float(total_steps) for run in frame["run"].unique()}
    else:
        ends = run_ends(frame) if x == "step" else {}
    rates = _schedule_rates(frame, schedules or {}, x=x, method=method)
    if total_steps is None:
        ends.update({run: float(r.size) for run, r in rates.items()})
    for run, curve in frame.groupby("run", sort=True):
        curve = curve[[x, y]].dropna()
        curve = curve[curve[x] > 0]
        if (curve[y] <= 0).any():
            at = curve.loc[curve[y] <= 0, x].iloc[0]
            skipped.append((run, f"run {run!r}: {y} = {curve[y].min():g} at {x} = {at:g}; a "
                            "forecast on a log scale needs positive values; not forecast"))
            continue
        if curve[x].nunique() < min_points:
            skipped.append((run, f"run {run!r}: {curve[x].nunique()} points, fewer than "
                            f"{min_points}; not forecast"))
            continue
        last = curve[x].max()
        end = ends.get(run)
        if end is not None and to > end:
            finished += 1
            skipped.append((run, f"run {run!r}: its schedule ends at step {end:g}, so the run is "
                            f"finished before {x} = {to:g}; not forecast (to ask what a longer "
                            "run would do, give the longer schedule)"))
            continue
        if to <= last:
            skipped.append((run, f"run {run!r}: already at x = {last:g} >= {to:g}; not forecast"))
            continue
        grid = np.geomspace(last, to, points + 1)[1:]
        size = float(frame.loc[frame["run"] == run, "params"].iloc[0]) \
            if "params" in frame.columns else float("nan")
        tasks.append(Task(str(run), curve[x].to_numpy(float), curve[y].to_numpy(float),
                          grid, np.full(grid.size, np.nan), size=size, rates=rates.get(str(run))))
    if not tasks and finished and finished == len(skipped):
        raise InputError(f"every run's schedule ends before {x} {to:g} (the latest at "
                         f"{max(ends.values()):g}): the runs are finished; give a longer "
                         "schedule to ask what a longer run would do")
    if not tasks:
        raise InputError("no run has enough points below the target to forecast"
                         + (f" ({skipped[0][1]})" if skipped else ""))
    tasks = [Task(t.run, *check_curve(t.x, t.y, min_points=min_points), t.x_target, t.y_target,
                  size=t.size, rates=t.rates) for t in tasks]
    quantiles = _method(method)(tasks)
    rows = []
    for task, q in zip(tasks, quantiles, strict=True):
        part = pd.DataFrame(q, columns=[f"q{level:g}" for level in QUANTILES])
        part.insert(0, "x", task.x_target)
        part.insert(0, "run", task.run)
        rows.append(part)
    diagnostics = [Diagnostic("run_skipped", "warning", message, run=str(run))
                   for run, message in skipped]
    table = pd.concat(rows, ignore_index=True)
    diagnostics += _bands_without_spread(table)
    return Forecast(method, x, y, float(to), table, diagnostics)


def _bands_without_spread(table: pd.DataFrame) -> list[Diagnostic]:
    """A warning for each run whose 95% band at the target is no wider than its 80% band:
    the errors the bands were calibrated on were too few (or all alike) to tell the levels
    apart, and such bands are not intervals to read."""
    out = []
    for run, part in table.groupby("run", sort=False):
        last = part.iloc[-1]
        wide, narrow = last["q0.975"] - last["q0.025"], last["q0.9"] - last["q0.1"]
        if not wide > narrow:
            out.append(Diagnostic("few_points", "warning",
                                  f"run {run!r}: the 80% and 95% bands at the target coincide "
                                  f"(width {narrow:.3g}): too few distinct backtest errors to "
                                  "calibrate them, so they are no intervals; forecast more runs "
                                  "together or with more points", run=str(run)))
    return out


def _schedule_rates(frame: pd.DataFrame, schedules: Mapping, *, x: str, method: str) -> dict:
    """Each named run's rate per step, checked: the runs exist, ``x`` is the step and the
    method is the default (the one that reads schedules)."""
    if not schedules:
        return {}
    if x != "step":
        raise InputError(f"a schedule places steps, but the forecast is along {x!r}; forecast "
                         "along the step to give schedules")
    if method != "stacked-backtest":
        raise InputError(f"schedules are read by the default method stacked-backtest, not by "
                         f"{method!r}")
    known = set(frame["run"].astype(str))
    out = {}
    for run, schedule in schedules.items():
        if str(run) not in known:
            raise InputError(f"a schedule is given for run {run!r}, which is not in the curves")
        if not isinstance(schedule, Schedule):
            schedule = parse_schedule(str(schedule), name=str(run))
        out[str(run)] = schedule.rates
    return out


def run_ends(frame: pd.DataFrame) -> dict:
    """Each run's last step where the curves say it (a ``total_steps`` column, or the
    run configuration's ``steps``), by run."""
    column = next((c for c in ("total_steps", "steps") if c in frame.columns), None)
    if column is None:
        return {}
    ends = pd.to_numeric(frame.groupby("run", sort=True)[column].max(), errors="coerce")
    return {run: float(end) for run, end in ends.items() if np.isfinite(end) and end > 0}


def evaluate_frame(frame: pd.DataFrame, *, methods: Sequence[str], x: str = "step",
                   y: str = "loss", fractions: Sequence[float] = (0.1, 0.2, 0.3, 0.5),
                   split_seed: int | None = None) -> ForecastScores:
    """Cut every (complete) run at ``fractions`` of its last x and score each method.

    The joint surrogate is fitted across all runs cut at the same fraction.
    See :func:`scalekit.surrogates._evaluate.evaluate` for the columns.
    """
    _check_columns(frame, "run", x, y)
    named = {name: _method(name) for name in methods}
    size = "params" if "params" in frame.columns else None
    tasks = []
    for fraction, cut in cut_curves(frame, fractions, x=x, y=y, size=size).items():
        tasks += [Task(t.run, t.x, t.y, t.x_target, t.y_target, group=f"{fraction:g}",
                       size=t.size) for t in cut]
    return evaluate(tasks, named, split_seed=split_seed, by=lambda t: f"cut {t.group}")


def holdout_frame(frame: pd.DataFrame, *, methods: Sequence[str], train: str, x: str = "step",
                  y: str = "loss", by: str | None = None, reference: str = "m4-paper",
                  min_points: int = 5) -> ForecastScores:
    """Fit each run on its rows with ``train`` true, forecast the others, score per ``by``.

    The protocol of Alabdulmohsin, Neyshabur & Zhai (2022): one evaluation per
    run; see :func:`scalekit.surrogates._evaluate.holdout_benchmark` for the
    columns. ``reference`` is scored too (and by default is M4 as the paper fits
    it, with the paper's settings where ``by`` names their domains IC, BB, NMT,
    LM). Runs with fewer than ``min_points`` rows marked for fitting, none held
    out, or a value of ``y`` <= 0 are left out.
    """
    _check_columns(frame, "run", x, y)
    for name, column in (("train", train), ("by", by)):
        if column is not None and column not in frame.columns:
            raise InputError(f"the curves have no column {column!r} (parameter {name})",
                             column=column)
    names = list(dict.fromkeys([*methods, reference]))
    named = {name: remembered(_method(name)) for name in names}
    tasks = split_tasks(frame, train=train, x=x, y=y, group=by, min_points=min_points)
    return holdout_benchmark(tasks, named, reference=reference,
                             by=(lambda t: t.group) if by else (lambda t: "all"))
