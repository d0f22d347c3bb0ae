"""Synthetic data with a known truth: recovery over many seeds, interval coverage."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.fit import fit_law
from scalekit.laws import get_law

HOFFMANN = np.array([1.69, 406.4, 410.7, 0.34, 0.28])      # E, A, B, alpha, beta


def chinchilla_points(seed, n=80, noise=0.01):
    rng = np.random.default_rng(seed)
    X = {"params": np.exp(rng.uniform(np.log(1e7), np.log(1e10), n)),
         "tokens": np.exp(rng.uniform(np.log(1e9), np.log(1e12), n))}
    y = get_law("chinchilla").predict(X, HOFFMANN) * np.exp(rng.normal(0.0, noise, n))
    return X, y


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["huber", "squared"])
def test_chinchilla_parameters_recovered_over_20_seeds(loss):
    """Tolerances: |E/E0 - 1| <= 0.1, |alpha - alpha0| <= 0.05, |beta - beta0| <= 0.1,
    |log A/A0|, |log B/B0| <= 1 with 80 points and 1% log-normal noise (150 grid starts)."""
    law = get_law("chinchilla")
    grid = law.start_grid()
    starts = grid[np.random.default_rng(123).choice(len(grid), 150, replace=False)]
    for seed in range(20):
        X, y = chinchilla_points(seed)
        fit = fit_law(law, X, y, loss=loss, starts=starts)
        got = fit.theta
        assert abs(got[0] / HOFFMANN[0] - 1) <= 0.1, (seed, got)
        assert abs(np.log(got[1] / HOFFMANN[1])) <= 1.0, (seed, got)
        assert abs(np.log(got[2] / HOFFMANN[2])) <= 1.0, (seed, got)
        assert abs(got[3] - HOFFMANN[3]) <= 0.05, (seed, got)
        assert abs(got[4] - HOFFMANN[4]) <= 0.1, (seed, got)


def test_noise_free_data_recovered_exactly():
    X, _ = chinchilla_points(0)
    y = get_law("chinchilla").predict(X, HOFFMANN)
    fit = fit_law("chinchilla", X, y)
    np.testing.assert_allclose(fit.theta, HOFFMANN, rtol=1e-5)
    assert fit.stats["objective"] < 1e-12


def _saturating_points(seed, truth, n=25, noise=0.03):
    rng = np.random.default_rng(1000 + seed)
    X = {"x": np.exp(rng.uniform(0.0, np.log(1e3), n))}
    return X, get_law("saturating_power").predict(X, truth) * np.exp(rng.normal(0, noise, n))


def _coverage(**fit_options):
    """Per parameter, the share of 40 noisy replications whose interval covers the truth."""
    truth = np.array([0.5, 3.0, 0.5])
    law = get_law("saturating_power")
    covered = np.zeros(3)
    for seed in range(40):
        X, y = _saturating_points(seed, truth)
        fit = fit_law(law, X, y, seed=seed, **fit_options)
        ci = np.array([fit.ci[name] for name in law.param_names])
        covered += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    return covered / 40


@pytest.mark.slow
def test_bootstrap_interval_coverage_near_nominal():
    """95% percentile intervals of 40 replications cover the truth 85-100% of the time."""
    coverage = _coverage(bootstrap=100, n_jobs=1)
    assert np.all((coverage >= 0.85) & (coverage <= 1.0)), coverage


@pytest.mark.slow
def test_standard_error_interval_coverage_near_nominal():
    """Normal intervals from the sandwich standard errors: 85-100% over 40 replications."""
    coverage = _coverage()
    assert np.all((coverage >= 0.85) & (coverage <= 1.0)), coverage
