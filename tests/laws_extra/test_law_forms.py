"""The three laws' log forms and analytic Jacobians agree with their formulas."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.laws import get_law

RNG = np.random.default_rng(11)
X_ALL = {"width": np.exp(RNG.uniform(5, 9, 12)), "depth": np.exp(RNG.uniform(0.5, 4.5, 12)),
         "tokens": np.exp(RNG.uniform(18, 25, 12)),
         "classes": np.round(np.exp(RNG.uniform(0.7, 7, 12))),
         "k": np.concatenate([[1.0], np.round(np.exp(RNG.uniform(0.5, 7, 11)))])}
POINTS = {
    "depth_width_data": [275.0, 0.95, 6.7, 1.3, 529.0, 0.3, 1.75],
    "class_count": [0.004, 0.9],
    "inference_k": [0.05, 0.6, 1.2, 0.3, 0.4],
}


def _inputs(law):
    return {name: X_ALL[name] for name in law.inputs}


@pytest.mark.parametrize("name", sorted(POINTS))
def test_log_form_equals_log_of_formula(name):
    law = get_law(name)
    theta = np.array(POINTS[name])
    direct = np.log(law.predict(_inputs(law), theta))
    np.testing.assert_allclose(law.log_predict_fitting(_inputs(law), law.to_fitting(theta)),
                               direct, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(POINTS))
def test_analytic_jacobian_matches_central_differences(name):
    law = get_law(name)
    X = _inputs(law)
    z = law.to_fitting(np.array(POINTS[name]))
    J = law.log_jacobian(X, z[None, :])
    assert J.shape == (1, 12, len(z))
    for k in range(len(z)):
        h = 1e-6 * max(1.0, abs(z[k]))
        up, down = z.copy(), z.copy()
        up[k] += h
        down[k] -= h
        numeric = (law.log_predict_fitting(X, up) - law.log_predict_fitting(X, down)) / (2 * h)
        np.testing.assert_allclose(J[0, :, k], numeric, rtol=1e-5, atol=1e-7)
