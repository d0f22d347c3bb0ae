"""The Chinchilla points of Hoffmann et al. (2022) as digitised by Besiroglu et al. (2024).

Published refit (data/published/PROVENANCE.md): 240 points (five highest losses
dropped), Huber delta = 1e-3 on log loss, summed: E = 1.8172, A = 477.8,
B = 2143, alpha = 0.3473, beta = 0.3672, objective 1.0183e-3; 95% bootstrap
intervals E (1.769, 1.871), alpha (0.317, 0.373), beta (0.331, 0.415).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.fit import fit_law
from scalekit.fit._bootstrap import bootstrap_fits, resample_counts
from scalekit.laws import get_law

BESIROGLU_95 = {"E": (1.769, 1.871), "alpha": (0.317, 0.373), "beta": (0.331, 0.415)}


@pytest.fixture(scope="module")
def points(published_data):
    frame = pd.read_csv(published_data / "chinchilla_epoch_svg.csv")
    frame = frame.drop(frame["loss"].nlargest(5).index)
    N = frame["Model Size"].to_numpy(dtype=float)
    D = frame["Training FLOP"].to_numpy(dtype=float) / (6.0 * N)
    return {"params": N, "tokens": D}, frame["loss"].to_numpy(dtype=float)


@pytest.fixture(scope="module")
def bootstrapped(points):
    X, y = points
    return fit_law("chinchilla", X, y, bootstrap=100, seed=0, n_jobs=2)


def test_fit_reaches_the_published_refit(bootstrapped):
    fit = bootstrapped
    assert fit.stats["n_points"] == 240
    assert fit.stats["n_starts_grid"] == 4500                 # the grid of Hoffmann et al.
    assert fit.stats["n_starts"] <= 4500 and "stopping rule" in fit.stats["stop_reason"]
    # the published values to their last digit
    assert (round(fit.values["E"], 4), round(fit.values["alpha"], 4),
            round(fit.values["beta"], 4)) == (1.8172, 0.3473, 0.3672)
    assert fit.values["A"] == pytest.approx(477.8, rel=0.02)
    assert fit.values["B"] == pytest.approx(2143, rel=0.02)
    assert f"{fit.stats['objective']:.5e}" == "1.01827e-03"
    assert fit.stats["converged"]
    assert fit.stats["n_at_best"] > 0.5 * fit.stats["n_starts"]
    # a = beta / (alpha + beta) from the published values 0.3473, 0.3672.
    assert fit.derived["a"] == pytest.approx(0.3672 / (0.3473 + 0.3672), abs=0.003)


def test_the_published_points_raise_no_diagnostic(bootstrapped):
    """Issue 13: a well-posed fit says nothing: no not_identified, on_bound, ... at all."""
    assert [d.code for d in bootstrapped.diagnostics] == []
    assert bootstrapped.stats["resample"] == "points"
    lo, hi = bootstrapped.derived_ci["a"]
    assert lo < bootstrapped.derived["a"] < hi


def test_bootstrap_intervals_overlap_besiroglu(bootstrapped):
    assert bootstrapped.ci_level == 0.95
    assert bootstrapped.bootstrap_values.shape == (100, 5)
    for name, (lo, hi) in BESIROGLU_95.items():
        ours_lo, ours_hi = bootstrapped.ci[name]
        assert ours_lo < bootstrapped.values[name] < ours_hi
        assert ours_lo < hi and lo < ours_hi, name


def test_standard_errors_agree_with_bootstrap_spread(bootstrapped):
    # Two independent estimates of the same uncertainty, in the fitting space (log
    # for E, A, B): the sandwich formula and the bootstrap's robust spread
    # (IQR / 1.349 of 100 resamples), within a factor of 1.5.
    law = bootstrapped.law
    draws = law.to_fitting(bootstrapped.bootstrap_values)
    q75, q25 = np.percentile(draws, [75, 25], axis=0)
    spread = (q75 - q25) / 1.349
    for k, name in enumerate(law.param_names):
        se = bootstrapped.stderr[name] / (bootstrapped.values[name] if law.params[k].log else 1)
        assert 1 / 1.5 < se / spread[k] < 1.5, (name, se, spread[k])


@pytest.mark.slow
def test_bootstrap_starts_find_the_full_grid_optimum(points, bootstrapped):
    """The bootstrap's few starts per resample reach what the whole 4,500 grid reaches."""
    X, y = points
    law = get_law("chinchilla")
    rng = np.random.default_rng(11)
    counts = resample_counts(rng, len(y), 1)
    grid = law.start_grid()
    log_y = np.log(y)
    full = bootstrap_fits(law, X, log_y, counts, grid[None], loss="huber", delta=1e-3)
    best = law.to_fitting(bootstrapped.theta)
    few = np.concatenate([best[None, None], grid[rng.choice(len(grid), (1, 8), replace=False)]],
                         axis=1)
    quick = bootstrap_fits(law, X, log_y, counts, few, loss="huber", delta=1e-3)
    np.testing.assert_allclose(quick[1], full[1], rtol=1e-6)
    np.testing.assert_allclose(quick[0], full[0], rtol=1e-3, atol=1e-4)
