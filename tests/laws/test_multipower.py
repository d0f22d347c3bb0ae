"""The multi-power law (Luo et al. 2025): the lattice (Laplace) loss drop against the literal
double sum, the analytic Jacobian against differences, the repository's published errors, and a fit
that recovers a known truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalekit.fit import fit_law
from scalekit.laws._multipower import (PARAMS, ScheduleTerms, loss_drop_sums, multipower_law,
                                       multipower_value_and_jacobian)
from scalekit.schedules import parse_schedule

DATA = Path(__file__).resolve().parents[2] / "data" / "published" / "multipower"
HELD_OUT = ("constant_72000", "cosine_72000", "wsd_20000_24000", "wsdld_20000_24000",
            "wsdcon_3", "wsdcon_18")
W = "warmup=2160,peak=3e-4"
#: The schedules as the repository builds them (PROVENANCE.md).
SPECS = {"constant_72000": f"constant:{W},total=72000",
         "cosine_72000": f"cosine:{W},final=3e-5,total=72000",
         "wsd_20000_24000": f"wsd:{W},final=3e-5,decay=20000,total=24000",
         "wsdld_20000_24000": f"wsd:{W},final=3e-5,decay=20000,total=24000,shape=linear",
         "wsdcon_3": f"two_stage:{W},second=3e-5,switch=8000,total=16000",
         "wsdcon_18": f"two_stage:{W},second=1.8e-4,switch=8000,total=16000"}


def _literal(rates, t, C, beta, gamma):
    """sum_{k=1..t} (eta_{k-1} - eta_k) G(eta_k^-gamma sum_{k<=tau<=t} eta_tau), term by term."""
    total = 0.0
    for k in range(1, t + 1):
        area = sum(rates[k:t + 1])
        total += (rates[k - 1] - rates[k]) * (1 - (C * rates[k] ** -gamma * area + 1) ** -beta)
    return total


def test_lattice_form_equals_the_double_sum():
    rng = np.random.default_rng(3)
    rates = np.r_[np.linspace(0, 1e-3, 20)[1:], np.full(15, 1e-3), 1e-3 * rng.uniform(0.05, 1, 40),
                  np.full(10, 2e-4)]
    steps = np.array([1, 5, 19, 30, 50, 70, 83])
    got = loss_drop_sums(ScheduleTerms(rates, steps), 1.7, 0.6, 0.55)
    want = [_literal(rates, t, 1.7, 0.6, 0.55) for t in steps]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-17)


def _direct(rates, t, C, beta, gamma):
    """Q(t) by the double sum written out (G through expm1/log1p, a rate of 0 as c = inf),
    and the sum of |drop_k| (the scale of its rounding)."""
    k = np.arange(1, t + 1)
    area = np.cumsum(rates[1:t + 1][::-1])[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        G = np.where(rates[k] > 0,
                     -np.expm1(-beta * np.log1p(C * rates[k] ** -gamma * area)), area > 0)
    drop = rates[k - 1] - rates[k]
    return (drop * G).sum(), np.abs(drop).sum()


@pytest.mark.parametrize("spec", [f"cosine:{W},final=3e-5,total=24000",
                                  f"wsd:{W},final=0,decay=20000,total=24000,shape=linear",
                                  f"two_stage:{W},second=0,switch=8000,total=16000",
                                  f"constant:{W},total=72000"])
def test_lattice_form_agrees_with_the_direct_sum_to_1e_10(spec):
    rates = parse_schedule(spec).rates
    rng = np.random.default_rng(7)
    steps = np.r_[1, 2, 2159, 2160, 8000, 8001, rng.integers(1, rates.size, 12), rates.size - 1]
    for C, beta, gamma in [(2.07, 0.58, 0.64), (0.005, 0.0055, 1.58),
                           *np.exp(rng.uniform(np.log([0.05, 0.03, 0.1]), np.log([20, 5, 1.5]),
                                               (3, 3)))]:
        got = loss_drop_sums(ScheduleTerms(rates, steps), C, beta, gamma)
        for value, t in zip(got, steps, strict=True):   # 1e-10 relative, or a few units of the drops' ulp
            want, scale = _direct(rates, t, C, beta, gamma)
            assert abs(value - want) <= 1e-10 * abs(want) + 1e-15 * scale, (t, C, beta, gamma)


@pytest.mark.parametrize("C, beta, gamma", [(1e-45, 9.9, 0.5), (1e-80, 5.0, 0.1)])
def test_a_tiny_c_whose_power_overflows_gives_the_direct_sum_not_nan(C, beta, gamma):
    """c_k^-beta is beyond a float here (it was computed apart from exp(-u/c_k): inf times 0,
    every value NaN); the loss drop is then ~1e-50 of the rate drops, so agreement is to
    the drops' rounding."""
    rates = parse_schedule(SPECS["wsd_20000_24000"]).rates
    steps = np.r_[1, 2160, 5000, 12000, rates.size - 1]
    got = loss_drop_sums(ScheduleTerms(rates, steps), C, beta, gamma)
    for value, t in zip(got, steps, strict=True):
        want, scale = _direct(rates, t, C, beta, gamma)
        assert np.isfinite(value) and abs(value - want) <= 1e-12 * scale, (t, value, want)


def test_jacobian_matches_central_differences():
    rates = parse_schedule("cosine:warmup=50,peak=1e-3,final=1e-4,total=600").rates
    terms = ScheduleTerms(rates, np.arange(60, 600, 40))
    z = np.r_[2.5, np.log([0.5, 0.45, 400.0, 2.0, 0.6, 0.65])]
    def theta(z):
        return np.r_[z[0], np.exp(z[1:])]
    _, J = multipower_value_and_jacobian(terms, theta(z))
    for p in range(7):
        h = np.zeros(7)
        h[p] = 1e-6
        up = multipower_value_and_jacobian(terms, theta(z + h), jacobian=False)
        down = multipower_value_and_jacobian(terms, theta(z - h), jacobian=False)
        np.testing.assert_allclose(J[:, p], (up - down) / 2e-6, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("size, params, mean, worst", [
    ("25", (3.04045406, 0.52468604, 0.50786857, 363.78751622, 2.06560812, 0.58279013,
            0.64142257), 0.00110, 0.00409),
    ("100", (2.6514477, 0.60115152, 0.45295811, 437.9464276, 2.13245612, 0.59785199,
             0.65523644), 0.00142, 0.00583)])
def test_the_repositorys_parameters_give_its_published_errors(size, params, mean, worst):
    means, worsts = [], []
    for run in HELD_OUT:
        curve = pd.read_csv(DATA / size / f"{run}.csv")
        schedule = parse_schedule(SPECS[run])
        np.testing.assert_allclose(schedule.rates[curve["step"]], curve["lr"], rtol=1e-9)
        pred = multipower_value_and_jacobian(
            ScheduleTerms(schedule.rates, curve["step"].to_numpy()), params, jacobian=False)
        rel = np.abs(curve["loss"] - pred) / curve["loss"]
        means.append(rel.mean())
        worsts.append(rel.max())
    assert np.mean(means) == pytest.approx(mean, abs=5e-6)
    assert np.mean(worsts) == pytest.approx(worst, abs=5e-6)


def test_fit_of_three_schedules_recovers_the_truth_and_predicts_a_fourth():
    truth = np.array([2.0, 0.6, 0.5, 300.0, 2.0, 0.6, 0.6])
    specs = ["cosine:warmup=100,peak=1e-3,final=1e-4,total=3000",
             "constant:warmup=100,peak=1e-3,total=3000",
             "two_stage:warmup=100,peak=1e-3,second=3e-4,switch=1500,total=2500"]
    schedules = [parse_schedule(s) for s in specs]
    steps = [np.arange(150, s.total_steps, 50) for s in schedules]
    y = np.concatenate([multipower_value_and_jacobian(ScheduleTerms(s.rates, t), truth,
                                                      jacobian=False)
                        for s, t in zip(schedules, steps, strict=True)])
    X = {"curve": np.concatenate([np.full(t.size, i) for i, t in enumerate(steps)]),
         "step": np.concatenate(steps)}
    law = multipower_law(schedules)
    start = law.to_fitting(truth * np.array([1.05, 1.3, 0.8, 1.5, 0.6, 1.3, 0.8]))
    fit = fit_law(law, X, y, starts=start[None], delta=1e-3)
    other = parse_schedule("wsd:warmup=100,peak=1e-3,final=1e-4,decay=2000,total=3000")
    at = np.arange(150, 3000, 50)
    want = multipower_value_and_jacobian(ScheduleTerms(other.rates, at), truth, jacobian=False)
    got = multipower_value_and_jacobian(ScheduleTerms(other.rates, at),
                                        [fit.values[p] for p in PARAMS], jacobian=False)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert fit.values["alpha"] == pytest.approx(0.5, rel=0.05)
