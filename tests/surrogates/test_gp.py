"""Freeze-thaw kernel (closed form, gradient) and the GP surrogate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import gamma

from scalekit.errors import InputError
from scalekit.surrogates._gp import ExponentialDecay, GPSurrogate


def test_kernel_is_the_gamma_mixture_of_decaying_exponentials():
    """k(t, t') = E[exp(-lambda (t + t'))] for lambda ~ Gamma(alpha, rate beta) (Swersky et al. 2014)."""
    kernel = ExponentialDecay(alpha=1.7, beta=0.6)
    t = np.array([[0.0], [0.3], [2.0]])
    K = kernel(t)
    for i in range(3):
        for j in range(3):
            s = t[i, 0] + t[j, 0]
            integral = quad(lambda lam, s=s: np.exp(-lam * s) * gamma.pdf(lam, 1.7, scale=1 / 0.6),
                            0, np.inf)[0]
            assert K[i, j] == pytest.approx(integral, rel=1e-6)
    np.testing.assert_allclose(kernel.diag(t), np.diag(K))
    assert np.linalg.eigvalsh(kernel(np.linspace(0, 3, 30)[:, None])).min() > -1e-10


def test_kernel_gradient_matches_finite_differences():
    kernel = ExponentialDecay(alpha=1.3, beta=0.8)
    t = np.linspace(0.0, 2.0, 7)[:, None]
    _, grad = kernel(t, eval_gradient=True)
    eps = 1e-6
    for k in range(kernel.theta.size):
        up = kernel.clone_with_theta(np.where(np.arange(2) == k, kernel.theta + eps, kernel.theta))
        down = kernel.clone_with_theta(np.where(np.arange(2) == k, kernel.theta - eps, kernel.theta))
        np.testing.assert_allclose(grad[..., k], (up(t) - down(t)) / (2 * eps), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("mean", ["curve", "asymptote"])
def test_gp_forecast_is_accurate_and_finite(mean):
    rng = np.random.default_rng(0)
    x = np.arange(1, 41) * 25.0
    truth = 1.8 + 4.0 * (x / 25) ** -0.6
    model = GPSurrogate(mean=mean).fit(x, truth * np.exp(rng.normal(0, 0.005, x.size)))
    q = model.predict_quantiles([2000.0, 5000.0], [0.025, 0.5, 0.975])
    expected = 1.8 + 4.0 * (np.array([2000.0, 5000.0]) / 25) ** -0.6
    assert np.all(np.isfinite(q)) and np.all(q[:, 0] < q[:, 2])
    np.testing.assert_allclose(q[:, 1], expected, rtol=0.03)
    assert np.all((q[:, 0] <= expected) & (expected <= q[:, 2]))


def test_gp_needs_five_points():
    with pytest.raises(InputError, match="at least 5 points"):
        GPSurrogate().fit([1, 2, 3, 4], [4, 3, 2.5, 2.2])
