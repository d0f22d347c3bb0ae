"""Profile likelihood of one parameter (`scalekit.fit._profile`).

Checked against the closed form of the likelihood-ratio interval of a straight line in log
space fitted by least squares, and against an exact Laplace likelihood computed directly.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from scalekit.errors import InputError
from scalekit.fit import fit_law
from scalekit.fit._profile import profile_parameter
from scalekit.laws import get_law

LAW = get_law("power")


def _points(seed, noise):
    rng = np.random.default_rng(seed)
    x = 10 ** rng.uniform(6, 9, 40)
    return {"x": x}, 3.0 * x ** -0.3 * np.exp(noise(rng, 40))


def test_least_squares_interval_is_the_likelihood_ratio_closed_form():
    # log y = log A - alpha log x: S(alpha) = S* + (alpha - alpha*)^2 Sxx / 2, and
    # n log(S / S*) <= q gives |alpha - alpha*| <= sqrt(2 S* (exp(q / n) - 1) / Sxx).
    X, y = _points(0, lambda rng, n: rng.normal(0, 0.05, n))
    fit = fit_law(LAW, X, y, loss="squared")
    lx = np.log(X["x"])
    sxx = ((lx - lx.mean()) ** 2).sum()
    half = np.sqrt(2 * fit.stats["objective"] * (np.exp(chi2.ppf(0.95, 1) / 40) - 1) / sxx)
    alpha = fit.values["alpha"]
    profile = profile_parameter(LAW, X, y, "alpha", np.linspace(alpha - 0.1, alpha + 0.1, 41),
                                loss="squared", minimum=fit.stats["objective"])
    assert profile.degree == pytest.approx(2.0)
    low, high = profile.interval
    assert low == pytest.approx(alpha - half, abs=2e-4)
    assert high == pytest.approx(alpha + half, abs=2e-4)


def test_huber_far_beyond_its_threshold_is_the_laplace_likelihood_ratio():
    # Residuals of ~0.1 against delta = 1e-6: rho ~ delta |r|, degree 1, and the deviance is
    # the Laplace one, 2 n log(sum |r(alpha)| / sum |r*|), with A profiled by its median.
    X, y = _points(1, lambda rng, n: rng.laplace(0, 0.1, n))
    values = np.linspace(0.2, 0.4, 41)
    profile = profile_parameter(LAW, X, y, "alpha", values, delta=1e-6)
    lx, ly = np.log(X["x"]), np.log(y)
    l1 = np.array([np.abs(ly + a * lx - np.median(ly + a * lx)).sum() for a in values])
    assert profile.degree == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(profile.deviance, 2 * 40 * np.log(l1 / l1.min()), atol=2e-3)


def test_an_open_side_is_reported():
    X, y = _points(2, lambda rng, n: rng.normal(0, 0.05, n))
    alpha = fit_law(LAW, X, y, loss="squared").values["alpha"]
    profile = profile_parameter(LAW, X, y, "alpha", np.linspace(alpha - 1e-3, alpha + 1e-3, 5),
                                loss="squared")
    assert profile.interval == (None, None) and not profile.identified
    assert profile.to_dict()["interval"] == [None, None]


def test_refusals():
    X, y = _points(3, lambda rng, n: rng.normal(0, 0.05, n))
    with pytest.raises(InputError, match="`name`"):
        profile_parameter(LAW, X, y, "beta", [1, 2, 3])
    with pytest.raises(InputError, match="`values`"):
        profile_parameter(LAW, X, y, "alpha", [0.3, 0.2, 0.4])
