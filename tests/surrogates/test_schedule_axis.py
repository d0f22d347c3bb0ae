"""The S1 axis: a task's steps mapped to the area under a known schedule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.errors import InputError
from scalekit.schedules import parse_schedule
from scalekit.surrogates._evaluate import Task
from scalekit.surrogates._forecast import forecast_frame
from scalekit.surrogates._schedule_axis import area_task


def _cosine_area(t, *, warmup, peak, final, total):
    """S1(t) of a linear warm-up then half a cosine, summed in closed form.

    Warm-up rates ``peak * i / (warmup - 1)`` sum to ``peak * warmup / 2``; the
    cosine part uses sum_{j<n} cos(j d) = sin(n d / 2) cos((n - 1) d / 2) / sin(d / 2).
    """
    n = t - warmup + 1
    d = np.pi / (total - warmup)
    cosines = np.sin(n * d / 2) * np.cos((n - 1) * d / 2) / np.sin(d / 2)
    return peak * warmup / 2 + n * (final + peak) / 2 + (peak - final) / 2 * cosines


def test_steps_map_to_the_closed_form_area_of_a_cosine_schedule():
    spec = {"warmup": 50, "peak": 2e-3, "final": 2e-4, "total": 1000}
    schedule = parse_schedule("cosine:warmup=50,peak=2e-3,final=2e-4,total=1000")
    x = np.array([60.0, 100.0, 200.0, 300.0])
    xt = np.array([500.0, 800.0, 999.0])
    task = area_task(Task("r", x, np.ones(4), xt, np.ones(3), group="g"), schedule)
    np.testing.assert_allclose(task.x, _cosine_area(x.astype(int), **spec), rtol=1e-12)
    np.testing.assert_allclose(task.x_target, _cosine_area(xt.astype(int), **spec), rtol=1e-12)
    assert task.group == "g" and task.run == "r"
    # the last steps of a cosine add little area: the forecast horizon shrinks
    assert np.log(task.x_target[-1] / task.x[-1]) < 0.7 * np.log(999 / 300)


def test_a_step_where_no_area_has_accrued_is_refused():
    schedule = parse_schedule("constant:warmup=10,peak=1e-3,total=100")
    task = Task("r", np.array([0.0, 20.0, 40.0]), np.ones(3), np.array([80.0]), np.ones(1))
    with pytest.raises(InputError, match="rise strictly"):
        area_task(task, schedule)
    with pytest.raises(InputError, match="whole steps"):
        area_task(Task("r", np.array([1.5, 20.0]), np.ones(2), np.array([80.0]), np.ones(1)),
                  schedule)


@pytest.mark.slow
def test_the_default_forecasts_against_the_step_even_where_the_schedule_is_known():
    """The measured choice (docs/forecast.md: against S1 the default was worse on
    the (Mis)Fitting cuts): a run's lr column leaves the default's forecast as it is."""
    steps = np.arange(1, 16) * 20.0
    frame = pd.DataFrame({"run": "a", "step": steps, "loss": 2.0 + 3.0 * steps ** -0.4,
                          "lr": 1e-3 * 0.5 * (1 + np.cos(np.pi * steps / 1000)),
                          "total_steps": 1000})
    with_lr = forecast_frame(frame, to=600).table
    pd.testing.assert_frame_equal(with_lr, forecast_frame(frame.drop(columns="lr"), to=600).table)


@pytest.mark.slow
def test_a_given_schedule_lowers_the_default_forecast_only_where_the_rate_falls():
    """With ``schedules`` the default takes off the annealing drop ahead: a constant rate
    (no fall) leaves the forecast as it is; a cosine lowers its median at the end, and a
    target past the schedule's end is refused."""
    steps = np.arange(1, 16) * 20.0
    frame = pd.DataFrame({"run": "a", "step": steps, "loss": 2.0 + 3.0 * steps ** -0.4})
    blind = forecast_frame(frame, to=600).table
    flat = forecast_frame(frame, to=600, schedules={"a": "constant:warmup=10,peak=1e-3,total=1000"}).table
    pd.testing.assert_frame_equal(flat, blind)
    cosine = forecast_frame(frame, to=600,
                            schedules={"a": "cosine:warmup=10,peak=1e-3,final=1e-4,total=1000"}).table
    assert cosine["q0.5"].iloc[-1] < blind["q0.5"].iloc[-1]
    with pytest.raises(InputError, match="not in the curves"):
        forecast_frame(frame, to=600, schedules={"b": "constant:warmup=10,peak=1e-3,total=1000"})
    with pytest.raises(InputError, match="default method"):
        forecast_frame(frame, to=600, method="pow3",
                       schedules={"a": "constant:warmup=10,peak=1e-3,total=1000"})
    with pytest.raises(InputError, match="finished"):
        forecast_frame(frame, to=600, schedules={"a": "constant:warmup=10,peak=1e-3,total=500"})
