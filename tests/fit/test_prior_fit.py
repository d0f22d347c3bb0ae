"""`fit_with_prior` (no more points than parameters) against the closed form of a
log-linear law, where the maximum a posteriori fit under a Gaussian prior is ridge
regression."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.fit import FitResult, fit_law, fit_with_prior
from scalekit.laws import law_from_expression

# log f = a + b log x + c x: linear in the parameters; a and b have closed ranges (prior
# centre mid-range, sd a quarter of it: 0 and 5, 0 and 2.5), c an open one (centre the
# middle of its grid, 0, and sd 3)
LAW = law_from_expression(
    "exp(a + b*log(x) + c*x)", name="loglinear",
    params={"a": {"lower": -10, "upper": 10, "log": False, "grid": (-1.0, 1.0)},
            "b": {"lower": -5, "upper": 5, "log": False, "grid": (0.0,)},
            "c": {"log": False, "grid": (-1.0, 1.0)}})
SD = np.array([5.0, 2.5, 3.0])


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_two_points_for_three_parameters_give_the_ridge_solution(loss):
    x = np.array([1.0, 3.0])
    log_y = 0.7 - 0.4 * np.log(x) + 0.3 * x
    with pytest.raises(InputError, match="needs more"):
        fit_law(LAW, {"x": x}, np.exp(log_y))
    fit = fit_with_prior(LAW, {"x": x}, np.exp(log_y), loss=loss, delta=1e-3)
    # objective sum r^2/2 + delta^2/2 |(z - 0)/sd|^2 (Huber is quadratic at these residuals)
    J = np.column_stack([np.ones_like(x), np.log(x), x])
    hessian = J.T @ J + 1e-6 * np.diag(SD ** -2.0)
    np.testing.assert_allclose(fit.theta, np.linalg.solve(hessian, J.T @ log_y), atol=1e-7)
    assert fit.stats["prior"] == {"a": [0.0, 5.0], "b": [0.0, 2.5], "c": [0.0, 3.0]}
    # no degrees of freedom for the noise: no interval is stated
    assert np.isnan(fit.interval({"x": [10.0]})).all() and np.isnan(list(fit.stderr.values())).all()
    # never read as an ordinary fit: the first diagnostic says so, and it survives JSON
    assert fit.diagnostics[0].code == "prior_fit" and fit.diagnostics[0].severity == "warning"
    assert FitResult.from_dict(fit.to_dict()).diagnostics[0].code == "prior_fit"
