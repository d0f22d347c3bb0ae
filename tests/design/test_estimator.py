"""The design's estimator (loss, threshold, scale) and its prediction intervals: raw least
squares against a slow direct fit, a threshold that follows the noise, intervals that
hold new runs, and a fit without an interval that says how many runs give one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import least_squares

from scalekit.design import final_answer, final_fit, propose
from scalekit.design._estimator import HUBER_K, Estimator
from scalekit.errors import InputError
from scalekit.laws import get_law

from .test_design import TARGET, chinchilla, known_pool

LAW = get_law("chinchilla")


def _points(n, noise, seed):
    rng = np.random.default_rng(seed)
    N, D = np.exp(rng.uniform(np.log(1e7), np.log(1e9), n)), np.exp(rng.uniform(np.log(1e8), np.log(1e10), n))
    return {"params": N, "tokens": D}, chinchilla(N, D) * np.exp(rng.normal(0, noise, n))


def _raw_direct(X, y):
    """The slow direct fit: scipy's bounded least squares on f(x) - y from 40 random rows
    of the law's grid."""
    lower, upper = LAW.fitting_bounds()
    span = np.where(np.isfinite(upper - lower), upper - lower, 1.0)
    best = None
    grid = LAW.start_grid(X, y)
    for start in grid[np.random.default_rng(0).choice(len(grid), 40, replace=False)]:
        start = np.clip(start, lower + 1e-9 * span, upper - 1e-9 * span)
        with np.errstate(all="ignore"):
            fit = least_squares(lambda z: np.exp(LAW.log_predict_fitting(X, z)) - y, start,
                                bounds=(lower, upper), method="trf")
        if np.isfinite(fit.cost) and (best is None or fit.cost < best.cost):
            best = fit
    return best


def test_raw_least_squares_reaches_the_direct_fits_optimum():
    X, y = _points(30, 0.02, seed=3)
    fit = final_fit(LAW, X, y, loss="squared", scale="raw")
    direct = _raw_direct(X, y)
    ours = 0.5 * np.sum((fit.predict(X) - y) ** 2)
    assert fit.stats["scale"] == "raw"
    assert ours <= direct.cost * (1 + 1e-6), (ours, direct.cost)
    # and it is another optimum than the log fit's: the raw residuals weigh the large losses
    log_fit = final_fit(LAW, X, y, loss="squared", scale="log")
    assert 0.5 * np.sum((log_fit.predict(X) - y) ** 2) > ours


@pytest.mark.parametrize("noise", [0.005, 0.03])
def test_the_huber_threshold_follows_the_residual_noise(noise):
    X, y = _points(400, noise, seed=1)
    from .test_design import TRUTH

    z = LAW.to_fitting(np.array([TRUTH[name] for name in LAW.param_names]))     # the truth
    threshold = Estimator("huber", None, "log").threshold(LAW, X, np.log(y), z)
    assert threshold == pytest.approx(HUBER_K * noise, rel=0.15)


def test_raw_is_least_squares_only():
    with pytest.raises(InputError, match="The value of `loss` is 'huber', but must be 'squared'"):
        Estimator("huber", None, "raw")


def test_the_prediction_interval_holds_new_runs_at_the_rate_it_states():
    """20 runs of a pool with 2% noise; at 9 target rows inside the pool, 95% intervals
    hold new draws of the truth at those rows at least 90% of the time over 12 fits (a
    row without an interval counts as missed), and are no wider than the noise and the
    parameters' uncertainty make them (half-width under 3 noise sds in log; the noise
    alone gives 1.96)."""
    frame = pd.DataFrame({"params": np.geomspace(2e7, 5e8, 9), "tokens": np.geomspace(5e9, 2e8, 9)})
    rng = np.random.default_rng(0)
    held, half = [], []
    for seed in range(12):
        X, y = _points(20, 0.02, seed=100 + seed)
        predictions = final_answer(LAW, X, y, frame, pool=pd.DataFrame(X), seed=seed,
                                   loss="squared", scale="log")[0]
        band = np.array([p["interval"] or [np.nan, np.nan] for p in predictions])
        new = chinchilla(frame.params, frame.tokens).to_numpy() * np.exp(rng.normal(0, 0.02, 9))
        held.append((band[:, 0] <= new) & (new <= band[:, 1]))
        half.append(np.log(band[:, 1] / band[:, 0]) / 2)
    assert np.mean(held) >= 0.90, np.mean(held)
    assert np.nanmean(half) < 3 * 0.02, np.nanmean(half)


def test_the_interval_widens_when_the_law_is_wrong():
    """A law without the data term, fitted to runs whose loss falls with D, extrapolated
    to the target: the runs near the target tell that it misses them, and the interval
    grows by the discrepancy (the law's confidence band alone misses the truth)."""
    wrong = "E + A*N**-alpha"
    from scalekit.laws import law_from_expression

    law = law_from_expression(wrong)
    pool = known_pool(noise=0.005, size=8)
    X = pool.inputs(law.inputs)
    right = final_answer(LAW, pool.inputs(LAW.inputs), pool.loss, TARGET, pool=pool.frame,
                         loss="squared", scale="log")[0]
    bad = final_answer(law, X, pool.loss, TARGET, pool=pool.frame, loss="squared",
                       scale="log")[0]
    width = [np.mean([np.log(p["interval"][1] / p["interval"][0]) for p in r])
             for r in (right, bad)]
    assert width[1] > 5 * width[0], width
    truth = chinchilla(TARGET.params, TARGET.tokens).to_numpy()
    band = np.array([p["interval"] for p in bad])
    assert ((band[:, 0] <= truth) & (truth <= band[:, 1])).all()


def test_without_an_interval_the_answer_says_how_many_runs_give_one():
    pool = known_pool(size=6)
    rows = [0, 7, 35]
    seen = (pool.frame.iloc[rows], pool.loss[rows])
    result = propose(LAW, pool, TARGET, budget=0.05 * pool.cost.sum(), observed=seen)
    assert result.predictions and all(p["interval"] is None for p in result.predictions)
    note = [d for d in result.diagnostics if d.code == "few_points"]
    assert note and "observe 3 more distinct runs" in note[0].message   # 5 + 1 - 3
