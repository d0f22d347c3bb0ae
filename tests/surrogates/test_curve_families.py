"""Each family's fitter recovers curves drawn from that family."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.surrogates._curve_families import FAMILIES, CurveScale, fit_family

X = np.geomspace(1.0, 100.0, 60)


def _truth(name: str) -> np.ndarray:
    """A falling curve of family ``name`` from 3 (x = 1) to about 1 (x = 100)."""
    family = FAMILIES[name]
    theta = family.starts(np.array([3.0]), np.array([100.0]))[:, 0]
    scale = CurveScale(np.array([1.0]), np.array([100.0]), np.array([1.0]), np.array([3.0]))
    return family.law.function(scale.axes(X[None]), theta)[0]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_truth_curves_fall(name):
    y = _truth(name)
    assert np.all(np.isfinite(y)) and y[0] > y[-1] > 0


@pytest.mark.parametrize("name", list(FAMILIES))
def test_noise_free_curve_is_fitted_exactly(name):
    y = _truth(name)
    fit = fit_family(FAMILIES[name], X[None], y[None], np.ones((1, X.size), bool), huber=0)
    assert fit.ok[0]
    assert np.max(np.abs(fit.predict(X[None])[0] / y - 1)) < 2e-3


@pytest.mark.parametrize("name", list(FAMILIES))
def test_noisy_prefix_forecasts_the_end(name):
    """Fit 0.3% noise on the first 70% of log x; the end (x 2x further) within 2%."""
    rng = np.random.default_rng(1)
    y = _truth(name)
    B = 8
    ys = y * np.exp(rng.normal(0, 0.003, (B, X.size)))
    mask = np.tile(X <= 100 ** 0.7 * 1.0001, (B, 1))
    fit = fit_family(FAMILIES[name], np.tile(X, (B, 1)), ys, mask)
    end = fit.predict(np.full((B, 1), X[-1]))[:, 0]
    assert np.median(np.abs(end / y[-1] - 1)) < 0.02


def test_batch_rows_do_not_interact():
    ys = np.stack([_truth("pow3"), 2 * _truth("mmf"), 0.5 * _truth("vap")])
    xs = np.tile(X, (3, 1))
    mask = np.ones_like(xs, bool)
    together = fit_family(FAMILIES["pow4"], xs, ys, mask).predict(xs)
    for i in range(3):
        alone = fit_family(FAMILIES["pow4"], xs[i:i + 1], ys[i:i + 1], mask[i:i + 1]).predict(xs[i:i + 1])
        np.testing.assert_allclose(together[i], alone[0], rtol=1e-8)


def test_masked_points_are_ignored():
    y = _truth("satpow")
    corrupted = y.copy()
    corrupted[40:] = 100.0
    mask = np.zeros((1, X.size), bool)
    mask[0, :40] = True
    a = fit_family(FAMILIES["satpow"], X[None], y[None], mask).predict(X[None])
    b = fit_family(FAMILIES["satpow"], X[None], corrupted[None], mask).predict(X[None])
    np.testing.assert_allclose(a, b)


def test_m4_solves_its_implicit_equation():
    """M4 (Alabdulmohsin et al. 2022): (L - Linf)/(L0 - L)^alpha = beta t^-c at every point,
    for exponents alpha below, at and above 1."""
    t = np.geomspace(1e-3, 10.0, 40)[None]
    scale = CurveScale(np.array([1e-3]), np.array([1.0]), np.array([1.0]), np.array([2.0]))
    for alpha in (0.2, 1.0, 3.0):
        linf, span, beta, c = 0.3, 0.9, 0.5, 0.6
        loss = FAMILIES["m4"].law.function(scale.axes(t),
                                            np.array([[linf, span, alpha, beta, c]]))
        assert np.all((loss > linf) & (loss < linf + span))
        lhs = (loss - linf) / (linf + span - loss) ** alpha
        np.testing.assert_allclose(lhs, beta * t ** -c, rtol=1e-6)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_jacobian_matches_central_differences(name):
    """Each family's exact derivatives (symbolic for the expressions, implicit for M4)
    against central differences of its own log formula, at its start values."""
    law = FAMILIES[name].law
    theta = FAMILIES[name].starts(np.array([3.0]), np.array([100.0]))[0]       # (S, P)
    scale = CurveScale(np.array([1.0]), np.array([100.0]), np.array([1.0]), np.array([3.0]))
    axes = {k: np.broadcast_to(v, (len(theta), X.size)) for k, v in scale.axes(X[None]).items()}
    z = law.to_fitting(theta)
    value, J = law.log_value_and_jacobian(axes, z)
    np.testing.assert_allclose(value, np.log(law.function(axes, theta)), rtol=1e-10, atol=1e-12)
    for k in range(z.shape[1]):
        h = 1e-6 * np.maximum(1.0, np.abs(z[:, k:k + 1]))
        step = np.zeros_like(z)
        step[:, k:k + 1] = h
        numeric = (law.log_predict_fitting(axes, z + step)
                   - law.log_predict_fitting(axes, z - step)) / (2 * h)
        np.testing.assert_allclose(J[..., k], numeric, rtol=1e-5, atol=1e-7)
