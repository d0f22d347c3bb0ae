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
from scalekit.checks import check_choice


class SweepForecaster(Protocol):
    """Loss quantiles of each run at given computes, shape ``(len(x[r]), len(qs))``."""

    def forecast(self, observed: Mapping[str, Curve], params: Mapping[str, float],
                 x: Mapping[str, np.ndarray], qs: Sequence[float]) -> dict[str, np.ndarray]: ...


def _unknown(x: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    return np.full((len(x), len(qs)), np.nan)


@dataclass
class PerCurveForecaster:
    """One surrogate per run, fitted on its own points (compute -> loss).

    Give either ``factory`` (a scikit-learn-style surrogate class, one fit per
    run) or ``batch`` (``batch(x, y, mask, x_new, qs) -> (B, m, Q)`` fitting B
    padded curves at once, e.g. :func:`scalekit.surrogates.ensemble.forecast_batch`).
    Runs with fewer than ``min_points`` points go to ``fallback`` (or get NaN,
    which the policies rank last).
    """

    factory: Callable[[], object] | None = None
    batch: Callable[..., np.ndarray] | None = None
    min_points: int = 4
    fallback: SweepForecaster | None = None

    def forecast(self, observed, params, x, qs):
        fit = [r for r, c in observed.items() if len(c) >= self.min_points]
        rest = [r for r in observed if r not in fit]
        out = self._batch(observed, fit, x, qs) if self.batch else {
            r: np.asarray(self.factory().fit(observed[r].compute, observed[r].loss)
                          .predict_quantiles(np.asarray(x[r], float), qs),
                          float).reshape(len(x[r]), len(qs)) for r in fit}
        if rest and self.fallback is not None:
            out.update(self.fallback.forecast(observed, params, {r: x[r] for r in rest}, qs))
        for run in rest:
            out.setdefault(run, _unknown(x[run], qs))
        return out

    def _batch(self, observed, runs, x, qs):
        if not runs:
            return {}
        n = max(len(observed[r]) for r in runs)
        m = max(len(x[r]) for r in runs)
        xs, ys = np.ones((len(runs), n)), np.ones((len(runs), n))
        mask = np.zeros((len(runs), n), bool)
        x_new = np.ones((len(runs), m))
        for i, run in enumerate(runs):
            k, want = len(observed[run]), np.asarray(x[run], float)
            xs[i, :k], ys[i, :k], mask[i, :k] = observed[run].compute, observed[run].loss, True
            x_new[i, :] = want[-1]
            x_new[i, :len(want)] = want
        q = np.asarray(self.batch(xs, ys, mask, x_new, np.asarray(qs, float)), float)
        return {run: q[i, :len(x[run])] for i, run in enumerate(runs)}


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


SURROGATES = ("ensemble",)


def make_forecaster(name: str = "ensemble", *, seed: int = 0) -> SweepForecaster:
    """The forecaster built on the surrogate called ``name`` from :mod:`scalekit.surrogates`.

    ``ensemble``: the backtest-weighted parametric ensemble, fitted to all runs'
    prefixes in one batch.
    """
    check_choice("surrogate", name, SURROGATES)
    from scalekit.surrogates.ensemble import forecast_batch

    return PerCurveForecaster(batch=forecast_batch)
