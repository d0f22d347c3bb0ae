"""Parametric ensemble: accuracy and calibration on synthetic truths, degenerate inputs."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from scalekit.errors import InputError, NotFittedError
from scalekit.surrogates._base import mixture_quantiles
from scalekit.surrogates._ensemble import ParametricEnsemble, forecast_batch
from scalekit.surrogates._gp import GPSurrogate

X = np.arange(1, 31) * 10.0


def _sweep(seed, B=300, noise=0.01):
    rng = np.random.default_rng(seed)
    E, A, alpha = (rng.uniform(lo, hi, (B, 1)) for lo, hi in ((1.5, 2.5), (2, 6), (0.3, 0.8)))

    def law(x):
        return E + A * (x / 10) ** -alpha
    x = np.tile(X, (B, 1))
    y = law(x) * np.exp(rng.normal(0, noise, x.shape))
    return x, y, law


def test_forecast_of_power_law_curves_is_accurate():
    """Saturating power-law curves with 1% noise: 10x beyond the data, median log error < 3%."""
    x, y, law = _sweep(0, B=60)
    xt = np.tile([600.0, 3000.0], (60, 1))
    q = forecast_batch(x, y, np.ones_like(x, bool), xt, np.array([0.5]))
    err = np.abs(np.log(q[..., 0] / law(xt)))
    assert np.median(err[:, 0]) < 0.015
    assert np.median(err[:, 1]) < 0.03


def test_intervals_cover_near_nominal_over_many_seeds():
    """Single-family intervals over 300 curves: 80% intervals cover 72-90% of new noisy points
    just beyond the data, and stay conservative (<= 99%) ten times further."""
    x, y, law = _sweep(1)
    xt = np.tile([320.0, 400.0, 3000.0], (300, 1))
    yt = law(xt) * np.exp(np.random.default_rng(2).normal(0, 0.01, xt.shape))
    q = forecast_batch(x, y, np.ones_like(x, bool), xt, np.array([0.1, 0.9]), families=("satpow",))
    inside = (q[..., 0] <= yt) & (yt <= q[..., 1])
    assert 0.72 <= inside[:, :2].mean() <= 0.90
    assert 0.8 <= inside[:, 2].mean() <= 0.99


def test_batch_and_estimator_agree():
    x, y, _ = _sweep(3, B=2)
    model = ParametricEnsemble().fit(x[1], y[1])
    batch = forecast_batch(x, y, np.ones_like(x, bool), np.tile([500.0, 900.0], (2, 1)),
                           np.array([0.1, 0.5, 0.9]))
    np.testing.assert_allclose(model.predict_quantiles([500.0, 900.0], [0.1, 0.5, 0.9]), batch[1],
                               rtol=1e-6)


def test_weights_favour_the_true_family():
    rng = np.random.default_rng(4)
    x = np.geomspace(1, 100, 50)
    y = 1.0 + 2.0 / np.log(1.0 + x) * np.exp(rng.normal(0, 0.002, x.size))   # ilog2 truth
    model = ParametricEnsemble().fit(x, y)
    assert sum(model.weights_.values()) == pytest.approx(1.0)
    assert model.weights_["ilog2"] > 0.2
    assert model.weights_["logpower"] < 0.05


def test_mixture_quantiles_match_a_single_normal_and_a_brute_force_mixture():
    from scipy.stats import norm
    qs = np.array([0.025, 0.3, 0.5, 0.9])
    got = mixture_quantiles(np.array([[1.0]]), np.array([[1.0]]), np.array([0.2]), qs)
    np.testing.assert_allclose(got[0], norm.ppf(qs, 1.0, 0.2), atol=1e-9)
    draws = np.concatenate([np.random.default_rng(0).normal(m, 0.1, n)
                            for m, n in ((0.0, 300_000), (1.0, 100_000))])
    got = mixture_quantiles(np.array([[0.0, 1.0]]), np.array([[0.75, 0.25]]), np.array([0.1]), qs)
    np.testing.assert_allclose(got[0], np.quantile(draws, qs), atol=5e-3)


def test_not_fitted_error_and_sklearn_clone():
    model = ParametricEnsemble(families=["pow3", "satpow"], temperature=2.0)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        model.predict([10.0])
    assert clone(model).get_params()["temperature"] == 2.0
    assert model.fit(X, 2 + 5 * X ** -0.5) is model


@pytest.mark.parametrize("x, y, match", [
    ([1.0, 2.0], [3.0, 2.0], "at least 4 points"),
    ([1, 2, 3, 4, 5], [3, 2, np.nan, 1.5, 1.4], "missing or infinite value at position 2"),
    ([1, 2, 3, 4, 5], [3, 2, -1.0, 1.5, 1.4], "must be positive"),
    ([0, 2, 3, 4, 5], [3, 2, 1.8, 1.5, 1.4], "x must be positive"),
    ([1, 2, 3], [3, 2, 1.8, 1.7], "must match"),
])
def test_bad_curves_raise_input_error(x, y, match):
    with pytest.raises(InputError, match=match):
        ParametricEnsemble().fit(x, y)


def test_bad_settings_and_positions_raise_input_error():
    with pytest.raises(InputError, match="`families`"):
        ParametricEnsemble(families=["nope"]).fit(X, 2 + X ** -0.5)
    with pytest.raises(InputError, match="`holdout`"):
        ParametricEnsemble(holdout=1.5).fit(X, 2 + X ** -0.5)
    model = ParametricEnsemble(families="pow3").fit(X, 2 + X ** -0.5)
    with pytest.raises(InputError, match="finite and positive"):
        model.predict([np.nan])
    with pytest.raises(InputError, match="`qs`"):
        model.predict_quantiles([100.0], [0.5, 1.0])


def test_flat_curve_forecasts_the_flat_value():
    model = ParametricEnsemble().fit(X, np.full(X.size, 2.5))
    q = model.predict_quantiles([300.0, 3000.0, 1e6], [0.05, 0.5, 0.95])
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(q[:, 1], 2.5, rtol=1e-3)


def test_loss_spike_does_not_bend_the_forecast():
    clean = 2.0 + 5.0 * (X / 10) ** -0.5
    spiked = clean.copy()
    spiked[20] *= 1.5
    truth = 2.0 + 5.0 * 90 ** -0.5
    median = ParametricEnsemble().fit(X, spiked).predict([900.0])[0]
    assert np.isfinite(median)
    assert abs(np.log(median / truth)) < 0.02


def test_few_points_use_the_documented_fallback():
    """Four points: no backtest is possible, so weights are equal over the usable families."""
    model = ParametricEnsemble().fit([10, 20, 40, 80], [3.0, 2.6, 2.4, 2.3])
    used = {k: v for k, v in model.weights_.items() if v > 0}
    assert np.allclose(list(used.values()), 1 / len(used))
    assert all(n in ("vap", "pow3", "loglinear", "hill3", "logpower", "ilog2", "satpow") for n in used)
    assert np.all(np.isfinite(model.predict_quantiles([1000.0], [0.1, 0.9])))


def test_unsorted_and_duplicate_x_are_handled():
    y = 2 + 5 * X ** -0.5
    order = np.random.default_rng(0).permutation(X.size)
    a = ParametricEnsemble(families="pow3").fit(X[order], y[order]).predict([1000.0])
    b = ParametricEnsemble(families="pow3").fit(np.r_[X, X[:3]], np.r_[y, y[:3]]).predict([1000.0])
    c = ParametricEnsemble(families="pow3").fit(X, y).predict([1000.0])
    np.testing.assert_allclose(a, c)
    np.testing.assert_allclose(b, c)


def test_maximize_direction_forecasts_accuracy():
    accuracy = 1 - (0.1 + 0.5 * (X / 10) ** -0.5)
    model = ParametricEnsemble(direction="maximize").fit(X, accuracy)
    q = model.predict_quantiles([3000.0], [0.1, 0.5, 0.9])[0]
    assert q[0] <= q[1] <= q[2] < 1
    assert q[1] == pytest.approx(1 - (0.1 + 0.5 * 300 ** -0.5), abs=0.01)


def test_forecast_does_not_depend_on_the_other_curves_of_the_batch():
    """A short curve forecast alone and next to a longer, padded one: the same quantiles
    (the backtest's horizon weights once leaked the padding into the family weights)."""
    rng = np.random.default_rng(7)
    short_x = np.geomspace(1e6, 1e8, 12)
    long_x = np.geomspace(1e6, 1e9, 70)
    short_y = (0.5 + 3 * (short_x / 1e6) ** -0.4) * np.exp(rng.normal(0, 0.01, 12))
    long_y = (0.8 + 2 * (long_x / 1e6) ** -0.3) * np.exp(rng.normal(0, 0.01, 70))
    x = np.ones((2, 70))
    y = np.ones((2, 70))
    mask = np.zeros((2, 70), bool)
    x[0], y[0], mask[0] = long_x, long_y, True
    x[1, :12], y[1, :12], mask[1, :12] = short_x, short_y, True
    x[1, 12:] = short_x[-1]
    xt = np.tile([3e8, 1e9], (2, 1))
    qs = np.array([0.1, 0.5, 0.9])
    together = forecast_batch(x, y, mask, xt, qs)
    alone = forecast_batch(short_x[None], short_y[None], np.ones((1, 12), bool), xt[:1], qs)
    np.testing.assert_allclose(together[1], alone[0], rtol=1e-9)


def test_backtest_weights_single_out_the_family_that_forecasts_and_equal_weighting_does_not():
    """Curves of the saturating power law: the backtest gives it more weight than the
    equal share; ``weighting="equal"`` gives every family with a finite backtest the same."""
    x, y, _ = _sweep(5, B=1, noise=0.002)
    backtest = ParametricEnsemble().fit(x[0], y[0]).weights_
    equal = ParametricEnsemble(weighting="equal").fit(x[0], y[0]).weights_
    assert backtest["satpow"] > 2 / len(backtest)
    assert max(equal.values()) - min(v for v in equal.values() if v > 0) < 1e-12
    assert sum(v > 0 for v in equal.values()) >= len(equal) - 2


def test_unknown_weighting_is_refused():
    with pytest.raises(InputError, match="weighting"):
        ParametricEnsemble(weighting="vote").fit(X, 2 + X ** -0.5)


@pytest.mark.parametrize("surrogate", [ParametricEnsemble, GPSurrogate])
def test_maximize_accepts_a_score_of_zero(surrogate):
    """A score of 0 (an accuracy at the first evaluation) is the error 1, not an invalid value."""
    accuracy = 1 - (0.1 + 0.9 * (X / 10) ** -0.5)
    assert accuracy[0] == 0.0
    q = surrogate(direction="maximize").fit(X, accuracy).predict_quantiles([3000.0], [0.1, 0.5, 0.9])[0]
    assert q[0] <= q[1] <= q[2] < 1
    assert q[1] == pytest.approx(1 - (0.1 + 0.9 * 300 ** -0.5), abs=0.01)


def test_forecast_batch_does_not_depend_on_the_order_of_the_points():
    """forecast_batch is documented as ParametricEnsemble's computation vectorised; the
    estimator sorts x, so shuffled (and gappy-masked) rows must give its quantiles too."""
    rng = np.random.default_rng(3)
    x = np.geomspace(1e3, 1e6, 25)
    y = (1.5 + 4 * (x / 1e3) ** -0.4) * np.exp(rng.normal(0, 0.01, 25))
    qs, xt = np.array([0.1, 0.5, 0.9]), np.array([3e6, 1e7])
    order = rng.permutation(25)
    mask = np.ones(25, bool)
    mask[order[:3]] = False                     # padding scattered among the points
    expected = ParametricEnsemble().fit(x[mask], y[mask]).predict_quantiles(xt, qs)
    shuffled = forecast_batch(x[order][None], y[order][None], mask[order][None], xt[None], qs)[0]
    np.testing.assert_allclose(shuffled, expected, rtol=1e-6)
