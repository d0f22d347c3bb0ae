"""Learning-curve surrogates: forecast a run's loss from its observed prefix, with quantiles.

- :class:`ParametricEnsemble` — Domhan et al. (2015) families adapted to losses
  plus the saturating power law, weighted by backtests on the prefix
  (:mod:`scalekit.surrogates.ensemble`, families in :mod:`~scalekit.surrogates.curve_families`);
- :class:`GPSurrogate` — a GP with the freeze-thaw decay kernel around a
  parametric mean (:mod:`scalekit.surrogates.gp`);
- :class:`JointSurrogate` — one law across all runs of a sweep
  (:mod:`scalekit.surrogates.joint`);
- :func:`forecast_frame` / :func:`evaluate_frame` — the same on a tidy curve
  frame (:mod:`scalekit.surrogates.forecast`); the evaluation harness lives in
  :mod:`scalekit.surrogates.evaluate`.
"""

from scalekit.surrogates.ensemble import ParametricEnsemble, forecast_batch
from scalekit.surrogates.forecast import evaluate_frame, forecast_frame
from scalekit.surrogates.gp import ExponentialDecay, GPSurrogate
from scalekit.surrogates.joint import JointSurrogate

__all__ = ["ParametricEnsemble", "GPSurrogate", "JointSurrogate", "ExponentialDecay",
           "forecast_batch", "forecast_frame", "evaluate_frame"]
