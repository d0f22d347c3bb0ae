"""fit_law's per-fit constraints and input symbols, plan_for_compute on arrays, and the
bootstrap over runs (issue 14 §4, issue 13 §3), against a known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fit.fit_synthetic import A_TRUE, G_TRUE, STARTS, TRUTH, surface
from scalekit.fit import FitResult, fit_frame, fit_law, plan_for_compute
from scalekit.fit._bootstrap import resample_run_counts

@pytest.fixture(scope="module")
def grid():
    n, d = (a.ravel() for a in np.meshgrid(np.geomspace(1e7, 1e10, 6),
                                           np.geomspace(1e9, 1e12, 6)))
    return n, d


def test_symbols_name_the_inputs(grid):
    n, d = grid
    by_symbol = fit_law("chinchilla", {"N": n, "D": d}, surface(n, d), starts=STARTS)
    by_name = fit_law("chinchilla", {"params": n, "tokens": d}, surface(n, d), starts=STARTS)
    assert by_symbol.values == by_name.values
    np.testing.assert_allclose(by_symbol.predict({"N": [1e11], "D": [2e12]}),
                               surface(1e11, 2e12), rtol=1e-6)
    with pytest.raises(Exception, match="twice"):
        fit_law("chinchilla", {"N": n, "params": n, "D": d}, surface(n, d))


def test_fixed_parameter_is_held_and_the_others_recovered(grid):
    n, d = grid
    y = surface(n, d)
    fit = fit_law("chinchilla", {"N": n, "D": d}, y, starts=STARTS[:, 1:], fixed={"E": 1.7})
    assert fit.values["E"] == 1.7 and fit.stderr["E"] == 0.0 and fit.stats["fixed"] == ["E"]
    for name in ("A", "B", "alpha", "beta"):
        assert fit.values[name] == pytest.approx(TRUTH[name], rel=1e-5)
    assert fit.law.param_names == ("A", "B", "alpha", "beta")
    assert fit.derived["a"] == pytest.approx(0.37 / 0.71, rel=1e-5)
    held = fit_law("chinchilla", {"N": n, "D": d}, y, starts=STARTS[:, 1:], fixed={"E": 1.5})
    assert held.values["E"] == 1.5 and held.stats["objective"] > 1e3 * fit.stats["objective"]
    back = FitResult.from_dict(fit.to_dict())
    np.testing.assert_allclose(back.predict({"N": n, "D": d}), fit.predict({"N": n, "D": d}))
    with pytest.raises(Exception, match="`fixed`"):
        fit_law("chinchilla", {"N": n, "D": d}, y, starts=STARTS[:, 1:], fixed={"gamma": 1.0})


def test_bounds_keep_a_parameter_in_range(grid):
    n, d = grid
    y = surface(n, d)
    free = fit_law("chinchilla", {"N": n, "D": d}, y, starts=STARTS,
                   bounds={"alpha": (0.0, 1.0)})
    assert free.values["alpha"] == pytest.approx(0.34, rel=1e-5)       # the truth is inside
    capped = fit_law("chinchilla", {"N": n, "D": d}, y, starts=STARTS,
                     bounds={"alpha": (0.0, 0.3)})
    assert capped.values["alpha"] == pytest.approx(0.3, abs=1e-9)
    assert FitResult.from_dict(capped.to_dict()).law.params[3].upper == 0.3


def test_plan_for_compute_takes_arrays(grid):
    n, d = grid
    fit = fit_law("chinchilla", {"N": n, "D": d}, surface(n, d), starts=STARTS)
    budgets = np.array([1e20, 1e22, 1e24])
    plans = plan_for_compute(fit, budgets)
    np.testing.assert_allclose(plans["params"], G_TRUE * (budgets / 6) ** A_TRUE, rtol=1e-4)
    assert plans["params_ci"].shape == (3, 2)
    for k, c in enumerate(budgets):
        one = plan_for_compute(fit, c)
        assert one["params"] == plans["params"][k] and one["loss"] == plans["loss"][k]
    assert len(plans["diagnostics"]) >= 1            # 1e24 lies beyond the fitted runs


def test_run_resampling_draws_whole_runs():
    runs = np.array(["a", "a", "a", "b", "b", "c"])
    counts = resample_run_counts(np.random.default_rng(0), runs, 200)
    assert counts.shape == (200, 6)
    for rows in ([0, 1, 2], [3, 4]):
        assert (counts[:, rows] == counts[:, rows[:1]]).all()       # a run's points together
    assert (counts[:, [0, 3, 5]].sum(axis=1) == 3).all()             # three runs drawn


def test_runs_with_several_points_are_resampled_as_runs():
    """Checkpoints of a run share its noise: the default bootstrap then draws runs, and its
    interval of E is wider than the one treating every checkpoint as independent."""
    rng = np.random.default_rng(3)
    rows = []
    for run, size in enumerate(np.geomspace(1e3, 1e6, 12)):
        offset = rng.normal(0.0, 0.03)                   # one draw per run
        for step in range(1, 9):
            tokens = 1e3 * 2.0 ** step
            rows.append({"run": f"r{run}", "step": step, "x": size * tokens,
                         "loss": (1.0 + 30.0 * (size * tokens) ** -0.2) * np.exp(offset)})
    frame = pd.DataFrame(rows)
    options = dict(law="saturating_power", x="x", all_points=True, bootstrap=60, n_jobs=1)
    by_runs = fit_frame(frame, **options)
    by_points = fit_frame(frame, resample="points", **options)
    assert by_runs.stats["resample"] == "runs" and by_runs.stats["n_runs"] == 12
    assert by_points.stats["resample"] == "points"
    width = {name: r.ci["E"][1] - r.ci["E"][0] for name, r in
             (("runs", by_runs), ("points", by_points))}
    assert width["runs"] > 1.5 * width["points"]


def test_the_fit_says_when_fewer_bootstrap_workers_ran_than_asked_for():
    import json
    import os

    from scalekit.serialise import dumps

    rng = np.random.default_rng(0)
    x = np.geomspace(1.0, 1e4, 30)
    y = (0.5 + 3.0 * x ** -0.5) * np.exp(rng.normal(0.0, 0.01, x.size))
    cpus = len(os.sched_getaffinity(0))
    workers = min(3, cpus)  # three resamples: never more workers than those or the CPUs
    reason = "3 jobs" if cpus >= 3 else f"{cpus} CPU{'s' * (cpus != 1)}"
    capped = fit_law("saturating_power", {"x": x}, y, bootstrap=3, n_jobs=1000)
    note = capped.stats["workers_note"]
    assert note == f"{workers} worker{'s' * (workers != 1)} instead of 1000: {reason}"
    assert FitResult.from_dict(json.loads(dumps(capped.to_dict()))).stats["workers_note"] == note
    # as many as asked for, or none asked for (all CPUs, as many as there are resamples): no note
    for n_jobs in (1, None):
        fit = fit_law("saturating_power", {"x": x}, y, bootstrap=3, n_jobs=n_jobs)
        assert "workers_note" not in fit.stats
        assert fit.values == capped.values  # the workers change no number
