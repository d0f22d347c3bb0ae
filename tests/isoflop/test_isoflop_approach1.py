"""Approach 1 (envelope of learning curves) against a known Chinchilla surface."""

from __future__ import annotations

import numpy as np
import pytest

from isoflop.isoflop_synthetic import A_TRUE, B_TRUE, learning_curves, sweep
from scalekit.errors import InputError
from scalekit.isoflop._approach1 import Envelope


@pytest.mark.parametrize("seed", range(3))
def test_envelope_recovers_exponents(seed):
    model = Envelope(n_boot=100, seed=seed).fit(learning_curves(seed=seed))
    assert model.params_law_.exponent == pytest.approx(A_TRUE, abs=0.02)
    assert model.tokens_law_.exponent == pytest.approx(B_TRUE, abs=0.02)
    lo, hi = model.params_law_.exponent_ci
    assert lo < model.params_law_.exponent < hi


def test_frontier_matches_a_run_by_run_reference():
    curves = learning_curves(seed=1, n_runs=12, n_steps=30)
    model = Envelope(n_boot=0, n_grid=50).fit(curves)
    for _, row in model.frontier_.iterrows():
        log_c = np.log(row["compute"])
        best = (np.inf, None)
        for name, run in curves.groupby("run"):
            c = np.log(run["compute"].to_numpy())
            if c[0] <= log_c <= c[-1]:
                best = min(best, (np.interp(log_c, c, run["loss"].to_numpy()), name))
        assert row["loss"] == pytest.approx(best[0], rel=1e-12)
        assert row["run"] == best[1]
    assert model.params_law_.n_points == int(model.frontier_["used"].sum())


def test_single_point_runs_are_rejected():
    points = sweep().assign(run=lambda d: [f"r{i}" for i in range(len(d))])
    with pytest.raises(InputError, match="learning curves"):
        Envelope(n_boot=0).fit(points)
