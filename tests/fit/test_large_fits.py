"""Fits on many points: blocks sized by memory and basins found on a subsample give the
optimum of the engine that runs every start on every point in one block."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from fit.fit_synthetic import STARTS, points

from scalekit.fit._multistart import BLOCK_POINTS, minimize_batch, multistart
from scalekit.laws import get_law


def _sweep(runs=20, steps=150, seed=0):
    """A Chinchilla sweep logged at many steps: ``runs`` model sizes x ``steps`` token counts."""
    return points(np.geomspace(1e7, 1e9, runs), np.geomspace(1e8, 1e11, steps), seed=seed,
                  noise=0.02)


def test_blocks_of_one_start_give_the_unblocked_result():
    X, y = _sweep(runs=10, steps=40)
    law = get_law("chinchilla")
    one = minimize_batch(law, X, np.log(y), STARTS, loss="huber", delta=1e-3, block_size=1)
    whole = minimize_batch(law, X, np.log(y), STARTS, loss="huber", delta=1e-3,
                           block_size=len(STARTS))
    np.testing.assert_allclose(one.objective, whole.objective, rtol=1e-12)
    np.testing.assert_allclose(one.z, whole.z, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(one.iterations, whole.iterations)


def test_default_blocks_hold_at_most_block_points_start_points():
    # 16 starts in one block would hold a Jacobian of 16 x points x 3 floats at once; by
    # default a block holds BLOCK_POINTS start-points, so one start on this many points
    law = get_law("saturating_power")
    x = np.geomspace(1, 1e4, 2 * BLOCK_POINTS)
    starts = np.column_stack([np.linspace(-1, 1, 16), np.linspace(0.5, 2.5, 16),
                              np.linspace(0.1, 0.8, 16)])
    tracemalloc.start()
    run = minimize_batch(law, {"x": x}, np.log(2 + 5 * x ** -0.3), starts, loss="squared",
                         delta=1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 * x.size * 3 * 8 / 2          # under half of one unblocked Jacobian
    assert run.converged.all()
    np.testing.assert_allclose(np.exp(run.z[:, :2]), np.tile([2, 5], (16, 1)), rtol=1e-6)


def test_basins_on_a_subsample_reach_the_optimum_on_all_points():
    X, y = _sweep()
    law = get_law("chinchilla")
    grid = law.start_grid()[::9]
    common = {"loss": "huber", "delta": 1e-3, "rng": np.random.default_rng(0)}
    sub = multistart(law, X, np.log(y), grid, basin_points=500, **common)
    common["rng"] = np.random.default_rng(0)
    full = multistart(law, X, np.log(y), grid, basin_points=None, **common)
    assert sub.n_basin_points == 500 and full.n_basin_points == len(y) == 3000
    assert "evenly spaced of the 3,000 points" in sub.stop_reason
    best_sub, best_full = np.argmin(sub.batch.objective), np.argmin(full.batch.objective)
    assert sub.batch.objective[best_sub] == pytest.approx(full.batch.objective[best_full],
                                                         rel=1e-9)
    np.testing.assert_allclose(sub.batch.z[best_sub], full.batch.z[best_full], rtol=1e-4)
