"""Learning-curve surrogates: forecast a run's loss from its observed prefix, with quantiles.

- :class:`ParametricEnsemble` — Domhan et al. (2015) families adapted to losses
  plus the saturating power law, weighted by backtests on the prefix
  (:mod:`scalekit.surrogates._ensemble`, families in :mod:`~scalekit.surrogates._curve_families`);
- :class:`GPSurrogate` — a GP with the freeze-thaw decay kernel around a
  parametric mean (:mod:`scalekit.surrogates._gp`);
- :class:`JointSurrogate` — one law across all runs of a sweep
  (:mod:`scalekit.surrogates._joint`);
- :class:`PaperM4` — M4 as Alabdulmohsin et al. (2022) fit it, the benchmark's
  reference (:mod:`scalekit.surrogates._paper_m4`);
- :func:`forecast_frame` / :func:`evaluate_frame` / :func:`holdout_frame` — the
  same on a tidy curve frame (:mod:`scalekit.surrogates._forecast`); the
  evaluation harness lives in :mod:`scalekit.surrogates.evaluate`, its scores are a
  :class:`ForecastScores` (:mod:`scalekit.surrogates._scores`).
"""

from scalekit.surrogates._ensemble import ParametricEnsemble, forecast_batch
from scalekit.surrogates._evaluate import (StackedMethod, cut_curves, ensemble_method, evaluate, joint_method,
                                           remembered)
from scalekit.surrogates._forecast import METHODS, Forecast, evaluate_frame, forecast_frame, holdout_frame
from scalekit.surrogates._gp import ExponentialDecay, GPSurrogate
from scalekit.surrogates._joint import JointSurrogate
from scalekit.surrogates._paper_m4 import PaperM4
from scalekit.surrogates._schedule_axis import area_task
from scalekit.surrogates._schedule_forecast import multipower_forecast
from scalekit.surrogates._schedule_search import ScheduleSearch, schedule_curves, search_schedule
from scalekit.surrogates._scores import ForecastScores

__all__ = ["ParametricEnsemble", "GPSurrogate", "JointSurrogate", "ExponentialDecay",
           "PaperM4", "ForecastScores", "forecast_batch", "forecast_frame", "evaluate_frame", "holdout_frame",
           "StackedMethod", "cut_curves", "ensemble_method", "evaluate", "joint_method",
           "remembered", "Forecast", "METHODS", "multipower_forecast", "schedule_curves",
           "search_schedule", "area_task", "ScheduleSearch"]
