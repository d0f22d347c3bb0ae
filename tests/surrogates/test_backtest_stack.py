"""Stacking learned on prefix backtests: the cut, the weights, their shrinkage, the intervals."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
from scipy import stats

from scalekit.surrogates._backtest_stack import (BacktestStacked, backtest_task, curve_rmse_weights,
                                                 half_widths, rate_fall, shrunk_weights)
from scalekit.errors import InputError
from scalekit.surrogates._evaluate import QUANTILES, Task, horizon_reach


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


def _noisy(scale, df):
    """Forecasts the true curve with a log error ``scale * reach * T``, T Student-t(df).

    The error law is the one the intervals assume (growing with the reach
    ``sqrt(0.1**2 + h**2)``), heavy-tailed so that a normal interval with the
    errors' RMS would be too wide at 50% and 80%; the noise of each (curve,
    prefix) is seeded by its name, never by a truth.
    """
    def method(tasks):
        out = []
        for t in tasks:
            seed = zlib.crc32(f"{t.run}|{t.x.size}".encode())
            noise = stats.t.rvs(df, size=t.x_target.size, random_state=seed)
            median = _curve(t.x_target) * np.exp(scale * horizon_reach(t, 0.1) * noise)
            out.append(np.tile(median[:, None], (1, QUANTILES.size)))
        return out
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
    stack = BacktestStacked({"exact": _method(1.0), "biased": _method(1.05)})
    out = stack(tasks)
    for label in ("A", "B"):
        assert stack.weights_[label]["exact"] == pytest.approx(1.0, abs=1e-6)
        assert max(stack.widths_[label].values()) == pytest.approx(0.0, abs=1e-6)
    median = int(np.flatnonzero(np.isclose(QUANTILES, 0.5))[0])
    np.testing.assert_allclose(out[0][:, median], _curve(tasks[0].x_target), rtol=1e-6)


def test_intervals_reach_nominal_coverage_under_a_known_heavy_tailed_error_law():
    """400 curves whose forecast errors follow scale * reach * t(3): the 50/80/95%
    intervals learned on the prefixes cover within 4 points of nominal on the
    curves' own targets (the former normal interval with the errors' RMS missed
    by 12 points)."""
    tasks = [_task(f"r{i}", "A") for i in range(400)]
    stack = BacktestStacked({"noisy": _noisy(0.02, 3)})
    out = stack(tasks)
    for level, (lo, hi) in ((0.5, (2, 4)), (0.8, (1, 5)), (0.95, (0, 6))):
        inside = np.concatenate([(q[:, lo] <= t.y_target) & (t.y_target <= q[:, hi])
                                 for q, t in zip(out, tasks, strict=True)])
        assert abs(inside.mean() - level) <= 0.04, (level, inside.mean())


def test_curve_rmse_weights_match_a_grid_search_over_the_simplex():
    rng = np.random.default_rng(3)
    blocks = [rng.normal(size=(int(m), 3)) * [0.5, 1.0, 2.0] + [0.3, -0.2, 0.1]
              for m in rng.integers(1, 6, size=15)]
    grid = np.array([[a, b, 1 - a - b] for a, b in itertools.product(np.linspace(0, 1, 201),
                                                                      repeat=2) if a + b <= 1])

    def objective(w):     # w: (G, 3) -> (G,), the mean over curves of each curve's RMSE
        return np.mean([np.sqrt(np.mean((b @ np.atleast_2d(w).T) ** 2, axis=0))
                        for b in blocks], axis=0)
    best = grid[np.argmin(objective(grid))]
    w = curve_rmse_weights(blocks)
    assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
    assert objective(w)[0] <= objective(best)[0] + 1e-9
    np.testing.assert_allclose(w, best, atol=0.01)


def test_shrinkage_keeps_the_stack_by_the_t_statistic_of_its_gain():
    """Two candidates with opposite biases: their mix gains clearly on every curve
    (share near 1); on three curves whose gains scatter, the share is 1 - 1/t**2
    with t the one-sample t statistic of the per-curve gain (scipy's, computed
    apart), the rest of the weight on the better single candidate."""
    rng = np.random.default_rng(0)
    clear = [np.column_stack([0.1 + 0.01 * rng.normal(size=4), -0.1 + 0.01 * rng.normal(size=4)])
             for _ in range(10)]
    weights, share = shrunk_weights(clear)
    assert share > 0.95 and weights == pytest.approx([0.5, 0.5], abs=0.05)

    hidden = [np.array([[0.05, 0.3]]), np.array([[0.4, -0.02]]), np.array([[0.2, 0.2]])]
    weights, share = shrunk_weights(hidden)
    rmse = np.array([np.abs(b[0]) for b in hidden])
    stack = curve_rmse_weights(hidden)
    gain = rmse[:, np.argmin(rmse.mean(axis=0))] - np.abs(np.vstack(hidden) @ stack)
    t = stats.ttest_1samp(gain, 0.0).statistic
    expected = max(0.0, 1 - 1 / t ** 2) if t > 0 else 0.0
    assert 0.0 < share < 0.95
    assert share == pytest.approx(expected, abs=1e-9)
    best = np.eye(2)[np.argmin(rmse.mean(axis=0))]
    np.testing.assert_allclose(weights, share * stack + (1 - share) * best, atol=1e-12)


def test_a_backtest_with_a_non_finite_forecast_takes_no_part():
    """One candidate fails (inf) on one run's backtest only: the weights and widths come
    from the other backtests and every forecast stays finite."""
    def flaky(tasks):
        out = _method(1.0)(tasks)
        return [np.full_like(q, np.inf) if t.run == "r0" and t.x.size < 12 else q
                for q, t in zip(out, tasks, strict=True)]
    tasks = [_task(f"r{i}", "A") for i in range(4)]
    stack = BacktestStacked({"flaky": flaky, "biased": _method(1.05)})
    out = stack(tasks)
    assert all(np.isfinite(q).all() for q in out)
    assert stack.weights_["A"]["flaky"] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.slow
def test_default_forecaster_from_medians_and_shared_fits_equals_the_quantile_path():
    """The default stack reads its candidates' medians alone and fits the ensemble's families
    once for ``ensemble`` and ``average``; the same stack over candidates fitted apart, read
    from their full quantiles (no ``medians``), must give the same forecasts."""
    from scalekit.surrogates._evaluate import ensemble_method, ensemble_methods, paper_m4_method
    from scalekit.surrogates._forecast import default_method

    rng = np.random.default_rng(5)
    x = np.arange(1, 41) * 10.0
    xt = np.geomspace(450.0, 4000.0, 6)
    tasks = []
    for i in range(6):
        e, a, alpha = rng.uniform(1.5, 2.5), rng.uniform(2, 6), rng.uniform(0.3, 0.8)
        y, truth = (e + a * (s / 10) ** -alpha for s in (x, xt))
        tasks.append(Task(str(i), x, y * np.exp(rng.normal(0, 0.01, x.size)), xt, truth,
                          group="ab"[i % 2]))
    apart = {"m4-paper": lambda t: paper_m4_method()(t),
             "ensemble": lambda t: ensemble_method()(t),
             "average": lambda t: ensemble_method(weighting="equal")(t)}
    shared, reference = default_method(), BacktestStacked(apart)
    for g, w in zip(shared(tasks), reference(tasks), strict=True):
        np.testing.assert_allclose(np.log(g), np.log(w), rtol=0, atol=1e-9)
    assert set(reference.weights_) == {"a", "b"}
    for label, weights in reference.weights_.items():
        assert shared.weights_[label] == pytest.approx(weights, abs=1e-12)
    # each shared member, in either order, equals its ensemble fitted alone
    equal, backtest = ensemble_methods("equal", "backtest")
    for member, alone in ((equal, ensemble_method(weighting="equal")),
                          (backtest, ensemble_method())):
        for g, w in zip(member(tasks), alone(tasks), strict=True):
            np.testing.assert_allclose(np.log(g), np.log(w), rtol=0, atol=1e-12)


def test_a_wider_level_never_gets_a_narrower_interval():
    """10 scores give a conformal rank at 80% but not at 95%, whose normal interval from the
    RMS (0.45 x 1.96 = 0.88) was narrower than the 80% one (1.0): quantiles crossed."""
    ratios = np.r_[np.zeros(8), 1.0, 1.0]
    widths = half_widths(ratios, [0.5, 0.8, 0.95], 0.1)
    assert widths[0.8] == 1.0                          # the 9th of 10 sorted scores
    assert widths[0.5] <= widths[0.8] <= widths[0.95]
    assert widths[0.95] >= np.sqrt(np.mean(ratios ** 2)) * stats.norm.ppf(0.975)



def test_remembered_keeps_only_the_last_task_lists_it_is_told_to():
    from scalekit.surrogates._evaluate import remembered

    calls = []
    method = remembered(lambda tasks: calls.append(tasks) or [len(calls)], last=2)
    a, b, c = [_task("a", "g")], [_task("b", "g")], [_task("c", "g")]
    assert [method(t)[0] for t in (a, b, a, c, b, a)] == [1, 2, 1, 3, 2, 4]
    assert calls == [a, b, c, a]          # a was dropped when c came, b was still held


def _trend(t):
    return np.log(2.0 + 3.0 * t ** -0.3)


def test_the_annealing_drop_is_taken_off_where_the_schedule_is_known():
    """Truth: ln L = trend - b (eta_max - eta_t) / eta_max under a cosine from 1e-3 to 1e-4
    (the multi-power law's drop with G = 1). The one candidate fits ``a + c trend`` to the
    prefix by least squares, so it is exact only on a curve at the peak rate. With the
    true b the default's median is the truth (the prefix lifted to the peak rate, the
    forecast lowered by the drop); ignoring the schedule (the former default) it is too
    high at the end; taking off only the drop still ahead of the prefix would leave the
    fit bent by the drop inside the prefix."""
    b, total = 0.03, 2000
    steps = np.arange(total + 1)
    rates = 1e-4 + 0.9e-3 * 0.5 * (1 + np.cos(np.pi * steps / total))

    def truth(t):
        t = np.asarray(t, dtype=int)
        return np.exp(_trend(t) - b * (rates.max() - rates[t]) / rates.max())

    def fitted_trend(tasks):
        out = []
        for t in tasks:
            coef = np.linalg.lstsq(np.column_stack([np.ones(t.x.size), _trend(t.x)]),
                                   np.log(t.y), rcond=None)[0]
            median = np.exp(coef[0] + coef[1] * _trend(t.x_target))
            out.append(np.tile(median[:, None], (1, QUANTILES.size)))
        return out

    tasks = []
    for k, cut in enumerate((600, 800, 1000, 1200)):
        x, xt = np.arange(20, cut + 1, 20.0), np.arange(cut + 50, total + 1, 50.0)
        tasks.append(Task(f"r{k}", x, truth(x), xt, truth(xt), group="g", rates=rates))
    median = int(np.flatnonzero(QUANTILES == 0.5)[0])
    known = BacktestStacked({"fit": fitted_trend}, anneal_drop=b)(tasks)
    blind = BacktestStacked({"fit": fitted_trend}, anneal_drop=b)(
        [Task(t.run, t.x, t.y, t.x_target, t.y_target, group=t.group) for t in tasks])
    ahead_only = [np.log(q[:, median]) - b * (rates[int(t.x[-1])] - rates[t.x_target.astype(int)])
                  / rates.max() for q, t in zip(blind, tasks, strict=True)]
    for t, q, q_blind, q_ahead in zip(tasks, known, blind, ahead_only, strict=True):
        np.testing.assert_allclose(np.log(q[:, median]), np.log(t.y_target), atol=1e-10)
        assert np.log(q_blind[-1, median] / t.y_target[-1]) > 0.005
        assert abs(q_ahead[-1] - np.log(t.y_target[-1])) > 1e-3


def test_the_rate_fall_is_measured_from_the_running_peak():
    steps = np.arange(0, 1001)
    rates = np.minimum(steps / 100, 1.0) * (1 - 0.5 * steps / 1000)   # warm-up, then linear
    task = Task("r", np.array([1.0]), np.ones(1), steps.astype(float), np.ones(steps.size),
                rates=rates)
    expected = np.where(steps <= 100, 0.0, (steps / 2000 - 0.05) / 0.95)   # peak 0.95 at 100
    np.testing.assert_allclose(rate_fall(task, steps.astype(float)), expected, atol=1e-14)
    assert (rate_fall(task, np.arange(0.0, 100.0)) == 0).all()
    idle = Task("r", np.array([1.0]), np.ones(1), steps.astype(float), np.ones(steps.size),
                rates=np.zeros(steps.size))
    assert (rate_fall(idle, steps.astype(float)) == 0).all()   # no rate, no fall (not 0/0)


def test_a_schedule_shorter_than_the_forecast_is_refused():
    x = np.arange(1.0, 11.0)
    task = Task("r", x, _curve(x), np.array([20.0]), np.array([np.nan]), rates=np.ones(15))
    with pytest.raises(InputError, match="ends at step 15"):
        BacktestStacked({"a": _method(1.0)})([task])


def test_a_short_prefix_is_backtested_at_the_longest_reach_it_allows():
    """A horizon of 3 e-folds asked of 8 points spanning 4.6 leaves 3 below the cut: where
    no task of the group has a backtest at its horizon, each keeps its first 6 points
    (min_points), so the group still learns which candidate extrapolates (the former
    default fell back on equal weights)."""
    x = np.geomspace(1.0, 100.0, 8)
    xt = 100.0 * np.exp(np.array([1.0, 2.0, 3.0]))
    tasks = [Task(f"r{i}", x, _curve(x), xt, _curve(xt), group="g") for i in range(3)]
    assert backtest_task(tasks[0], min_points=6) is None
    back = backtest_task(tasks[0], min_points=6, longest=True)
    np.testing.assert_array_equal(back.x, x[:6])
    np.testing.assert_array_equal(back.x_target, x[6:])
    stack = BacktestStacked({"exact": _method(1.0), "biased": _method(1.05)})
    out = stack(tasks)
    assert stack.weights_["g"]["exact"] == pytest.approx(1.0, abs=1e-6)
    median = int(np.flatnonzero(np.isclose(QUANTILES, 0.5))[0])
    np.testing.assert_allclose(out[0][:, median], _curve(xt), rtol=1e-6)


def test_a_weighted_candidate_that_forecasts_zero_for_one_run_does_not_take_the_stack_with_it():
    # "breaks" is exact on every backtest (so it takes the weight) but forecasts 0 for the
    # full prefix of run r0 (log = -inf): r0's forecast is then the only finite one's, the
    # biased candidate's; the other runs keep the exact forecast
    def breaks(tasks):
        exact = _method(1.0)(tasks)
        return [q * 0.0 if t.run == "r0" and t.x.size == 12 else q
                for q, t in zip(exact, tasks, strict=True)]

    tasks = [_task(f"r{i}", "A") for i in range(4)]
    stack = BacktestStacked({"breaks": breaks, "biased": _method(1.05)})
    out = stack(tasks)
    assert stack.weights_["A"]["breaks"] == pytest.approx(1.0, abs=1e-6)
    median = int(np.flatnonzero(np.isclose(QUANTILES, 0.5))[0])
    np.testing.assert_allclose(out[0][:, median], 1.05 * _curve(tasks[0].x_target), rtol=1e-6)
    np.testing.assert_allclose(out[1][:, median], _curve(tasks[1].x_target), rtol=1e-6)


def test_default_forecaster_equals_its_candidates_fitted_one_curve_at_a_time():
    """The default stack fits every curve and every backtest prefix of a candidate in one
    batch; the slow direct path (each candidate's estimator fitted to one curve or prefix
    at a time) must give the same forecasts, to 1e-6 in log, and the same weights."""
    from scalekit.surrogates._ensemble import ParametricEnsemble
    from scalekit.surrogates._evaluate import estimator_method
    from scalekit.surrogates._forecast import default_method
    from scalekit.surrogates._paper_m4 import PaperM4

    rng = np.random.default_rng(11)
    x = np.arange(1, 31) * 10.0
    xt = np.geomspace(330.0, 3000.0, 5)
    tasks = []
    for i, size in enumerate((30, 20)):   # prefixes of different lengths: padded batches
        e, a, alpha = rng.uniform(1.5, 2.5), rng.uniform(2, 6), rng.uniform(0.3, 0.8)
        y = (e + a * (x[:size] / 10) ** -alpha) * np.exp(rng.normal(0, 0.01, size))
        tasks.append(Task(str(i), x[:size], y, xt, np.full(xt.size, np.nan)))
    one_at_a_time = BacktestStacked({
        "m4-paper": estimator_method(PaperM4),
        "ensemble": estimator_method(ParametricEnsemble),
        "average": estimator_method(lambda: ParametricEnsemble(weighting="equal"))})
    batched = default_method()
    for g, w in zip(batched(tasks), one_at_a_time(tasks), strict=True):
        np.testing.assert_allclose(np.log(g), np.log(w), rtol=0, atol=1e-6)
    assert batched.weights_[""] == pytest.approx(one_at_a_time.weights_[""], abs=1e-9)
