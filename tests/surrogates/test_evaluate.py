"""Evaluation harness: scores against hand computations, conformal widening, real curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.surrogates._evaluate import (QUANTILES, Forecasts, Task, averaged_method, conformal_scales,
                                           cut_curves, ensemble_method, evaluate, remembered, rescale, score,
                                           split_tasks)


def _task(run="a", truth=(1.8, 1.0)):
    return Task(run, np.array([1.0, 2.0, 3.0]), np.array([4.0, 3.0, 2.5]),
                np.array([4.0, 5.0]), np.array(truth))


def test_scores_match_a_hand_computation():
    task = _task(truth=(1.8, 1.0))
    q = np.tile(np.array([1.0, 1.2, 1.5, 1.6, 1.7, 1.9, 2.2]), (2, 1))  # median 1.6 everywhere
    row = score([task], Forecasts([q], seconds=0.5))
    assert row["final_log_err"] == pytest.approx(abs(np.log(1.6)))
    assert row["tail_mape_pct"] == pytest.approx(np.mean([0.2 / 1.8, 0.6 / 1.0]) * 100)
    assert row["cover95"] == 1.0 and row["cover80"] == 0.5 and row["cover50"] == 0.0
    assert row["ms_per_curve"] == pytest.approx(500.0)


def test_conformal_scales_undo_a_known_miscalibration():
    """Truth ~ N(0, 1) in log units, intervals built for sd 0.5: each factor comes out near 2."""
    rng = np.random.default_rng(0)
    from scipy.stats import norm
    tasks, qs = [], []
    for i in range(400):
        tasks.append(Task(str(i), np.ones(1), np.ones(1), np.arange(1.0, 6.0),
                          np.exp(rng.normal(0, 1, 5))))
        qs.append(np.exp(np.tile(norm.ppf(QUANTILES, 0, 0.5), (5, 1))))
    scales = conformal_scales(tasks, qs)
    for level in scales:
        assert scales[level] == pytest.approx(2.0, rel=0.1)
    fixed = Forecasts([rescale(q, scales) for q in qs], 1.0)
    row = score(tasks, fixed)
    assert row["cover80"] == pytest.approx(0.8, abs=0.03)


def test_cut_and_split_tasks():
    frame = pd.DataFrame({"run": ["a"] * 10 + ["b"] * 4, "step": list(range(1, 11)) + [1, 2, 3, 4],
                          "loss": np.linspace(3, 2, 10).tolist() + [3, 2.8, 2.7, 2.6],
                          "train": [1] * 7 + [0] * 3 + [1] * 4})
    cuts = cut_curves(frame, [0.5], min_points=5)
    assert [t.run for t in cuts[0.5]] == ["a"]
    assert cuts[0.5][0].x.tolist() == [1, 2, 3, 4, 5] and cuts[0.5][0].x_target.tolist() == [6, 7, 8, 9, 10]
    tasks = split_tasks(frame, train="train", min_points=5)
    assert [t.run for t in tasks] == ["a"] and tasks[0].x_target.tolist() == [8, 9, 10]


def test_ensemble_beats_persistence_on_real_curves(published_data):
    """On (Mis)Fitting curves cut at 30%, the ensemble's final-point error is under 60% of the
    'loss stays where it is' baseline's."""
    frame = pd.read_csv(published_data / "misfitting_all_checkpoints.csv")
    frame = frame[frame["total_steps"] >= 10000]
    frame["run"] = frame["model"] + frame["peak_lr"].astype(str) + frame["sweep"]
    tasks = cut_curves(frame, [0.3], x="D", y="loss")[0.3][:12]
    assert len(tasks) >= 8

    def persistence(tasks):
        return [np.full((t.x_target.size, QUANTILES.size), t.y[-1]) for t in tasks]
    table = evaluate(tasks, {"ensemble": ensemble_method(),
                             "last": persistence}).table.set_index("method")
    assert table.loc["ensemble", "final_log_err"] < 0.6 * table.loc["last", "final_log_err"]


def test_averaged_method_is_the_geometric_mean_and_remembered_calls_once():
    calls = []

    def two(tasks):
        calls.append(1)
        return [np.full((t.x_target.size, QUANTILES.size), 2.0) for t in tasks]

    def eight(tasks):
        return [np.full((t.x_target.size, QUANTILES.size), 8.0) for t in tasks]
    tasks = [_task(), _task("b")]
    cached = remembered(two)
    out = averaged_method(cached, eight)(tasks)
    np.testing.assert_allclose(out[1], 4.0)
    cached(tasks)
    assert len(calls) == 1
