"""A Ray Tune scheduler that stops trials by the forecast of their final metric.

>>> from ray import tune
>>> from scalekit.integrations.ray_tune import ForecastScheduler
>>> scheduler = ForecastScheduler(max_t=243, grace_period=9, reduction_factor=3)
>>> tuner = tune.Tuner(train, tune_config=tune.TuneConfig(  # doctest: +SKIP
...     metric="loss", mode="min", scheduler=scheduler, num_samples=12))
"""

from __future__ import annotations

import numpy as np

from ray.tune.result import DEFAULT_METRIC
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from scalekit.checks import check_choice
from scalekit.integrations._rungs import ForecastRanking


class ForecastScheduler(FIFOScheduler):
    """Asynchronous Successive Halving on forecasts (ASHA's settings, scalekit's ranking).

    Each result of a trial is kept; when the trial's ``time_attr`` reaches a
    rung (``grace_period * reduction_factor**k``, below ``max_t``), its curve
    so far is extrapolated to ``max_t`` by a scalekit surrogate and the trial
    is stopped unless the ``quantile`` of that forecast is among the best
    ``max(1, n // reduction_factor)`` of the ``n`` trials that reached the rung
    (see :mod:`scalekit.integrations._rungs`). Trials stop at ``max_t``.

    Parameters
    ----------
    time_attr : str
        The increasing result attribute that measures progress.
    metric : str, optional
        The result attribute to rank; may instead come from ``tune.TuneConfig``.
    mode : {"min", "max"}, optional
        ``min``: a positive loss; ``max``: a score below 1 (forecast as ``1 - score``).
    max_t : int
        ``time_attr`` at the end of a complete trial: the forecast horizon.
    grace_period : int
        ``time_attr`` of the first rung.
    reduction_factor : int
        About one trial in ``reduction_factor`` passes each rung.
    surrogate : {"ensemble", "gp", "joint"}
        The learning-curve surrogate (:func:`scalekit.allocate._forecasters.make_forecaster`).
    quantile : float
        Forecast quantile ranked on; 0.2 is optimistic.
    """

    def __init__(self, time_attr: str = "training_iteration", metric: str | None = None,
                 mode: str | None = None, max_t: int = 100, grace_period: int = 1,
                 reduction_factor: int = 3, *, surrogate: str = "ensemble",
                 quantile: float = 0.2):
        super().__init__()
        if mode is not None:
            check_choice("mode", mode, ("min", "max"))
        self._time_attr, self._metric, self._mode = time_attr, metric, mode
        self._settings = dict(min_resource=grace_period, max_resource=max_t,
                              reduction_factor=reduction_factor, surrogate=surrogate,
                              quantile=quantile)
        self._ranking = ForecastRanking(**self._settings, maximize=mode == "max")
        self._curves: dict[str, tuple[list[float], list[float]]] = {}
        self._scores: list[dict[str, float]] = [{} for _ in self._ranking.rungs]
        self._stopped = 0

    def set_search_properties(self, metric: str | None, mode: str | None, **spec) -> bool:
        if not take_search_properties(self, metric, mode, ("min", "max")):
            return False
        if mode:
            self._ranking = ForecastRanking(**self._settings, maximize=mode == "max")
        return True

    def on_trial_add(self, tune_controller, trial) -> None:
        require_metric_and_mode(self)
        self._curves[trial.trial_id] = ([], [])

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        if self._time_attr not in result or self._metric not in result:
            return TrialScheduler.CONTINUE
        time, value = float(result[self._time_attr]), float(result[self._metric])
        times, values = self._curves.setdefault(trial.trial_id, ([], []))
        times.append(time)
        values.append(value)
        if time >= self._settings["max_resource"]:
            return TrialScheduler.STOP
        done = sum(trial.trial_id in scores for scores in self._scores)
        due = self._ranking.due(time, done)
        if not due:
            return TrialScheduler.CONTINUE
        score = self._ranking.score(trial.trial_id, self._curves)
        if np.isnan(score):  # too few points to judge: judged at this rung once it has them
            return TrialScheduler.CONTINUE
        for rung in due:
            self._scores[rung][trial.trial_id] = score
            if not self._ranking.keeps(score, list(self._scores[rung].values())):
                self._stopped += 1
                return TrialScheduler.STOP
        return TrialScheduler.CONTINUE

    def debug_string(self) -> str:
        reached = ", ".join(f"{r:g}: {len(s)}" for r, s in zip(self._ranking.rungs, self._scores,
                                                               strict=True))
        return f"Using ForecastScheduler: {self._stopped} stopped; trials per rung {{{reached}}}"


def take_search_properties(scheduler, metric: str | None, mode: str | None,
                           modes: tuple[str, ...]) -> bool:
    """Tune's ``set_search_properties`` for a scheduler with ``_metric`` and ``_mode``: take
    the metric and mode unless the scheduler was given its own (then refuse: False)."""
    if (scheduler._metric and metric) or (scheduler._mode and mode):
        return False
    if mode:
        check_choice("mode", mode, modes)
        scheduler._mode = mode
    scheduler._metric = metric or scheduler._metric or (
        DEFAULT_METRIC if scheduler._mode else None)
    return True


def require_metric_and_mode(scheduler) -> None:
    """Refuse to schedule a trial before the scheduler knows its metric and mode."""
    if not scheduler._metric or not scheduler._mode:
        raise ValueError(f"{type(scheduler).__name__} needs `metric` and `mode`: pass them to it "
                         "or to `tune.TuneConfig()`.")
