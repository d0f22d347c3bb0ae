"""Planners state an optimum, a shape or a critical value only inside the data's range:
each is tried on data that has the feature and on data that has not (issue 22, item 2).
The truths are closed forms of the laws the data are drawn from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.laws import get_law
from scalekit.planners._measured_laws import (fit_class_count_law, fit_depth_law, fit_inference_k_law,
                                              plan_depth_in_data, plan_tree_in_data)

KS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])


def _frame(**columns):
    n = len(next(iter(columns.values())))
    return pd.DataFrame({"run": [f"r{i}" for i in range(n)], "step": 1, **columns})


def _codes(diagnostics):
    return [d.code for d in diagnostics]


def test_inference_k_on_monotone_data_states_no_optimum():
    result = fit_inference_k_law(_frame(k=KS, error=0.05 + 0.4 / KS ** 2.0))
    assert result.derived["k_opt"] is None and "k_opt" not in result.derived_ci
    assert result.derived["shape"] == "monotone within the data (k ≤ 256); no optimum found"
    assert "no_optimum" in _codes(result.diagnostics)


def test_inference_k_on_u_shaped_data_states_its_optimum():
    E, A, a, B, b = 0.05, 0.4, 1.0, 0.1, 0.3
    result = fit_inference_k_law(_frame(k=KS, error=E + A * KS ** -a + B * (1 - KS ** -b)))
    k_star = (a * A / (b * B)) ** (1 / (a - b))           # 40.6, inside 1..256
    assert result.derived["shape"] == "U-shaped"
    assert result.derived["k_opt"] == pytest.approx(k_star, rel=0.02)
    assert "no_optimum" not in _codes(result.diagnostics)


@pytest.mark.parametrize("classes, inside", [(np.array([2, 8, 32, 128, 512, 1024]), True),
                                             (np.array([2, 4, 8, 16, 32, 64]), False)])
def test_class_count_saturation_only_inside_the_data(classes, inside):
    c, gamma = 0.01, 0.8
    error = get_law("class_count").predict({"classes": classes}, {"c": c, "gamma": gamma})
    result = fit_class_count_law(_frame(classes=classes, error=error))
    saturation = result.derived["saturation_classes"]
    if inside:  # c K^gamma = 1 - 1/K at K near 316
        root = next(K for K in np.arange(2, 2000) if c * K ** gamma >= 1 - 1 / K)
        assert root - 1 <= saturation <= root
        assert "no_optimum" not in _codes(result.diagnostics)
    else:
        assert saturation is None and "no_optimum" in _codes(result.diagnostics)


@pytest.mark.parametrize("classes, inside", [(np.array([2, 4, 8, 16, 32, 64, 128, 256]), True),
                                             (np.array([64, 128, 256, 512, 1024]), False)])
def test_critical_degree_is_flagged_outside_the_data(classes, inside):
    c, gamma = 0.01, 0.3
    error = get_law("class_count").predict({"classes": classes}, {"c": c, "gamma": gamma})
    result = fit_class_count_law(_frame(classes=classes, error=error))
    plan, diagnostics = plan_tree_in_data(result, 1000)
    degrees = np.arange(2, 1001)                         # f(d) = -log(1 - eps(d)) / log d
    assert plan.critical_degree == degrees[np.argmin(-np.log1p(-c * degrees ** gamma)
                                                     / np.log(degrees))]      # 27
    assert (_codes(diagnostics) == []) is inside


TRUTH = {"c_m": 5.0, "alpha_m": 0.6, "c_l": 2.0, "alpha_l": 1.0, "c_D": 100.0, "alpha_D": 0.3,
         "L0": 1.5}


@pytest.mark.parametrize("depths, inside", [((4, 16, 64, 128, 256), True), ((2, 4, 8, 16), False)])
def test_depth_optimum_only_inside_the_data(depths, inside):
    grid = np.array([(m, layers, d) for m in (256, 512, 1024, 2048) for layers in depths
                     for d in (1e9, 1e10)], dtype=float)
    X = {"width": grid[:, 0], "depth": grid[:, 1], "tokens": grid[:, 2]}
    law = get_law("depth_width_data")
    loss = law.predict(X, np.array([TRUTH[n] for n in law.param_names]))
    result = fit_depth_law(_frame(**X, loss=loss))
    plan, diagnostics = plan_depth_in_data(result, 1e9, 1e10)
    # with N = 12 m^2 l: L(l) = c_m (N/12)^(-a_m/2) l^(a_m/2) + c_l l^-a_l + ...; dL/dl = 0 at
    # l^(a_l + a_m/2) = a_l c_l / ((a_m/2) c_m (N/12)^(-a_m/2))
    l_star = (1.0 * 2.0 / (0.3 * 5.0 * (1e9 / 12) ** -0.3)) ** (1 / 1.3)      # about 84
    if inside:
        assert plan.depth == pytest.approx(l_star, rel=0.05) and diagnostics == []
    else:
        assert plan.depth == pytest.approx(16.0) and _codes(diagnostics) == ["no_optimum"]


def test_a_plan_in_the_data_refuses_a_result_without_its_points():
    """A FitResult read back from JSON carries no points: the plan says what to do instead of
    failing on None."""
    from scalekit.errors import InputError
    from scalekit.fit import FitResult

    classes = np.array([2, 4, 8, 16, 32, 64, 128, 256.0])
    fitted = fit_class_count_law(_frame(classes=classes, error=np.minimum(
        0.01 * classes ** 0.8, 1 - 1 / classes)))
    plan, _ = plan_tree_in_data(fitted, 64)
    read_back = FitResult.from_dict(fitted.to_dict())
    assert read_back.points is None
    with pytest.raises(InputError, match="fit_class_count_law"):
        plan_tree_in_data(read_back, 64)
