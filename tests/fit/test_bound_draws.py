"""A fit whose bootstrap puts a parameter on its bound (B = 0) still reports: the derived
quantities that need B > 0 are left out of their intervals, and a diagnostic says how many."""

from __future__ import annotations

import json

import numpy as np

from scalekit.fit import fit_law
from scalekit.laws import get_law
from scalekit.laws._chinchilla import optimum_coefficients
from scalekit.serialise import envelope


def test_the_optimum_coefficients_are_defined_by_their_limits_on_the_bounds():
    values = {"E": 1.7, "A": 400.0, "B": 0.0, "alpha": 0.34, "beta": 0.28}
    out = optimum_coefficients(values)               # G = (aA/(bB))^(1/(a+b)) -> inf as B -> 0
    assert out["G"] == np.inf
    assert np.isclose(out["a"], 0.28 / 0.62) and np.isclose(out["b"], 0.34 / 0.62)
    inside = optimum_coefficients({**values, "B": 410.0})
    closed = (0.34 * 400.0 / (0.28 * 410.0)) ** (1 / 0.62)
    assert np.isclose(inside["G"], closed, rtol=1e-12)
    assert np.isnan(optimum_coefficients({**values, "alpha": 0.0, "beta": 0.0})["a"])


def test_a_fit_with_b_on_zero_in_every_draw_reports_and_says_so():
    rng = np.random.default_rng(0)
    N = np.repeat(np.geomspace(1e7, 1e9, 8), 3)
    D = np.tile([1e10, 2e10, 4e10], 8)
    y = 1.8 + 400 / N ** 0.34 + rng.normal(0, 0.01, N.size)
    result = fit_law(get_law("chinchilla"), {"params": N, "tokens": D}, y, bootstrap=20, seed=0,
                     fixed={"B": 0.0})
    undefined = [d for d in result.diagnostics if d.code == "derived_undefined"]
    assert [d.param for d in undefined] == ["G"] and undefined[0].value == 20
    assert undefined[0].severity == "warning"
    lo, hi = result.derived_ci["a"]                  # a and b stay defined on every draw
    assert 0 <= lo <= result.derived["a"] <= hi <= 1
    assert "G" in result.summary()
    report = envelope("fit", result, input_sha256=None, seed=0, settings={})
    json.dumps(report, allow_nan=False)
