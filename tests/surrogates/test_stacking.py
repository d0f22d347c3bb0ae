"""Stacking of forecast methods: weights against a brute-force search, honesty of the split."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.surrogates._evaluate import (QUANTILES, StackedMethod, Task, averaged_method, evaluate,
                                           stacking_weights)


def _brute_force(errors, step=0.01):
    """Best simplex weights on a grid: the slow straightforward reference."""
    k = errors.shape[1]
    grid = np.arange(0.0, 1.0 + step / 2, step)
    best, best_w = np.inf, None
    for head in itertools.product(grid, repeat=k - 1):
        if sum(head) > 1 + 1e-9:
            continue
        w = np.array([*head, 1.0 - sum(head)])
        value = np.abs(errors @ w).mean()
        if value < best:
            best, best_w = value, w
    return best, best_w


@pytest.mark.parametrize("k", [2, 3])
def test_stacking_weights_reach_the_brute_force_optimum(k):
    rng = np.random.default_rng(k)
    errors = rng.normal(0, 0.05, (40, k)) + rng.normal(0, 0.05, k)
    best, _ = _brute_force(errors)
    w = stacking_weights(errors)
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
    assert np.abs(errors @ w).mean() <= best + 1e-4


def test_opposite_biases_cancel_and_a_useless_candidate_gets_no_weight():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.002, 200)
    errors = np.column_stack([0.1 + noise, -0.1 + noise, rng.normal(0, 0.3, 200)])
    w = stacking_weights(errors)
    np.testing.assert_allclose(w, [0.5, 0.5, 0.0], atol=0.03)


def _tasks(n, truth_shift=0.0):
    """Truth y = 1 at the target; candidate 'high' forecasts e^0.2, 'low' e^-0.1."""
    return [Task(str(i), np.arange(1.0, 6.0), np.ones(5), np.array([6.0, 7.0]),
                 np.exp(np.array([0.0, truth_shift * (i % 2)]))) for i in range(n)]


def _constant(log_value):
    def method(tasks):
        return [np.exp(np.full((t.x_target.size, QUANTILES.size), log_value)
                       + np.linspace(-0.1, 0.1, QUANTILES.size)) for t in tasks]
    return method


def test_stacked_method_learns_the_cancelling_mix_and_reads_only_calibration_truths():
    candidates = {"high": _constant(0.2), "low": _constant(-0.1)}
    stacked = StackedMethod(candidates)
    tasks = _tasks(20)
    calibration = list(range(10))
    out = stacked(tasks, calibration=calibration)
    # 1/3 of 0.2 + 2/3 of -0.1 = 0: the median lands on the truth
    assert stacked.weights_["high"] == pytest.approx(1 / 3, abs=1e-3)
    median = int(np.flatnonzero(QUANTILES == 0.5)[0])
    np.testing.assert_allclose(np.log(out[15][-1, median]), 0.0, atol=1e-3)
    # changing the truths of the other tasks changes nothing
    moved = tasks[:10] + [Task(t.run, t.x, t.y, t.x_target, t.y_target * 5) for t in tasks[10:]]
    again = StackedMethod(candidates)(moved, calibration=calibration)
    for a, b in zip(out, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_stacked_method_without_truths_is_the_plain_average():
    candidates = {"high": _constant(0.2), "low": _constant(-0.1)}
    tasks = _tasks(4)
    out = StackedMethod(candidates)(tasks)
    reference = averaged_method(*candidates.values())(tasks)
    for a, b in zip(out, reference, strict=True):
        np.testing.assert_allclose(a, b)


def test_evaluate_hands_the_calibration_half_to_a_learning_method():
    """The exact candidate wins the weight, so the stacked error is the exact one's: zero."""
    tasks = _tasks(30)
    stacked = StackedMethod({"exact": _constant(0.0), "off": _constant(0.3)})
    table = evaluate(tasks, {"stacked": stacked}, split_seed=0).table.set_index("subset")
    assert stacked.weights_["exact"] == pytest.approx(1.0, abs=1e-3)
    assert table.loc["all", "final_log_err"] < 1e-3
    # the calibration half is scored in its own row, on its own tasks
    assert table.loc["calibration", "curves"] + table.loc["all", "curves"] == 30


def test_stacked_intervals_grow_with_the_horizon_at_the_rate_of_the_calibration_errors():
    """Truth log errors ~ N(0, (s * sqrt(h0**2 + h**2))**2), s = 0.05: the fitted spread
    comes out near s and the 80% intervals cover about 80% of new tasks at every horizon."""
    rng = np.random.default_rng(3)
    horizons = np.array([0.2, 1.0, 2.5])
    sd = 0.05 * np.sqrt(0.1 ** 2 + horizons ** 2)
    tasks = [Task(str(i), np.arange(1.0, 6.0), np.ones(5), 5.0 * np.exp(horizons),
                  np.exp(rng.normal(0.0, sd))) for i in range(1200)]
    stacked = StackedMethod({"flat": _constant(0.0)}, h0=0.1)
    out = stacked(tasks, calibration=list(range(600)))
    assert stacked.spread_ == pytest.approx(0.05, rel=0.06)
    lo, hi = (int(np.flatnonzero(np.isclose(QUANTILES, q))[0]) for q in (0.1, 0.9))
    inside = np.array([(q[:, lo] <= t.y_target) & (t.y_target <= q[:, hi])
                       for q, t in zip(out[600:], tasks[600:], strict=True)])
    np.testing.assert_allclose(inside.mean(axis=0), 0.8, atol=0.04)


@pytest.mark.parametrize("settings", [{"h0": 0.0}, {"folds": 0}])
def test_bad_stacking_settings_are_refused(settings):
    with pytest.raises(InputError, match="must be"):
        StackedMethod({"flat": _constant(0.0)}, **settings)(_tasks(4), calibration=[0, 1])
