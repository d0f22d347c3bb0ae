"""Inference-k law and planner (Halder & Pehlevan)."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.fit import fit_law
from scalekit.laws import get_law
from scalekit.planners._inference_k import best_temperature, plan_samples, samples_or_data
from scalekit.planners._judge_model import JudgeModel
from scalekit.planners._judge_selection import quadrature_errors

KS = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256, 512], dtype=float)


def _noisy(values, seed):
    law = get_law("inference_k")
    clean = law.predict({"k": KS}, values)
    return clean * np.exp(np.random.default_rng(seed).normal(0.0, 0.01, KS.size))


def test_fit_finds_the_optimum_of_a_u_shaped_curve():
    truth = {"E": 0.05, "A": 0.6, "a": 1.2, "B": 0.3, "b": 0.4}
    k_star = (1.2 * 0.6 / (0.4 * 0.3)) ** (1 / 0.8)
    fit = fit_law("inference_k", {"k": KS}, _noisy(truth, 0), loss="squared")
    assert fit.derived["shape"] == "U-shaped"
    assert fit.derived["k_opt"] == pytest.approx(k_star, rel=0.25)


def test_fit_of_a_monotone_curve_reports_no_finite_optimum():
    truth = {"E": 0.02, "A": 0.5, "a": 2.0, "B": 1e-9, "b": 0.5}
    fit = fit_law("inference_k", {"k": KS}, _noisy(truth, 1), loss="squared")
    assert fit.values["a"] == pytest.approx(2.0, rel=0.1)
    prediction = fit.predict({"k": np.array([1e4])})[0]
    assert prediction == pytest.approx(0.02, rel=0.1)
    assert fit.derived["k_opt"] is None or fit.derived["k_opt"] > 512


def test_plan_samples_matches_continuous_optimum():
    # error = E + A k^-a: minimising A k^-a + c k gives k* = (a A / c)^(1 / (a + 1))
    values = {"E": 0.01, "A": 0.5, "a": 2.0, "B": 0.0, "b": 0.5}
    cost = 1e-5
    k_star = (2.0 * 0.5 / cost) ** (1 / 3)
    plan = plan_samples(values, cost)
    assert abs(plan.k - k_star) <= 1
    assert plan.k_least_error == 100_000


def test_best_temperature_beats_a_scan():
    predictive = JudgeModel(n_test=4, misspecification=0.5, seed=4).draw()
    found = best_temperature(predictive, 8)
    scan = [quadrature_errors(predictive, [8], t)[0] for t in (0.0, 0.01, 0.1, 1.0, 10.0)]
    assert found["error"] <= min(scan) * (1 + 1e-3)
    assert found["error"] <= found["error_random"]


def test_samples_or_data_follows_costs():
    model = JudgeModel(n_test=4, seed=0)
    cheap_samples = samples_or_data(model, k=4, temperature=0.0, cost_per_sample=1e-6,
                                    cost_per_example=1.0)
    cheap_data = samples_or_data(model, k=4, temperature=0.0, cost_per_sample=1.0,
                                 cost_per_example=1e-6)
    assert cheap_samples["better"] == "samples" and cheap_data["better"] == "data"
    assert cheap_samples["more_samples"]["error"] < cheap_samples["error"]
    assert cheap_samples["more_data"]["error"] < cheap_samples["error"]
