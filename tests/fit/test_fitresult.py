"""FitResult: JSON round trip, predictions, confidence versus prediction intervals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.fit import FitResult, fit_law
from scalekit.laws import get_law, law_from_expression
from scalekit.serialise import dumps

TRUTH = np.array([0.5, 3.0, 0.5])


def points(seed=0, n=40, noise=0.02):
    rng = np.random.default_rng(seed)
    X = {"x": np.exp(rng.uniform(0.0, np.log(1e4), n))}
    return X, get_law("saturating_power").predict(X, TRUTH) * np.exp(rng.normal(0, noise, n))


@pytest.fixture(scope="module")
def boot_fit():
    X, y = points()
    return fit_law("saturating_power", X, y, bootstrap=50, seed=3, n_jobs=1, ci_level=0.9)


@pytest.mark.parametrize("bootstrap", [0, 50])
def test_json_round_trip_is_strict_and_exact(bootstrap, boot_fit):
    X, y = points()
    fit = boot_fit if bootstrap else fit_law("saturating_power", X, y)
    text = dumps(fit.to_dict())
    back = FitResult.from_dict(json.loads(text))
    assert "NaN" not in text and "Infinity" not in text
    assert back.law is fit.law
    assert back.values == fit.values and back.stderr == fit.stderr and back.ci == fit.ci
    assert back.ci_level == fit.ci_level and back.stats == fit.stats
    grid = {"x": np.geomspace(1, 1e6, 7)}
    np.testing.assert_array_equal(back.predict(grid), fit.predict(grid))
    for kind in ("confidence", "prediction"):
        np.testing.assert_array_equal(back.interval(grid, kind=kind)[0],
                                      fit.interval(grid, kind=kind)[0])


def test_json_round_trip_of_an_expression_law():
    X, y = points()
    law = law_from_expression("E + A*x**-a", params={"a": {"lower": 0.0, "upper": 3.0}})
    fit = fit_law(law, X, y)
    back = FitResult.from_dict(json.loads(dumps(fit.to_dict())))
    assert back.law.formula == "E + A*x**-a"
    assert back.law.params == law.params
    np.testing.assert_array_equal(back.predict(X), fit.predict(X))


@pytest.mark.parametrize("inputs", [{"x": "steps"}, {"x": "steps", "depth": "n_layers"}])
def test_json_round_trip_keeps_the_columns_the_symbols_read(inputs):
    # x read from the column "steps" must still read "steps" after the round trip.
    X, y = points()
    X = {"steps": X["x"], "n_layers": np.ones_like(X["x"])}
    law = law_from_expression("E + A*x**-a + 0*depth", inputs=inputs)
    fit = fit_law(law, X, y)
    back = FitResult.from_dict(json.loads(dumps(fit.to_dict())))
    assert back.law.inputs == law.inputs == tuple(dict.fromkeys(inputs.values()))
    np.testing.assert_array_equal(back.predict(X), fit.predict(X))


def test_prediction_interval_contains_confidence_band_and_new_points(boot_fit):
    grid = {"x": np.geomspace(1, 1e6, 25)}
    c_lo, c_hi = boot_fit.interval(grid, kind="confidence")
    p_lo, p_hi = boot_fit.interval(grid, kind="prediction")
    center = boot_fit.predict(grid)
    assert np.all(p_lo < c_lo) and np.all(c_lo <= center) and np.all(center <= c_hi)
    assert np.all(c_hi < p_hi)
    # New points from the same law and noise fall inside the 90% prediction interval
    # about 90% of the time (here: at least 80% of 400).
    rng = np.random.default_rng(99)
    x_new = {"x": np.exp(rng.uniform(0.0, np.log(1e4), 400))}
    y_new = get_law("saturating_power").predict(x_new, TRUTH) * np.exp(rng.normal(0, 0.02, 400))
    lo, hi = boot_fit.interval(x_new, kind="prediction")
    assert np.mean((lo <= y_new) & (y_new <= hi)) >= 0.8
    # A wider level gives a wider band.
    lo99, hi99 = boot_fit.interval(grid, kind="confidence", level=0.99)
    assert np.all(lo99 <= c_lo) and np.all(hi99 >= c_hi)


def test_confidence_band_without_bootstrap_shrinks_with_more_data():
    X, y = points(n=30)
    X_big, y_big = points(n=480)
    grid = {"x": np.array([1e5])}
    small = np.diff(np.log(fit_law("saturating_power", X, y).interval(grid)), axis=0)
    big = np.diff(np.log(fit_law("saturating_power", X_big, y_big).interval(grid)), axis=0)
    # Width shrinks like 1/sqrt(n): 16x the points, about a quarter of the width.
    assert 0.1 < (big / small).item() < 0.5


def test_bad_input_raises_input_error():
    X, y = points()
    bad = y.copy()
    bad[3] = -1.0
    with pytest.raises(InputError):
        fit_law("saturating_power", X, bad)
    with pytest.raises(InputError):
        fit_law("saturating_power", {"compute": X["x"]}, y)
    with pytest.raises(InputError):
        fit_law("saturating_power", X, y, loss="absolute")
    with pytest.raises(InputError):
        fit_law("saturating_power", {"x": X["x"][:3]}, y[:3])
    with pytest.raises(InputError):
        fit_law("no_such_law", X, y)


def test_a_law_that_does_not_pickle_bootstraps_in_worker_processes_alike():
    """An expression law closes over compiled functions (pickle refuses it); the workers
    inherit it through fork, with no module-level job in between."""
    import pickle

    from scalekit.fit import _bootstrap
    from scalekit.laws import law_from_expression

    X, y = points(seed=8)
    law = law_from_expression("E + A*x**-a")
    with pytest.raises((AttributeError, pickle.PicklingError)):
        pickle.dumps(law)
    one = fit_law(law, X, y, bootstrap=24, seed=5, n_jobs=1)
    two = fit_law(law, X, y, bootstrap=24, seed=5, n_jobs=2)
    np.testing.assert_allclose(one.bootstrap_values, two.bootstrap_values, rtol=1e-12)
    assert not [name for name, value in vars(_bootstrap).items() if not name.startswith("__")
                and (name.isupper() or isinstance(value, (dict, list, set)))]


def test_bootstrap_is_seeded_and_independent_of_the_process_count():
    X, y = points(seed=8)
    one = fit_law("saturating_power", X, y, bootstrap=30, seed=5, n_jobs=1)
    two = fit_law("saturating_power", X, y, bootstrap=30, seed=5, n_jobs=2)
    other = fit_law("saturating_power", X, y, bootstrap=30, seed=6, n_jobs=1)
    np.testing.assert_allclose(one.bootstrap_values, two.bootstrap_values, rtol=1e-12)
    assert one.ci == two.ci
    assert not np.allclose(one.bootstrap_values, other.bootstrap_values)
