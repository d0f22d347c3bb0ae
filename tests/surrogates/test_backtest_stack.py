"""Stacking learned on prefix backtests: the cut, the weights, the spread."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.surrogates.backtest_stack import BacktestStacked, backtest_task
from scalekit.surrogates.evaluate import QUANTILES, Task


def _curve(x):
    return 2.0 + 3.0 * x ** -0.5


def _task(run, group):
    x = np.geomspace(1.0, 100.0, 12)
    y = _curve(x)
    xt = np.array([150.0, 250.0])
    return Task(run, x, y, xt, _curve(xt), group=group)


def _method(bias):
    """Forecasts the true curve times ``bias``, reading only x (no truth)."""
    def method(tasks):
        return [np.tile(_curve(t.x_target)[:, None] * bias, (1, QUANTILES.size)) for t in tasks]
    return method


def test_backtest_cut_matches_the_horizon():
    task = _task("a", "g")
    back = backtest_task(task, min_points=5)
    horizon = np.log(250.0 / 100.0)
    assert (back.x <= 100.0 * np.exp(-horizon)).all()
    assert (back.x_target > 100.0 * np.exp(-horizon)).all()
    np.testing.assert_array_equal(np.concatenate([back.x, back.x_target]), task.x)
    assert backtest_task(task, min_points=12) is None


def test_weights_go_to_the_candidate_that_backtests_well_per_group():
    tasks = [_task(f"r{i}", "A" if i < 3 else "B") for i in range(6)]
    exact, biased = _method(1.0), _method(1.05)
    stack = BacktestStacked({"exact": exact, "biased": biased})
    out = stack(tasks)
    for label in ("A", "B"):
        assert stack.weights_[label]["exact"] == pytest.approx(1.0, abs=1e-6)
        assert stack.spread_[label] == pytest.approx(0.0, abs=1e-6)
    median = int(np.flatnonzero(np.isclose(QUANTILES, 0.5))[0])
    np.testing.assert_allclose(out[0][:, median], _curve(tasks[0].x_target), rtol=1e-6)


def test_spread_is_the_rms_of_backtest_errors_over_reach():
    """One candidate 2% high everywhere: s**2 = mean(ln(1.02)**2 / (h0**2 + h**2))."""
    tasks = [_task(f"r{i}", "A") for i in range(3)]
    stack = BacktestStacked({"high": _method(1.02)}, h0=0.1)
    stack(tasks)
    back = backtest_task(tasks[0], min_points=6)
    h = np.log(back.x_target / back.x[-1])
    expected = np.sqrt(np.mean(np.log(1.02) ** 2 / (0.01 + h ** 2)))
    assert stack.spread_["A"] == pytest.approx(expected, rel=1e-9)
