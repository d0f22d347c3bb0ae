"""Forecasting against the area under the learning rate instead of the step.

A run's loss depends on its learning-rate history; the multi-power law of Luo
et al. (2025) writes its main term as a power law in ``S1(t)``, the sum of the
rates of steps ``0 … t``. :func:`area_task` re-expresses a forecasting task on
that axis: the observed steps and the steps to forecast become ``S1`` of the
run's schedule, so any forecaster fits loss against ``S1`` and its forecast at
a step is read at that step's ``S1`` (the order of the points is kept, so the
quantiles line up with the steps asked for).

Measured on the (Mis)Fitting cut curves (``bench/schedule_aware_forecast.py``,
docs/forecast.md), ``stacked-backtest`` against ``S1`` is worse at every cut
than against the step, so the default forecasts against the step; this axis
is the route for a caller who wants it.
"""

from __future__ import annotations

import numpy as np

from scalekit.errors import InputError
from scalekit.schedules import Schedule
from scalekit.surrogates._evaluate import Task


def area_task(task: Task, schedule: Schedule) -> Task:
    """``task`` with its steps (``x`` and ``x_target``) replaced by ``schedule``'s ``S1``.

    The steps must be whole numbers inside the schedule, and ``S1`` must rise
    strictly over the observed steps (a rate of 0 between two of them leaves two
    points at one position).
    """
    steps = np.concatenate([task.x, task.x_target])
    if not np.allclose(steps, np.round(steps)):
        raise InputError(f"run {task.run!r}: its x values are not whole steps, so the "
                         "schedule cannot place them")
    x, x_target = (schedule.area(np.round(v).astype(np.int64)) for v in (task.x, task.x_target))
    if x[0] <= 0 or (np.diff(x) <= 0).any():
        raise InputError(f"run {task.run!r}: the area under its learning rate does not rise "
                         "strictly over its observed steps (a rate of 0 between two of them)")
    return Task(task.run, x, task.y, x_target, task.y_target, group=task.group, size=task.size)
