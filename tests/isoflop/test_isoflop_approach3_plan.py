"""Approach 3 and the plans, against the closed forms of the Chinchilla law
(Hoffmann et al. 2022, Appendix D) and the published refit of Besiroglu et al. (2024)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from isoflop.isoflop_synthetic import A_TRUE, B_TRUE, sweep
from scalekit.errors import InputError
from scalekit.isoflop._approach3 import ParametricOptimum
from scalekit.fit._plans import compare_allocation, plan_for_loss


# A small start grid (log E, log A, log B, alpha, beta) keeps these tests fast; the
# engine's own tests cover the full 4,500-start grid.
STARTS = np.array(list(itertools.product([0.0, 1.0], [4.0, 8.0], [4.0, 8.0], [0.25, 0.5],
                                         [0.25, 0.5])))


@pytest.fixture(scope="module")
def fitted():
    """Approach 3 on a noise-free sweep of the known surface."""
    return ParametricOptimum(n_boot=0, starts=STARTS).fit(sweep(seed=0, noise=0.0))


def closed_form(values):
    """G, a, the optimal-loss constant K and exponent gamma: L*(C) = E + K (C/6)^-gamma."""
    E, A, B, alpha, beta = (values[k] for k in ("E", "A", "B", "alpha", "beta"))
    G = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    a = beta / (alpha + beta)
    K = A * G ** -alpha + B * G ** beta
    return G, a, K, alpha * beta / (alpha + beta)


def test_noise_free_sweep_gives_the_true_exponents(fitted):
    assert fitted.params_law_.exponent == pytest.approx(A_TRUE, abs=0.005)
    assert fitted.tokens_law_.exponent == pytest.approx(B_TRUE, abs=0.005)


def test_noisy_sweep_recovers_exponents_with_interval():
    model = ParametricOptimum(n_boot=30, starts=STARTS, seed=1).fit(sweep(seed=1, noise=0.005))
    assert model.params_law_.exponent == pytest.approx(A_TRUE, abs=0.02)
    lo, hi = model.params_law_.exponent_ci
    assert lo < model.params_law_.exponent < hi


def test_plan_for_loss_matches_closed_form(fitted):
    values = fitted.result_.values
    G, a, K, gamma = closed_form(values)
    target = values["E"] + 0.5
    plan = plan_for_loss(fitted.result_, target)
    compute = 6 * (K / (target - values["E"])) ** (1 / gamma)
    assert plan["compute"] == pytest.approx(compute, rel=1e-6)
    assert plan["params"] == pytest.approx(G * (compute / 6) ** a, rel=1e-5)
    assert plan["tokens"] * plan["params"] * 6 == pytest.approx(compute, rel=1e-9)


def test_compare_matches_closed_form(fitted):
    values = fitted.result_.values
    G, a, K, gamma = closed_form(values)
    n, d = 70e9, 1.4e12
    loss = values["E"] + values["A"] * n ** -values["alpha"] + values["B"] * d ** -values["beta"]
    optimal = 6 * (K / (loss - values["E"])) ** (1 / gamma)
    got = compare_allocation(fitted.result_, n, d)
    assert got["optimal_compute"] == pytest.approx(optimal, rel=1e-6)
    assert got["extra"] == pytest.approx(6 * n * d - optimal, rel=1e-5)
    assert got["extra_percent"] == pytest.approx(100 * (6 * n * d - optimal) / optimal, rel=1e-5)
    # an allocation that is already optimal spends nothing extra
    c = 1e22
    at_optimum = compare_allocation(fitted.result_, G * (c / 6) ** a, (c / 6) ** (1 - a) / G)
    assert abs(at_optimum["extra_percent"]) < 1e-4


def test_loss_below_the_floor_is_rejected(fitted):
    with pytest.raises(InputError, match="target_loss"):
        plan_for_loss(fitted.result_, fitted.result_.values["E"] * 0.99)


def test_chinchilla_refit_exponent(published_data):
    """Besiroglu et al. (2024) refit: alpha = 0.3478, beta = 0.3658, so a = 0.513."""
    data = pd.read_csv(published_data / "chinchilla_epoch_svg.csv")
    data = data.nsmallest(len(data) - 5, "loss")  # their five highest losses dropped
    data = data.rename(columns={"Model Size": "params", "Training FLOP": "compute"})
    model = ParametricOptimum(n_boot=0, starts=STARTS).fit(data)
    assert model.params_law_.exponent == pytest.approx(0.3658 / (0.3478 + 0.3658), abs=0.01)
    assert np.isclose(model.params_law_.exponent + model.tokens_law_.exponent, 1.0)
