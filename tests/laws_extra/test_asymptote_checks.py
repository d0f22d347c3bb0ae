"""Checks of a fitted floor (issue 38, item 3): on its bound 0, or above a loss already reached;
by themselves (closed-form cases) and in the planners' fits on data with a known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.planners._asymptote import asymptote_checks
from scalekit.planners._measured_laws import fit_inference_k_law


def _codes(diagnostics):
    return [d.code for d in diagnostics]


def test_the_floor_checks_by_themselves():
    reached = np.array([2.0, 2.5, 3.0])
    assert _codes(asymptote_checks(1e-9, reached, residual_scale=0.01, name="E")) == ["on_bound"]
    assert asymptote_checks(1.9, reached, residual_scale=0.01, name="E") == []
    # 2.05 > 2 * exp(2 * 0.01) = 2.04: above the data's least loss by more than the margin
    above = asymptote_checks(2.05, reached, residual_scale=0.01, name="E")
    assert _codes(above) == ["asymptote_above_data"] and above[0].param == "E"
    assert asymptote_checks(2.03, reached, residual_scale=0.01, name="E") == []
    target = asymptote_checks(1.9, reached, residual_scale=0.01, name="E", target=1.8)
    assert _codes(target) == ["asymptote_above_data"] and "target run" in target[0].message


def test_a_floor_fixed_above_a_reached_error_is_flagged():
    """E + 0.4/k^2 (E = 0.05, 0.5% noise) with E fixed at 0.05, but one run at k = 256
    reached 0.035: the floor lies above it by far more than the noise. Fixed at 0.03, no
    diagnostic."""
    k = np.repeat(2.0 ** np.arange(9), 3)
    error = (0.05 + 0.4 / k ** 2) * (1 + 0.005 * np.random.default_rng(1).standard_normal(k.size))
    error[-1] = 0.035
    frame = pd.DataFrame({"run": [f"r{i}" for i in range(k.size)], "step": 1, "k": k,
                          "error": error})
    flagged = [d for d in fit_inference_k_law(frame, fixed={"E": 0.05}).diagnostics
               if d.code == "asymptote_above_data"]
    assert len(flagged) == 1 and flagged[0].param == "E" and "0.035" in flagged[0].message
    assert "asymptote_above_data" not in _codes(fit_inference_k_law(
        frame, fixed={"E": 0.03}).diagnostics)
