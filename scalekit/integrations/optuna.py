"""An Optuna pruner that ranks trials by the forecast of their final value.

>>> import optuna
>>> from scalekit.integrations.optuna import ForecastPruner
>>> pruner = ForecastPruner(min_resource=9, max_resource=243, reduction_factor=3)
>>> study = optuna.create_study(pruner=pruner)  # doctest: +SKIP

Inside the objective, report as usual (``trial.report(loss, step)``, then
``if trial.should_prune(): raise optuna.TrialPruned()``).
"""

from __future__ import annotations

import math

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial

from scalekit.integrations.rungs import ForecastRanking

_KEY = "scalekit_forecast_rung_{}"


class ForecastPruner(optuna.pruners.BasePruner):
    """Asynchronous Successive Halving that ranks each trial by its forecast final value.

    At rung ``k`` (step ``min_resource * reduction_factor**k``) the trial's
    intermediate values so far are extrapolated to ``max_resource`` by a
    scalekit surrogate; the trial goes on if the ``quantile`` of that forecast
    is among the best ``max(1, n // reduction_factor)`` of the ``n`` trials that
    reached the rung, as in :class:`optuna.pruners.SuccessiveHalvingPruner`
    (whose ``min_early_stopping_rate`` is 0 here). The forecasts are kept as
    trial system attributes, so the pruner works with any storage and several
    workers. See :mod:`scalekit.integrations.rungs`.

    Parameters
    ----------
    min_resource : int
        Step of the first rung.
    max_resource : int
        Step of the last report of a complete trial: the forecast horizon.
    reduction_factor : int
        About one trial in ``reduction_factor`` passes each rung.
    surrogate : {"ensemble", "gp", "joint"}
        The learning-curve surrogate (:func:`scalekit.allocate.forecasters.make_forecaster`).
    quantile : float
        Forecast quantile ranked on; 0.2 is optimistic (keep what may end well).

    Notes
    -----
    A minimised value must be positive (a loss); a maximised one must be below
    1 (an accuracy, forecast as the error ``1 - value``). Steps <= 0 are not
    used for forecasts.
    """

    def __init__(self, min_resource: int = 1, max_resource: int = 100, reduction_factor: int = 3,
                 *, surrogate: str = "ensemble", quantile: float = 0.2):
        self._settings = dict(min_resource=min_resource, max_resource=max_resource,
                              reduction_factor=reduction_factor, surrogate=surrogate,
                              quantile=quantile)
        self._rankings = {False: ForecastRanking(**self._settings)}

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None:
            return False
        if math.isnan(trial.intermediate_values[step]):
            return True
        ranking = self._ranking(study.direction == StudyDirection.MAXIMIZE)
        done = 0
        while _KEY.format(done) in trial.system_attrs:
            done += 1
        due = ranking.due(step, done)
        if not due:
            return False
        trials = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,
                                                          optuna.trial.TrialState.COMPLETE,
                                                          optuna.trial.TrialState.PRUNED))
        curves = {t.number: _points(t) for t in trials if t.intermediate_values}
        curves[trial.number] = _points(trial)
        score = ranking.score(trial.number, curves)
        for rung in due:
            key = _KEY.format(rung)
            study._storage.set_trial_system_attr(trial._trial_id, key, score)
            competing = [t.system_attrs[key] for t in trials
                         if key in t.system_attrs and t.number != trial.number] + [score]
            if not ranking.keeps(score, competing):
                return True
        return False

    def _ranking(self, maximize: bool) -> ForecastRanking:
        if maximize not in self._rankings:
            self._rankings[maximize] = ForecastRanking(**self._settings, maximize=maximize)
        return self._rankings[maximize]


def _points(trial: FrozenTrial) -> tuple[list[float], list[float]]:
    steps = sorted(trial.intermediate_values)
    return steps, [trial.intermediate_values[s] for s in steps]
