"""Class-count law eps(K) = min(c K^gamma, 1 - 1/K) (Nadgir, Balasubramanian & Chaudhari)."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.fit import fit_law
from scalekit.laws import get_law

TRUTH = {"c": 0.004, "gamma": 0.9}


def test_law_is_capped_at_chance():
    law = get_law("class_count")
    K = np.array([2.0, 10.0, 1e3, 1e6])
    eps = law.predict({"classes": K}, TRUTH)
    assert np.all(eps <= 1 - 1 / K + 1e-15)
    assert eps[-1] == pytest.approx(1 - 1e-6)
    assert eps[0] == pytest.approx(0.004 * 2 ** 0.9)


def test_saturation_where_power_meets_chance():
    law = get_law("class_count")
    K_sat = law.derive(TRUTH)["saturation_classes"]
    assert TRUTH["c"] * K_sat ** TRUTH["gamma"] == pytest.approx(1 - 1 / K_sat, rel=1e-6)


def test_fit_recovers_truth_and_intervals_cover_it():
    law = get_law("class_count")
    K = np.unique(np.round(np.geomspace(2, 2000, 25)))
    true = law.predict({"classes": K}, TRUTH)
    covered, gammas = 0, []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        measured = np.minimum(true * np.exp(rng.normal(0.0, 0.05, K.size)), 0.9999)
        fit = fit_law(law, {"classes": K}, measured, loss="squared")
        gammas.append(fit.values["gamma"])
        lo, hi = fit.ci["gamma"]
        covered += lo < TRUTH["gamma"] < hi
    assert np.mean(gammas) == pytest.approx(TRUTH["gamma"], abs=0.02)
    assert covered >= 24  # nominal 95% of 30 is 28.5; allow for chance
