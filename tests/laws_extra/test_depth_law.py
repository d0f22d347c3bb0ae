"""Depth law (Liu, Kangaslahti, Liu & Gore 2026): published exponents, recovery, planner."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.errors import InputError
from scalekit.fit import fit_law
from scalekit.laws import get_law
from scalekit.laws._depth import count_depth, depth_regime, regime_resolved
from scalekit.planners._depth import (param_count_from_expression, plan_depth, transformer_params,
                                      width_for_depth)

#: Liu et al. (2026) on the Chinchilla runs, 203 lowest losses: value and +- (PROVENANCE.md).
PUBLISHED = {"alpha_m": (0.98, 0.08), "alpha_l": (1.2, 0.3), "alpha_D": (0.30, 0.01)}

TRUTH = {"c_m": 300.0, "alpha_m": 1.0, "c_l": 2.0, "alpha_l": 1.2, "c_D": 500.0, "alpha_D": 0.3,
         "L0": 1.7}


@pytest.fixture(scope="module")
def chinchilla_fit(published_data):
    frame = pd.read_csv(published_data / "chinchilla_depth_width.csv").nsmallest(203, "loss")
    X = {"width": frame["d_model"].to_numpy(), "depth": frame["n_layers"].to_numpy(),
         "tokens": frame["num_tokens"].to_numpy()}
    # Liu et al. fit the mean squared error of the log loss.
    return fit_law("depth_width_data", X, frame["loss"].to_numpy(), loss="squared")


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_chinchilla_exponents_agree_with_liu_et_al(chinchilla_fit, name):
    value, spread = PUBLISHED[name]
    assert abs(chinchilla_fit.values[name] - value) <= spread
    # our standard error is of the size of their bootstrap spread
    assert 0.5 * spread <= chinchilla_fit.stderr[name] <= 2.0 * spread
    lo, hi = chinchilla_fit.ci[name]
    assert lo < value < hi


def test_chinchilla_depth_regime_is_ensemble_like(chinchilla_fit):
    assert depth_regime(chinchilla_fit.values["alpha_l"]) == "ensemble-like"
    # the interval excludes the ODE-like exponent 3
    assert chinchilla_fit.ci["alpha_l"][1] < 3.0


def test_recovers_known_exponents_from_synthetic_grid():
    rng = np.random.default_rng(3)
    m, depth, D = np.meshgrid([256, 512, 1024, 2048], [4, 8, 16, 32, 64], [1e8, 1e9, 1e10])
    X = {"width": m.ravel().astype(float), "depth": depth.ravel().astype(float),
         "tokens": D.ravel()}
    law = get_law("depth_width_data")
    y = law.predict(X, TRUTH) * np.exp(rng.normal(0, 0.002, m.size))
    fit = fit_law(law, X, y, loss="squared")
    for name in ("alpha_m", "alpha_l", "alpha_D"):
        assert fit.values[name] == pytest.approx(TRUTH[name], rel=0.1)
        lo, hi = fit.ci[name]
        assert lo < TRUTH[name] < hi


def test_count_depth_drops_first_and_last_layer():
    assert count_depth([3, 10], exclude_end_layers=True).tolist() == [1.0, 8.0]
    assert count_depth([3, 10]).tolist() == [3.0, 10.0]


@pytest.mark.parametrize("alpha_l, regime", [(1.0, "ensemble-like"), (3.0, "ODE-like"),
                                             (0.2, "shallow")])
def test_regime_names(alpha_l, regime):
    assert depth_regime(alpha_l) == regime


def test_regime_unresolved_when_interval_straddles_two():
    assert not regime_resolved((1.2, 2.8))
    assert regime_resolved((0.8, 1.6))


@pytest.mark.parametrize("budget", [1e7, 1e9, 1e11])
def test_optimal_depth_matches_closed_form_for_12_m2_l(budget):
    # Along N = 12 m^2 l, L(l) = c_m (N/12l)^(-a_m/2) + c_l l^-a_l; dL/dl = 0 gives
    # l* = [2 a_l c_l / (a_m c_m) (N/12)^(a_m/2)]^(1 / (a_m/2 + a_l)).
    v = TRUTH
    closed = (2 * v["alpha_l"] * v["c_l"] / (v["alpha_m"] * v["c_m"])
              * (budget / 12) ** (v["alpha_m"] / 2)) ** (1 / (v["alpha_m"] / 2 + v["alpha_l"]))
    plan = plan_depth(v, budget, 1e10)
    assert plan.depth == pytest.approx(closed, rel=1e-5)
    assert 12 * plan.width ** 2 * plan.depth == pytest.approx(budget, rel=1e-8)
    assert plan.aspect_ratio == pytest.approx(plan.width / plan.depth)


def test_any_formula_and_integer_depth_match_brute_force():
    count = param_count_from_expression("12*m**2*l + 2*50000*m")
    law = get_law("depth_width_data")
    depths = np.arange(1.0, 400.0)
    widths = width_for_depth(1e9, depths, param_count=count)
    losses = law.predict({"width": widths, "depth": depths, "tokens": np.full(depths.size, 1e10)},
                         TRUTH)
    plan = plan_depth(TRUTH, 1e9, 1e10, param_count=count, integer_depth=True)
    assert plan.depth == depths[np.argmin(losses)]
    assert plan.loss == pytest.approx(losses.min(), rel=1e-9)
    assert count(np.array([plan.width]), np.array([plan.depth]))[0] == pytest.approx(1e9, rel=1e-8)


def test_loss_lost_at_user_shape():
    plan = plan_depth(TRUTH, 1e9, 1e10)
    same = plan_depth(TRUTH, 1e9, 1e10, shape=(plan.width, plan.depth))
    assert same.loss_lost == pytest.approx(0.0, abs=1e-12)
    other = plan_depth(TRUTH, 1e9, 1e10, shape=(4 * plan.width, plan.depth / 16))
    law = get_law("depth_width_data")
    direct = law.predict({"width": [4 * plan.width], "depth": [plan.depth / 16],
                          "tokens": [1e10]}, TRUTH)[0]
    assert other.loss_lost == pytest.approx(direct - plan.loss)
    assert other.loss_lost > 0
    assert other.shape_params == pytest.approx(transformer_params(4 * plan.width, plan.depth / 16))


def test_planner_rejects_bad_input():
    with pytest.raises(InputError, match="params_budget"):
        plan_depth(TRUTH, -1.0, 1e10)
    with pytest.raises(InputError, match="param_count"):
        param_count_from_expression("12*m**2*l*vocab")


@pytest.mark.parametrize("expression, named", [("m*x", "x"), ("12*m**2*N + D", "N, D"),
                                               ("m*l*vocab*C", "C, vocab")])
def test_a_parameter_count_naming_other_symbols_is_refused_by_name(expression, named):
    # the expression language reads N, D, C and x as data: they are not width or depth
    with pytest.raises(InputError) as caught:
        param_count_from_expression(expression)
    assert str(caught.value) == (f"The value of `param_count` is {expression!r}, but must be a "
                                 f"formula in m (width) and l (depth) only (it also names "
                                 f"{named}).")
