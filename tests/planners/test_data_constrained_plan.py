"""The data-constrained planner against closed forms and a hand-worked answer."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.laws._chinchilla import chinchilla_optimum
from scalekit.planners._data_constrained import optimum, plan_data_constrained

PUBLISHED = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353,
             "rstar_d": 15.39, "rstar_n": 5.31}


def test_unlimited_data_is_chinchillas_closed_form():
    # B large enough that D*/N* > 1/0.051: no parameter is "excess", the law is Chinchilla's
    values = {**PUBLISHED, "B": 3000.0}
    plan = plan_data_constrained(values, 1e22, 1e30)
    closed = chinchilla_optimum(values, 1e22)
    assert plan.unlimited_params == pytest.approx(closed["params"], rel=1e-5)
    assert plan.unlimited_tokens == pytest.approx(closed["tokens"], rel=1e-5)
    assert plan.params == pytest.approx(closed["params"], rel=1e-5)     # U far beyond D*
    assert plan.loss_lost == pytest.approx(0.0, abs=1e-9)


def test_hand_worked_plan():
    """C = 1e22, U = 1e10 (docs/data_constrained.md works it through)."""
    plan = plan_data_constrained(PUBLISHED, 1e22, 1e10)
    n, d = plan.params, plan.tokens
    assert 6 * n * d == pytest.approx(1e22)
    r_d = d / 1e10 - 1
    d_eff = 1e10 * (1 + 15.39 * (1 - np.exp(-r_d / 15.39)))
    u_n = 0.051 * 1e10
    n_eff = u_n * (1 + 5.31 * (1 - np.exp(-(n / u_n - 1) / 5.31)))
    assert plan.loss == pytest.approx(1.87 + 521 * n_eff ** -0.353 + 1488 * d_eff ** -0.353,
                                      rel=1e-10)
    assert plan.epochs == pytest.approx(d / 1e10)
    # any other split of the same compute loses (the optimum is a minimum)
    for factor in (0.7, 1.4):
        other = plan_data_constrained(PUBLISHED, 1e22, 1e10, compare=(n * factor, d / factor))
        assert other.compare_loss > plan.loss
    assert plan.loss_lost > 0 and plan.epochs > 1


def test_compare_measures_the_wasted_compute():
    n, d, _ = optimum(PUBLISHED, 1e21, 1e10)
    efficient = plan_data_constrained(PUBLISHED, 1e22, 1e10, compare=(n, d))
    assert efficient.wasted_percent == pytest.approx(0.0, abs=1e-4)     # an optimum wastes none
    wasteful = plan_data_constrained(PUBLISHED, 1e22, 1e10, compare=(n * 4, d))
    assert wasteful.wasted_percent > 0
    _, _, reached = optimum(PUBLISHED, wasteful.compare_optimal_compute, 1e10)
    assert reached == pytest.approx(wasteful.compare_loss, rel=1e-7)
    assert wasteful.compare_optimal_compute < 6 * (n * 4) * d


def test_intervals_from_draws_follow_the_closed_form():
    """Draws in Chinchilla's regime (U far beyond D*): the interval of N* is the
    percentile interval of the closed-form N* of each draw."""
    rng = np.random.default_rng(0)
    names = ("E", "A", "B", "alpha", "beta", "rstar_d", "rstar_n")
    base = np.array([PUBLISHED[n] for n in names]) * np.array([1, 1, 2, 1, 1, 1, 1])
    draws = base * np.exp(rng.normal(0, [0, 0.1, 0.1, 0.02, 0.02, 0, 0], (40, 7)))
    plan = plan_data_constrained(dict(zip(names, base, strict=True)), 1e22, 1e30, draws=draws,
                                 ci_level=0.9)
    closed = [chinchilla_optimum(dict(zip(names, d, strict=True)), 1e22)["params"] for d in draws]
    np.testing.assert_allclose(plan.params_ci, np.percentile(closed, [5, 95]), rtol=1e-4)
    assert plan.params_ci[0] < plan.params < plan.params_ci[1]
    assert plan.loss_lost_ci == pytest.approx((0.0, 0.0), abs=1e-9)
