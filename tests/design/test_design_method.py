"""Our design method's rules against closed forms and synthetic truths: its starting
design is the cheapest runs (Li et al. 2026), a pick is scored per cost^0.4, the law's
discrepancy is its extrapolation error toward the target and enters the covariance as a
Gaussian process that is exact at the target (a far run observing its own part as noise),
and the target rows weigh as their predicted values (the variance of the values)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from scalekit.design import Pool, grid_pool, propose, replay
from scalekit.design._belief import extrapolation_error
from scalekit.design._estimator import Estimator
from scalekit.design._methods import greedy_batch, with_discrepancy
from scalekit.laws import get_law

TARGET = pd.DataFrame({"params": [5e9, 1e10], "tokens": [1e11, 2e11]})
#: The estimator these tests were written for (Huber, delta 1e-3, on the log values).
OLD = Estimator("huber", 1e-3, "log")


def chinchilla(n, d):
    return 1.8 + 400.0 * n ** -0.34 + 2000.0 * d ** -0.37


@pytest.mark.slow
def test_ensemble_starts_with_the_cheapest_two_and_a_half_runs_per_parameter():
    law = get_law("chinchilla")                    # 5 parameters: 13 starting runs
    frame = grid_pool("N=1e7:1e9:8,D=1e8:1e10:8")
    frame["loss"] = chinchilla(frame.params, frame.tokens)
    pool = Pool.from_frame(frame, y="loss")
    result = replay(law, pool, TARGET, budget=0.05 * pool.cost.sum(), method="ensemble")
    cheapest = np.argsort(pool.cost, kind="stable")[:13]
    assert pool.cost[cheapest].sum() <= 0.02 * pool.cost.sum()
    start = [c for c in result.chosen if "starting design" in c["reason"]]
    assert sorted(pool.cost[[c["row"] for c in start]]) == pytest.approx(
        sorted(pool.cost[cheapest]))
    assert len(start) == 13 and "starting design" not in result.chosen[13]["reason"]


def test_at_a_small_budget_the_start_leaves_half_of_it_to_the_model():
    law = get_law("chinchilla")                    # 5 parameters: 6 runs to fit, 13 to start
    frame = grid_pool("N=1e7:1e9:8,D=1e8:1e10:8")
    frame["loss"] = chinchilla(frame.params, frame.tokens)
    pool = Pool.from_frame(frame, y="loss")
    budget = 0.003 * pool.cost.sum()               # the 13 cheapest runs cost 68% of it
    assert np.sort(pool.cost)[:13].sum() > 0.6 * budget
    result = replay(law, pool, TARGET, budget=budget, method="ensemble")
    start = [c["cost"] for c in result.chosen if "starting design" in c["reason"]]
    guided = [c for c in result.chosen if "variance" in c["reason"]]
    assert len(start) >= 6 and sum(start) <= 0.5 * budget
    assert guided and sum(c["cost"] for c in guided) > 0.3 * budget


def test_a_dear_run_beside_the_target_wins_per_cost_to_the_power_0_4():
    # one target row of prior variance 1; candidate 0 is the target itself (cost 100),
    # candidates 1-3 see a thirtieth of it (cost 1). With noise s2 = 0.01 the V-optimal
    # scores are 1 / (1 + s2) = 0.990 and (1/30)^2 / ((1/30)^2 + s2) = 0.100: per unit
    # cost the cheap ones win (0.0099 < 0.100), per cost^0.4 (100^0.4 = 6.31) the dear
    # one does (0.157 > 0.100).
    F = np.array([[1.0], [1.0], [1 / 30], [1 / 30], [1 / 30]])
    noise = 1e-2
    cost = np.array([100.0, 1.0, 1.0, 1.0])
    assert greedy_batch("v_optimal", F, np.eye(1), 1, cost, 1000.0, 1, noise)[0][0] == 1
    [(j, score, share)] = greedy_batch("ensemble", F, np.eye(1), 1, cost, 1000.0, 1, noise)
    assert j == 0
    assert score == pytest.approx(1 / (1 + noise))
    assert share == pytest.approx(1 - noise / (1 + noise))


def test_the_discrepancy_is_the_laws_error_where_it_extrapolates():
    law = get_law("chinchilla")
    n, d = (g.ravel() for g in np.meshgrid(np.geomspace(1e7, 1e9, 6), np.geomspace(1e8, 1e10, 6)))
    X = {"params": n, "tokens": d}
    near = n * d >= np.median(n * d)
    log_y = np.log(chinchilla(n, d))
    rng = np.random.default_rng(0)
    exact = extrapolation_error(law, X, log_y, near, warm=None, rng=rng, estimator=OLD)
    assert exact == 0.0                            # the law is the truth: no discrepancy
    noisy = log_y + np.random.default_rng(1).normal(0, 0.02, len(n))
    # errors of the size the noise explains are not discrepancy (raw mean square: 4e-4)
    assert extrapolation_error(law, X, noisy, near, warm=None, rng=rng, estimator=OLD) < 1e-4
    shifted = log_y + 0.05 * near                  # the law misses a 5% rise near the target
    assert extrapolation_error(law, X, shifted, near, warm=None, rng=rng, estimator=OLD) == pytest.approx(
        0.05 ** 2, rel=0.1)


def test_the_discrepancy_adds_its_kernel_exactly_at_the_target():
    target = np.array([[0.0, 0.0], [1.0, 0.5]])
    candidates = np.array([[0.2, 0.1], [3.0, 3.0]])
    F, A = np.ones((4, 1)), np.eye(1) * 0.5
    G, B, _ = with_discrepancy(F, A, target, candidates, 0.3)
    joint = G @ B @ G.T - F @ A @ F.T
    points = np.vstack([target, candidates])
    kernel = 0.3 * np.exp(-0.5 * ((points[:, None] - points[None]) ** 2).sum(-1))
    # exact wherever a target row is involved (target-target, target-candidate)
    assert joint[:2] == pytest.approx(kernel[:2])
    # a candidate far from the target carries almost none of it
    assert joint[3, 3] < 1e-3 * 0.3
    assert math.isclose(joint[2, 2], kernel[2, :2] @ np.linalg.solve(kernel[:2, :2] / 0.3,
                                                                     kernel[:2, 2] / 0.3) * 1,
                        rel_tol=1e-9)


def test_among_equally_cheap_runs_the_start_spreads_out():
    law = get_law("chinchilla")
    frame = grid_pool("N=1e7:1e9:5,D=1e8:1e10:5")       # 25 runs of equal cost
    pool = Pool.from_frame(frame, cost="1")
    start = propose(law, pool, TARGET, budget=25.0, batch=4, method="ensemble")
    corners = {(n, d) for n in (1e7, 1e9) for d in (1e8, 1e10)}
    chosen = {(c["inputs"]["params"], c["inputs"]["tokens"]) for c in start.chosen}
    # farthest-first from the first run (the smallest N and D) reaches the four corners
    assert {(round(n, -5), round(d, -6)) for n, d in chosen} == corners


def test_weighted_by_the_predicted_values_the_score_is_the_expected_squared_error():
    # two target rows of log-variance 1, predicted values 1 and 3; candidate j sees row j
    # alone. In log units the two are worth the same (the first is taken); in the values'
    # units row 2 weighs 3^2: Var(y) = y^2 Var(log y) (delta method), and observing it
    # with noise s2 removes 9 (1 - s2 / (1 + s2)) of the summed 1 + 9.
    F = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    noise, cost = 1e-2, np.ones(2)
    assert greedy_batch("ensemble", F, np.eye(2), 2, cost, 10.0, 1, noise)[0][0] == 0
    [(j, score, share)] = greedy_batch("ensemble", F, np.eye(2), 2, cost, 10.0, 1, noise,
                                       np.array([1.0, 3.0]))
    assert j == 1
    assert score == pytest.approx(9 / (1 + noise))
    assert share == pytest.approx(9 / (10 * (1 + noise)))


def test_a_run_far_from_the_target_carries_its_own_discrepancy_as_noise():
    # one target row at the origin; the discrepancy's kernel with a run at distance r is
    # v exp(-r^2 / 2), so what the target rows do not explain of that run's own
    # discrepancy is v (1 - exp(-r^2)) (the FITC correction of the Nystrom form)
    target = np.zeros((1, 2))
    candidates = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 4.0]])
    v = 0.3
    _, _, own = with_discrepancy(np.ones((4, 1)), np.eye(1), target, candidates, v)
    r2 = (candidates ** 2).sum(axis=1)
    assert own[0] == pytest.approx(0.0, abs=1e-12)
    assert own[1:] == pytest.approx(v * (1 - np.exp(-r2)), rel=1e-9)


def test_an_ensemble_pick_is_the_best_reduction_of_the_values_variance_per_cost():
    # a straightforward dense reference: the joint covariance of the log predictions,
    # J C J^T, turned into the values' (y_t^2 C_tt at the target, the delta method)
    from scalekit.design._belief import belief
    from scalekit.design._loop import _features, _model_picks
    from scalekit.fit import log_value_and_jacobian

    law = get_law("chinchilla")
    frame = grid_pool("N=1e7:1e9:6,D=1e8:1e10:6")
    frame["loss"] = chinchilla(frame.params, frame.tokens) * np.exp(
        np.random.default_rng(0).normal(0, 0.01, len(frame)))
    pool = Pool.from_frame(frame, y="loss")
    seen = np.arange(len(frame)) % 3 == 0
    X = {c: frame[c].to_numpy(float)[seen] for c in law.inputs}
    post = belief(law, X, pool.loss[seen], ensemble=False, warm=None,
                  rng=np.random.default_rng(0), estimator=OLD)
    target = pd.DataFrame({"params": [3e7, 2e10], "tokens": [3e8, 4e11]})   # loss ~3.9, ~2.0
    Xt = {c: target[c].to_numpy(float) for c in law.inputs}
    [(row, _, extra)] = _model_picks(law, "ensemble", post, pool, Xt, ~seen, np.inf, 1,
                                     _features(frame, target, law.inputs))
    rows = np.flatnonzero(~seen)
    value, J = log_value_and_jacobian(
        law, {c: np.concatenate([Xt[c], frame[c].to_numpy(float)[rows]]) for c in law.inputs},
        post.members[0])
    C = J @ post.covs[0] @ J.T
    w2 = np.exp(2 * value[:2])
    removed = (w2[:, None] * C[:2, 2:] ** 2).sum(axis=0) / (np.diag(C)[2:] + post.noise)
    best = int(np.argmax(removed / pool.cost[rows] ** 0.4))
    assert row == rows[best]
    assert extra["variance_reduction"] == pytest.approx(
        removed[best] / (w2 * np.diag(C)[:2]).sum(), rel=1e-6)
