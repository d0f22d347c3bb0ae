"""Learning-curve surrogates: forecast a run's loss from its observed prefix, with quantiles.

- :class:`ParametricEnsemble` — Domhan et al. (2015) families adapted to losses
  plus the saturating power law, weighted by backtests on the prefix
  (:mod:`scalekit.surrogates.ensemble`, families in :mod:`~scalekit.surrogates.curve_families`);
- :class:`GPSurrogate` — a GP with the freeze-thaw decay kernel around a
  parametric mean (:mod:`scalekit.surrogates.gp`);
- :class:`JointSurrogate` — one law across all runs of a sweep
  (:mod:`scalekit.surrogates.joint`);
- :class:`PaperM4` — M4 as Alabdulmohsin et al. (2022) fit it, the benchmark's
  reference (:mod:`scalekit.surrogates.paper_m4`);
- :func:`forecast_frame` / :func:`evaluate_frame` / :func:`holdout_frame` — the
  same on a tidy curve frame (:mod:`scalekit.surrogates.forecast`); the
  evaluation harness lives in :mod:`scalekit.surrogates.evaluate`, its scores are a
  :class:`ForecastScores` (:mod:`scalekit.surrogates.scores`).
"""

from scalekit.surrogates.ensemble import ParametricEnsemble, forecast_batch
from scalekit.surrogates.evaluate import (StackedMethod, cut_curves, ensemble_method, evaluate,
                                          joint_method, remembered)
from scalekit.surrogates.forecast import (METHODS, Forecast, evaluate_frame, forecast_frame,
                                          holdout_frame)
from scalekit.surrogates.gp import ExponentialDecay, GPSurrogate
from scalekit.surrogates.joint import JointSurrogate
from scalekit.surrogates.paper_m4 import PaperM4
from scalekit.surrogates.schedule_axis import area_task
from scalekit.surrogates.schedule_forecast import multipower_forecast
from scalekit.surrogates.schedule_search import schedule_curves, search_schedule
from scalekit.surrogates.scores import ForecastScores

__all__ = ["ParametricEnsemble", "GPSurrogate", "JointSurrogate", "ExponentialDecay",
           "PaperM4", "ForecastScores", "forecast_batch", "forecast_frame", "evaluate_frame", "holdout_frame",
           "StackedMethod", "cut_curves", "ensemble_method", "evaluate", "joint_method",
           "remembered", "Forecast", "METHODS", "multipower_forecast", "schedule_curves",
           "search_schedule", "area_task"]
