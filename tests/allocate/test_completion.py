"""Forecast-completed frontier: promoted runs continued to their full length by a surrogate."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.allocate._forecasters import make_forecaster
from scalekit.allocate._metrics import completed_runs, fit_frontier, forecast_completed, frontier_law_error
from scalekit.allocate._replay import replay
from scalekit.allocate._synthetic import chinchilla_loss, early_leader_sweep


@pytest.fixture(scope="module")
def exact():
    """Noise-free Chinchilla curves (the joint surrogate's own law form): a known truth."""
    return early_leader_sweep(seed=0, sizes=6, variants=1, points=60, noise=0.0, penalty=0.0)


def _prefixes(sweep, share):
    return {run: curve.until(share * sweep.max_resource[run]) for run, curve in sweep.curves.items()}


def test_completed_points_follow_the_true_curves_to_their_end(exact):
    observed = _prefixes(exact, 0.1)
    runs = sorted(exact.runs, key=exact.params.get)[-2:]
    completed = forecast_completed(observed, exact, runs, make_forecaster("joint"), points=5)
    for run in exact.runs:
        explored = observed[run]
        curve = completed[run]
        np.testing.assert_array_equal(curve.loss[: len(explored)], explored.loss)
        added = len(curve) - len(explored)
        assert added == (5 if run in runs else 0)
        if added:
            assert curve.compute[-1] == pytest.approx(exact.max_resource[run])
            tokens = curve.compute[len(explored):] / (6.0 * exact.params[run])
            truth = chinchilla_loss(exact.params[run], tokens)
            np.testing.assert_allclose(curve.loss[len(explored):], truth, rtol=5e-3)


def test_completion_brings_the_frontier_law_closer_to_the_exhaustive_one(exact):
    observed = _prefixes(exact, 0.1)
    largest = max(c.compute[-1] for c in exact.curves.values())
    reference = fit_frontier(exact.curves)
    explored = frontier_law_error(fit_frontier(observed), reference, [largest])[0]
    completed = forecast_completed(observed, exact, exact.runs, make_forecaster("joint"))
    error = frontier_law_error(fit_frontier(completed), reference, [largest])[0]
    assert error < 0.01
    assert error < explored / 3


def test_completed_runs_are_those_promoted_last_or_every_explored_run(exact):
    observed = _prefixes(exact, 0.1)
    first, second = exact.runs[:2]
    observed[second] = observed[second].until(0.0)   # promoted but never trained: nothing to extend
    assert completed_runs([[first, second, "x"], [first, second]], observed) == [first]
    assert completed_runs([], observed) == [r for r in exact.runs if r != second]
    completed = forecast_completed(observed, exact, [second], make_forecaster("joint"))
    assert len(completed[second]) == 0


@pytest.mark.parametrize("surrogate", ["ensemble", "gp"])
def test_per_run_surrogates_complete_only_the_runs_asked(exact, surrogate):
    observed = _prefixes(exact, 0.1)
    short = exact.runs[0]
    observed[short] = observed[short].until(observed[short].resource[3])  # 4 points: below gp's 5
    forecaster = make_forecaster(surrogate)
    asked = [short, exact.runs[-1]]
    x = {run: np.array([exact.max_resource[run]]) for run in exact.runs}
    every = forecaster.forecast(observed, exact.params, x, [0.5])
    some = forecaster.forecast(observed, exact.params, {r: x[r] for r in asked}, [0.5])
    assert sorted(some) == sorted(asked)
    for run in asked:
        assert np.isfinite(some[run]).all()
        np.testing.assert_allclose(some[run], every[run])


def _hide(observed, run):
    observed = dict(observed)
    observed[run] = observed[run].until(0.0)
    return observed


@pytest.mark.parametrize("which", [2, -1])   # a size inside the range, and the largest
def test_a_run_never_trained_is_forecast_from_its_size(exact, which):
    hidden = sorted(exact.runs, key=exact.params.get)[which]
    observed = _hide(_prefixes(exact, 0.1), hidden)
    grid = {hidden: exact.curves[hidden].compute[::10]}
    q = make_forecaster("joint", unseen=True).forecast(observed, exact.params, grid, [0.2, 0.5, 0.8])
    n = exact.params[hidden]
    truth = chinchilla_loss(n, grid[hidden] / (6.0 * n))
    np.testing.assert_allclose(q[hidden][:, 1], truth, rtol=5e-3)
    assert np.all(q[hidden][:, 0] < q[hidden][:, 1]) and np.all(q[hidden][:, 1] < q[hidden][:, 2])
    without = make_forecaster("joint").forecast(observed, exact.params, grid, [0.5])
    assert np.isnan(without[hidden]).all()


def test_logged_completion_forecasts_every_run_on_its_logging_schedule(exact):
    largest = sorted(exact.runs, key=exact.params.get)[-1]
    observed = _hide(_prefixes(exact, 0.1), largest)
    completed = forecast_completed(observed, exact, exact.runs,
                                   make_forecaster("joint", unseen=True), logged=True)
    for run in exact.runs:
        np.testing.assert_array_equal(completed[run].compute, exact.curves[run].compute)
        explored = len(observed[run])
        np.testing.assert_array_equal(completed[run].loss[:explored], observed[run].loss)
        np.testing.assert_allclose(completed[run].loss[explored:],
                                   exact.curves[run].loss[explored:], rtol=5e-3)
    unseen_off = forecast_completed(observed, exact, exact.runs, make_forecaster("joint"),
                                    logged=True)
    assert len(unseen_off[largest]) == 0


def test_completing_every_run_recovers_the_frontier_the_largest_run_sets(exact):
    largest_run = sorted(exact.runs, key=exact.params.get)[-1]
    observed = _hide(_prefixes(exact, 0.1), largest_run)
    largest = max(c.compute[-1] for c in exact.curves.values())
    reference = fit_frontier(exact.curves)
    explored = frontier_law_error(fit_frontier(observed), reference, [largest])[0]
    promoted = forecast_completed(observed, exact, [r for r in exact.runs if r != largest_run],
                                  make_forecaster("joint"))
    every = forecast_completed(observed, exact, exact.runs, make_forecaster("joint", unseen=True),
                               logged=True)
    error = frontier_law_error(fit_frontier(every), reference, [largest])[0]
    assert error < 0.01
    assert error < explored / 3
    assert len(promoted[largest_run]) == 0


def test_replay_reports_the_all_completed_error_of_each_policy(exact):
    result = replay(exact, policies=["forecast", "uniform"], budgets=[0.2], seeds=1)
    rows = result.rows.set_index("policy")
    assert np.isfinite(rows["all_completed_frontier_error_at_max"]).all()
    assert rows.loc["forecast", "all_completed_frontier_error_at_max"] < 0.01
    assert (result.averages["all_completed_frontier_error_at_max"].to_numpy()
            == rows.loc[result.averages.policy, "all_completed_frontier_error_at_max"].to_numpy()).all()
