"""Stacking learned from the observed points alone: each run backtested on its own prefix.

For every task the observed prefix is cut where the forecast would start if
the task's horizon were asked of its prefix: the points with ``x >
x_last * exp(-h)`` are held back, ``h = ln(max x_target / x_last)`` (only the
requested positions are read, never a truth). Each candidate forecasts those
held-back points from the rest; per group of tasks (a sweep, or a domain of a
benchmark) the simplex weights minimising the mean absolute log error over
every held-back point (:func:`scalekit.surrogates.evaluate.stacking_weights`)
combine the candidates' full-prefix medians in log space. The interval is a
normal in ln loss with standard deviation ``s * sqrt(h0**2 + h**2)`` at
horizon ``h`` beyond the last observed point, ``s**2`` the mean of ``e**2 /
(h0**2 + h**2)`` over the same held-back points' errors ``e`` of the combined
backtest median (the interval model of
:class:`~scalekit.surrogates.evaluate.StackedMethod`, fitted on prefixes
instead of on calibration truths).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import ndtri

from scalekit.checks import check_number
from scalekit.progress import track
from scalekit.surrogates.evaluate import (QUANTILES, Method, Task, horizon_reach, median_column,
                                          stacking_weights)

_MEDIAN = median_column()


def backtest_task(task: Task, *, min_points: int) -> Task | None:
    """The task's prefix cut at its own horizon, or None where too few points would be left."""
    horizon = float(np.log(task.x_target.max() / task.x[-1]))
    head = task.x <= task.x[-1] * np.exp(-max(horizon, 1e-9))
    if head.sum() < min_points or head.all():
        return None
    return Task(task.run, task.x[head], task.y[head], task.x[~head], task.y[~head],
                group=task.group, size=task.size)


class BacktestStacked:
    """Candidates stacked per group with weights and spread from prefix backtests.

    Parameters
    ----------
    candidates : mapping of str to method
        The methods to combine.
    min_points : int
        Fewest points a backtest's head keeps; shorter tasks take no part in
        learning (they are still forecast).
    h0 : float
        Horizon (in e-folds of x) below which the interval stops narrowing.
    fallback_spread : float
        ``s`` for a group without any backtest.

    Attributes
    ----------
    weights_ : dict
        Group label to {candidate: weight}, from the last call.
    spread_ : dict
        Group label to ``s``.
    """

    def __init__(self, candidates: Mapping[str, Method], *, min_points: int = 6,
                 h0: float = 0.1, fallback_spread: float = 0.05) -> None:
        self.candidates = dict(candidates)
        self.min_points = min_points
        self.h0 = h0
        self.fallback_spread = fallback_spread

    def __call__(self, tasks: Sequence[Task]) -> list[np.ndarray]:
        check_number("min_points", self.min_points, low=2, integer=True)
        check_number("h0", self.h0, low=0.0, low_open=True)
        check_number("fallback_spread", self.fallback_spread, low=0.0, low_open=True)
        backs = [backtest_task(t, min_points=self.min_points) for t in tasks]
        learn = [i for i, b in enumerate(backs) if b is not None]
        pseudo = [backs[i] for i in learn]
        names = list(self.candidates)
        jobs = [("full", n, tasks) for n in names] + [("back", n, pseudo) for n in names
                                                      if pseudo]
        medians = {}
        for phase, name, batch in track(jobs, "forecast"):  # the CLI's progress bar
            medians[phase, name] = [np.log(np.asarray(q)[: t.x_target.size, _MEDIAN])
                                    for q, t in zip(self.candidates[name](batch), batch)]
        full = {n: medians["full", n] for n in names}
        back = {n: medians["back", n] for n in names} if pseudo else {}
        self.weights_, self.spread_ = {}, {}
        out: list[np.ndarray | None] = [None] * len(tasks)
        z = ndtri(QUANTILES)
        for label in sorted({t.group for t in tasks}):
            members = [i for i, t in enumerate(tasks) if t.group == label]
            rows = [j for j, i in enumerate(learn) if tasks[i].group == label]
            weights, spread = np.full(len(names), 1.0 / len(names)), self.fallback_spread
            if rows:
                errors = np.vstack([np.column_stack([back[n][j] for n in names])
                                    - np.log(pseudo[j].y_target)[:, None] for j in rows])
                weights = stacking_weights(errors)
                blocks = zip(rows, _split(errors, pseudo, rows))
                ratios = np.concatenate([(block @ weights) / horizon_reach(pseudo[j], self.h0)
                                         for j, block in blocks])
                spread = float(np.sqrt(np.mean(ratios ** 2)))
            self.weights_[label] = dict(zip(names, weights.tolist()))
            self.spread_[label] = spread
            for i in members:
                median = sum(w * full[n][i] for w, n in zip(weights, names))
                reach = horizon_reach(tasks[i], self.h0)
                out[i] = np.exp(median[:, None] + spread * reach[:, None] * z)
        return out


def _split(errors: np.ndarray, pseudo: Sequence[Task], rows: Sequence[int]) -> list[np.ndarray]:
    """Cut the stacked per-point error rows back into one block per backtest task."""
    sizes = np.cumsum([pseudo[j].x_target.size for j in rows])[:-1]
    return np.split(errors, sizes)
