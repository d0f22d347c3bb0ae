"""Forecasts of every run's loss for the promotion policies, from :mod:`scalekit.surrogates`.

A :class:`SweepForecaster` answers one question: given the points seen so far
of each run, what are the loss quantiles of run ``r`` at computes ``x[r]``?
Two adapters turn the surrogates into that:

- :class:`PerCurveForecaster` fits one scikit-learn-style surrogate
  (``fit(x, y)``, ``predict_quantiles(x, qs)``) to each run's own prefix, with
  compute as ``x``; a run with too few points is handed to ``fallback``.
- :class:`JointForecaster` fits one across-runs surrogate to all prefixes at
  once, so that a run barely started borrows strength from the others (and,
  with ``unseen``, a run not started at all is forecast from its size).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from scalekit.allocate._sweep import Curve
from scalekit.checks import check_choice
from scalekit.errors import InputError


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
    padded curves at once, e.g. :func:`scalekit.surrogates._ensemble.forecast_batch`).
    Runs with fewer than ``min_points`` points go to ``fallback`` (or get NaN,
    which the policies rank last).
    """

    factory: Callable[[], object] | None = None
    batch: Callable[..., np.ndarray] | None = None
    min_points: int = 4
    fallback: SweepForecaster | None = None

    def forecast(self, observed, params, x, qs):
        fit = [r for r in x if len(observed.get(r, ())) >= self.min_points]
        rest = [r for r in x if r not in fit]
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


#: Joint fits by their exact data: policies replayed on the same points (the first
#: rung of ``forecast`` and ``frontier``) share one fit. Deterministic, so safe.
_FITTED: dict = {}


@dataclass
class JointForecaster:
    """One across-runs surrogate fitted to every run's points at once.

    ``factory()`` gives an estimator with the interface of
    :class:`scalekit.surrogates._joint.JointSurrogate`: ``fit(x, y, runs=, sizes=)``
    and ``predict_quantiles(x, qs, runs=)``. Its law ``E + A/N^alpha + B/x^beta``
    needs the data axis, so ``x`` is compute per parameter (proportional to
    tokens, ``C = 6 N D``) when every run's size is known, compute otherwise.
    A fit that fails (too few points) gives NaN. Runs without a point get NaN
    too, unless ``unseen`` is set and the fitted law is tied to the sizes: then
    they get the law's forecast for their size (see :func:`unseen_quantiles`).
    """

    factory: Callable[[], object]
    unseen: bool = False

    def forecast(self, observed, params, x, qs):
        out = {run: _unknown(np.asarray(x[run]), qs) for run in x}
        sizes = {run: float(params.get(run, np.nan)) for run in observed}
        per_size = all(np.isfinite(v) and v > 0 for v in sizes.values())
        scale = (lambda run: sizes[run]) if per_size else (lambda run: 1.0)
        runs = [r for r, c in observed.items() if len(c)]
        if not runs:
            return out
        xs = np.concatenate([observed[r].compute / scale(r) for r in runs])
        ys = np.concatenate([observed[r].loss for r in runs])
        labels = np.concatenate([np.full(len(observed[r]), r, dtype=object) for r in runs])
        per_point = (np.concatenate([np.full(len(observed[r]), sizes[r]) for r in runs])
                     if per_size else None)
        key = (self.factory, xs.tobytes(), ys.tobytes(), labels.astype(str).tobytes(),
               None if per_point is None else per_point.tobytes())
        model = _FITTED.get(key)
        if model is None:
            try:
                model = self.factory().fit(xs, ys, runs=labels.astype(str), sizes=per_point)
            except InputError:
                return out
            if len(_FITTED) >= 32:
                _FITTED.pop(next(iter(_FITTED)))
            _FITTED[key] = model
        asked = [r for r in x if r in runs]
        if self.unseen and per_size:
            for run in x:
                size = float(params.get(run, np.nan))
                if run not in runs and np.isfinite(size) and size > 0:
                    out[run] = unseen_quantiles(model, size, np.asarray(x[run], float) / size, qs)
        if asked:
            at = np.concatenate([np.asarray(x[r], float) / scale(r) for r in asked])
            names = np.concatenate([np.full(len(x[r]), r, dtype=object) for r in asked])
            q = np.asarray(model.predict_quantiles(at, qs, runs=names.astype(str)), float)
            start = 0
            for run in asked:
                out[run] = q[start:start + len(x[run])]
                start += len(x[run])
        return out


def unseen_quantiles(model, size: float, x: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Quantiles ``(len(x), len(qs))`` of a run of ``size`` parameters that has no point yet.

    ``model`` is a fitted :class:`~scalekit.surrogates._joint.JointSurrogate`
    whose law is tied to the sizes (``E + A/N^alpha + B/x^beta``, the
    Chinchilla form of Hoffmann et al. 2022); its median is that law at
    ``(size, x)``, without the per-run shift of the runs it has seen. The
    log-scale spread is the widest of the seen runs' spreads, grown at the
    law's rate per e-fold of ``x`` beyond the earliest last point of any run.
    All NaN when the law has free per-run levels (too few distinct sizes).
    """
    from scipy.special import ndtri

    values = model.params_
    if "E" not in values:
        return _unknown(x, qs)
    level = values["E"] + values["A"] * (size / model.size_ref_) ** -values["alpha"]
    median = level + values["B"] * (x / model.x_ref_) ** -values["beta"]
    horizon = np.maximum(np.log(x / np.min(model.x_last_)), 0.0)
    sd = np.sqrt(np.max(model.sigma_) ** 2 + (model.rate_ * horizon) ** 2)
    return median[:, None] * np.exp(sd[:, None] * ndtri(np.asarray(qs, float))[None, :])


SURROGATES = ("joint", "ensemble", "gp")


def make_forecaster(name: str = "joint", *, seed: int = 0, unseen: bool = False,
                    families: Sequence[str] | None = None) -> SweepForecaster:
    """The forecaster built on the surrogate called ``name`` from :mod:`scalekit.surrogates`.

    - ``joint``: :class:`~scalekit.surrogates._joint.JointSurrogate`, one law for
      all runs (a run with a few points borrows the curve shape of the others);
    - ``ensemble``: the backtest-weighted parametric ensemble per run, all runs
      in one batch; runs with fewer than four points go to ``joint``;
    - ``gp``: :class:`~scalekit.surrogates._gp.GPSurrogate` per run, the same fallback
      for runs with fewer points than it needs.

    With ``unseen``, runs without a point are forecast from the joint law's
    size term (:class:`JointForecaster`). The surrogates are deterministic;
    ``seed`` is kept for those that are not. ``families`` are the ensemble's
    (:data:`scalekit.surrogates._curve_families.DEFAULT_FAMILIES` when None).
    """
    check_choice("surrogate", name, SURROGATES)
    from scalekit.surrogates import JointSurrogate

    joint = JointForecaster(JointSurrogate, unseen=unseen)
    if name == "joint":
        return joint
    if name == "ensemble":
        from functools import partial

        from scalekit.surrogates import forecast_batch

        batch = forecast_batch if families is None else partial(forecast_batch,
                                                                 families=tuple(families))
        return PerCurveForecaster(batch=batch, fallback=joint)
    from scalekit.surrogates import GPSurrogate

    return PerCurveForecaster(factory=GPSurrogate, fallback=joint,
                              min_points=max(4, GPSurrogate._min_points))
