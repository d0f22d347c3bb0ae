"""Forecasts of every run's loss for the promotion policies, from :mod:`scalekit.surrogates`.

A :class:`SweepForecaster` answers one question: given the points seen so far
of each run, what are the loss quantiles of run ``r`` at computes ``x[r]``?
Two adapters turn the surrogates into that:

- :class:`PerCurveForecaster` fits one scikit-learn-style surrogate
  (``fit(x, y)``, ``predict_quantiles(x, qs)``) to each run's own prefix, with
  compute as ``x``; a run with too few points is handed to ``fallback``.
- :class:`JointForecaster` fits one across-runs surrogate to all prefixes at
  once, so that a run barely started borrows strength from the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from scalekit.allocate.sweep import Curve


class SweepForecaster(Protocol):
    """Loss quantiles of each run at given computes, shape ``(len(x[r]), len(qs))``."""

    def forecast(self, observed: Mapping[str, Curve], params: Mapping[str, float],
                 x: Mapping[str, np.ndarray], qs: Sequence[float]) -> dict[str, np.ndarray]: ...


def _unknown(x: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    return np.full((len(x), len(qs)), np.nan)


@dataclass
class PerCurveForecaster:
    """One surrogate per run, fitted on its own points (compute -> loss)."""

    factory: Callable[[], object]
    min_points: int = 4
    fallback: SweepForecaster | None = None

    def forecast(self, observed, params, x, qs):
        out, rest = {}, {}
        for run, curve in observed.items():
            if len(curve) >= self.min_points:
                model = self.factory().fit(curve.compute, curve.loss)
                out[run] = np.asarray(model.predict_quantiles(np.asarray(x[run], float), qs),
                                      float).reshape(len(x[run]), len(qs))
            else:
                rest[run] = curve
        if rest and self.fallback is not None:
            out.update(self.fallback.forecast(observed, params, {r: x[r] for r in rest}, qs))
        for run in rest:
            out.setdefault(run, _unknown(x[run], qs))
        return out


@dataclass
class JointForecaster:
    """One across-runs surrogate fitted to every run's points at once.

    ``estimator`` follows the joint surrogate's interface: ``fit(frame)`` on a
    tidy frame (``run``, ``params``, ``compute``, ``loss``) and
    ``predict_quantiles(frame, qs)`` on rows (``run``, ``params``, ``compute``).
    """

    factory: Callable[[], object]

    def forecast(self, observed, params, x, qs):
        seen = pd.DataFrame([(run, params.get(run, np.nan), c, l)
                             for run, curve in observed.items()
                             for c, l in zip(curve.compute, curve.loss)],
                            columns=["run", "params", "compute", "loss"])
        asked = pd.DataFrame([(run, params.get(run, np.nan), c)
                              for run in x for c in np.asarray(x[run], float)],
                             columns=["run", "params", "compute"])
        if seen.empty:
            return {run: _unknown(np.asarray(x[run]), qs) for run in x}
        model = self.factory().fit(seen)
        q = np.asarray(model.predict_quantiles(asked, qs), float).reshape(len(asked), len(qs))
        out, at = {}, 0
        for run in x:
            n = len(x[run])
            out[run] = q[at:at + n]
            at += n
        return out


def make_forecaster(name: str, *, seed: int = 0) -> SweepForecaster:
    """The forecaster built on the surrogate called ``name`` (see :mod:`scalekit.surrogates`)."""
    raise NotImplementedError("wired to scalekit.surrogates when it lands")
