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
from collections.abc import Sequence

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial

from scalekit.checks import check_choice, check_number
from scalekit.errors import InputError
from scalekit.integrations._rungs import FAMILIES, REACH, ForecastRanking

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
    workers. See :mod:`scalekit.integrations._rungs`.

    Parameters
    ----------
    min_resource : int or "auto"
        Step of the first rung; ``"auto"`` takes it, as Optuna's
        ``SuccessiveHalvingPruner`` does, from the first trials to complete (a hundredth
        of the most steps one reported, at least 1) and prunes nothing before.
    max_resource : int
        Step of the last report of a complete trial: the forecast horizon.
    reduction_factor : int
        About one trial in ``reduction_factor`` passes each rung.
    surrogate : {"ensemble", "gp", "joint"}
        The learning-curve surrogate (:func:`scalekit.allocate._forecasters.make_forecaster`).
    quantile : float
        Forecast quantile ranked on; 0.2 is optimistic (keep what may end well).
    families : sequence of str, optional
        The ``ensemble`` surrogate's curve families (see
        :data:`scalekit.integrations._rungs.FAMILIES`; None: all twelve).
    reach : float
        A trial is judged once the forecast reaches no further beyond its points than
        ``reach`` times their span, on a log scale (:data:`scalekit.integrations._rungs.REACH`).

    Notes
    -----
    A minimised value must be positive (a loss); a maximised one must be below
    1 (an accuracy, forecast as the error ``1 - value``). Steps <= 0 are not
    used for forecasts.
    """

    def __init__(self, min_resource: int | str = 1, max_resource: int = 100,
                 reduction_factor: int = 3, *, surrogate: str = "ensemble", quantile: float = 0.2,
                 families: Sequence[str] | None = FAMILIES, reach: float = REACH):
        auto = isinstance(min_resource, str)
        if auto:
            check_choice("min_resource", min_resource, ("auto",))
            check_number("max_resource", max_resource, low=1, low_open=True)  # above any estimate
        self._settings = dict(min_resource=1 if auto else min_resource,
                              max_resource=max_resource, reduction_factor=reduction_factor,
                              surrogate=surrogate, quantile=quantile, families=families,
                              reach=reach)
        self._rankings = {False: ForecastRanking(**self._settings)}   # checks every setting
        if auto:  # rungs once a trial completes
            self._settings["min_resource"], self._rankings = None, {}

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None:
            return False
        if math.isnan(trial.intermediate_values[step]):
            return True
        if self._settings["min_resource"] is None and not self._estimate_min_resource(study):
            return False
        ranking = self._ranking(study.direction == StudyDirection.MAXIMIZE)
        done = 0
        while _KEY.format(done) in trial.system_attrs:
            done += 1
        due = ranking.due(step, done)
        if not due:
            return False
        curves = {trial.number: _points(trial)}
        trials = None
        if ranking.pooled:  # the joint surrogate reads every trial's curve
            trials = _trials(study)
            curves.update((t.number, _points(t)) for t in trials
                          if t.intermediate_values and t.number != trial.number)
        score = ranking.score(trial.number, curves)
        if math.isnan(score):  # too few points to judge: judged at this rung once it has them
            return False
        for rung in due:  # scored at every rung it has passed, then judged at each
            study._storage.set_trial_system_attr(trial._trial_id, _KEY.format(rung), score)
        trials = _trials(study) if trials is None else trials
        for rung in due:
            key = _KEY.format(rung)
            competing = [t.system_attrs[key] for t in trials
                         if key in t.system_attrs and t.number != trial.number] + [score]
            if not ranking.keeps(score, competing):
                return True
        return False

    def _estimate_min_resource(self, study: optuna.Study) -> bool:
        """``min_resource="auto"``: a hundredth of the most steps a completed trial
        reported (at least 1), as Optuna estimates it; False while no trial has completed."""
        steps = [t.last_step for t in study.get_trials(
            deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)) if t.last_step is not None]
        if not steps:
            return False
        estimate = max(max(steps) // 100, 1)
        if estimate >= self._settings["max_resource"]:
            raise InputError(f"min_resource='auto' gives {estimate} (a hundredth of the "
                             f"{max(steps)} steps a trial reported), but max_resource is "
                             f"{self._settings['max_resource']!r}: set max_resource to the last "
                             "step of a complete trial, or min_resource to a step")
        self._settings["min_resource"] = estimate
        return True

    def _ranking(self, maximize: bool) -> ForecastRanking:
        if maximize not in self._rankings:
            self._rankings[maximize] = ForecastRanking(**self._settings, maximize=maximize)
        return self._rankings[maximize]


def _trials(study: optuna.Study) -> list[FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,
                                                    optuna.trial.TrialState.COMPLETE,
                                                    optuna.trial.TrialState.PRUNED))


def _points(trial: FrozenTrial) -> tuple[list[float], list[float]]:
    steps = sorted(trial.intermediate_values)
    return steps, [trial.intermediate_values[s] for s in steps]
