"""Each diagnostic of a fit or plan on an input that raises it and on a well-posed one that
does not (issue 13 §1); the Chinchilla points are checked in test_real_chinchilla.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fit.fit_synthetic import STARTS, points
from scalekit.curves import read_curves
from scalekit.fit import fit_frame, fit_law, plan_for_compute, prepare_fit


def codes(result, code):
    return {d.param for d in result.diagnostics if d.code == code}


@pytest.fixture(scope="module")
def well_posed():
    X, y = points(np.geomspace(1e7, 1e9, 6), np.geomspace(1e9, 1e11, 8))
    return fit_law("chinchilla", X, y, starts=STARTS, bootstrap=30, n_jobs=1)


@pytest.fixture(scope="module")
def narrow():
    """Five model sizes spanning 1.2x (issue 13: alpha = 4.50 [3.78, 5.15], no warning)."""
    X, y = points(np.linspace(1e8, 1.2e8, 5), np.geomspace(1e9, 1e11, 8))
    return fit_law("chinchilla", X, y, starts=STARTS, bootstrap=30, n_jobs=1)


def test_well_posed_fit_raises_nothing(well_posed):
    assert well_posed.diagnostics == []
    assert well_posed.warnings == []


def test_sizes_spanning_1_2x_leave_alpha_not_identified(narrow):
    flagged = codes(narrow, "not_identified")
    assert "alpha" in flagged and not {"beta", "B"} & flagged
    message = next(d.message for d in narrow.diagnostics
                   if d.code == "not_identified" and d.param == "alpha")
    assert "params spans only 1.2x" in message and "fix alpha" in message
    assert "alpha" in codes(narrow, "exponent_implausible")      # it lands far above 2


@pytest.mark.slow
def test_the_bundled_sample_fit_has_e_on_its_bound(published_data):
    """Issue 13: E's interval [6e-19, 0.089] reached its bound 0 without a word."""
    sample = published_data.parent / "sample_curves.csv"
    result = fit_frame(read_curves(sample), bootstrap=1000, n_jobs=2)   # fit's defaults
    assert "E" in codes(result, "on_bound")
    assert "E" in codes(result, "not_identified")               # the interval spans decades
    assert result.ci["E"][0] < 1e-6 * result.values["E"]


def test_an_estimate_held_at_its_bound_is_on_bound():
    X, y = points(np.geomspace(1e7, 1e9, 6), np.geomspace(1e9, 1e11, 8))
    capped = fit_law("chinchilla", X, y, starts=STARTS, bounds={"alpha": (0.0, 0.3)})
    assert capped.values["alpha"] == pytest.approx(0.3)
    assert "alpha" in codes(capped, "on_bound")


def test_few_points():
    X, y = points(np.geomspace(1e7, 1e9, 4), np.geomspace(1e9, 1e11, 3))   # 12 points, 5 params
    found = [d for d in fit_law("chinchilla", X, y, starts=STARTS).diagnostics
             if d.code == "few_points"]
    assert len(found) == 1 and found[0].value == 12


def test_extrapolation_says_the_factor(well_posed):
    largest = 6 * 1e9 * 1e11
    far = plan_for_compute(well_posed, 30 * largest)["diagnostics"]
    compute = [d for d in far if d.code == "extrapolation" and "compute" in d.message]
    assert len(compute) == 1 and compute[0].value == pytest.approx(30, rel=1e-9)
    assert compute[0].severity == "warning"
    assert plan_for_compute(well_posed, largest / 10)["diagnostics"] == []


def test_outliers_dropped_is_said_only_when_points_are_dropped():
    X, y = points(np.geomspace(1e7, 1e9, 6), np.geomspace(1e9, 1e11, 8))
    frame = pd.DataFrame({**X, "loss": y})
    dropped = prepare_fit(frame, drop_top=3).diagnostics
    assert [(d.code, d.severity, d.value) for d in dropped] == [("outliers_dropped", "info", 3)]
    assert prepare_fit(frame).diagnostics == []


def test_extrapolation_of_a_law_of_compute():
    c = np.geomspace(1e17, 1e20, 12)
    fit = fit_law("frontier", {"C": c}, 2.0 + 30.0 * c ** -0.08)
    beyond = plan_for_compute(fit, 3e21)["diagnostics"]
    assert [(d.code, d.severity) for d in beyond] == [("extrapolation", "warning")]
    assert beyond[0].value == pytest.approx(30, rel=1e-9)
    assert plan_for_compute(fit, 1e19)["diagnostics"] == []
