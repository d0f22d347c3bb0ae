"""LLM-as-a-judge model (Halder & Pehlevan): simulator against quadrature and closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.planners._judge_model import (JudgeModel, best_of_k_asymptote, error_many_samples,
                                            error_one_sample)
from scalekit.planners._judge_selection import monte_carlo_errors, quadrature_errors

KS = [1, 2, 5, 20, 100]


@pytest.fixture(scope="module")
def teacher_judge():
    return JudgeModel(n_test=12, seed=1).draw()


@pytest.fixture(scope="module")
def misspecified_judge():
    return JudgeModel(n_test=12, misspecification=1.0, seed=2).draw()


@pytest.mark.parametrize("temperature", [0.0, 0.05, 1.0])
@pytest.mark.parametrize("which", ["teacher_judge", "misspecified_judge"])
def test_monte_carlo_agrees_with_quadrature(request, which, temperature):
    predictive = request.getfixturevalue(which)
    exact = quadrature_errors(predictive, KS, temperature)
    mc, stderr = monte_carlo_errors(predictive, KS, temperature, repeats=400, seed=5)
    assert np.all(np.abs(mc - exact) < 4.5 * stderr)


@pytest.mark.parametrize("temperature", [0.0, 0.3])
def test_one_sample_closed_form(teacher_judge, temperature):
    assert quadrature_errors(teacher_judge, [1], temperature)[0] == pytest.approx(
        error_one_sample(teacher_judge), rel=2e-4)  # quadrature accuracy about 1e-4


@pytest.mark.parametrize("temperature", [0.1, 1.0])
def test_many_samples_limit_at_positive_temperature(misspecified_judge, temperature):
    exact = quadrature_errors(misspecified_judge, [10 ** 6], temperature)[0]
    assert exact == pytest.approx(error_many_samples(misspecified_judge, temperature), rel=2e-3)


def test_best_of_k_with_teacher_falls_as_pi_over_k_squared(teacher_judge):
    ks = np.array([256, 1024, 4096])
    exact = quadrature_errors(teacher_judge, ks, 0.0)
    asymptote = best_of_k_asymptote(teacher_judge, ks)
    assert exact == pytest.approx(asymptote, rel=0.03)
    # the relative gap closes as k grows (next order is 1/k)
    gaps = np.abs(exact / asymptote - 1)
    assert gaps[-1] < gaps[0]
    mc, stderr = monte_carlo_errors(teacher_judge, [256], 0.0, repeats=2000, seed=3)
    assert abs(mc[0] - asymptote[0]) < 4.5 * stderr[0] + 0.03 * asymptote[0]


def test_teacher_judge_is_monotone_and_misspecified_judge_u_shaped(teacher_judge,
                                                                   misspecified_judge):
    ks = [1, 2, 4, 8, 16, 64, 256]
    good = quadrature_errors(teacher_judge, ks, 0.0)
    assert np.all(np.diff(good) < 0)
    bad = quadrature_errors(misspecified_judge, ks, 0.0)
    best = int(np.argmin(bad))
    assert 0 < best < len(ks) - 1
    assert bad[-1] > bad[best]


def test_bad_settings():
    with pytest.raises(InputError, match="noise"):
        JudgeModel(noise=0.0)
    predictive = JudgeModel(n_test=2).draw()
    with pytest.raises(InputError, match="ks"):
        quadrature_errors(predictive, [0, 2], 0.0)
    with pytest.raises(InputError, match="temperature"):
        monte_carlo_errors(predictive, [2], -1.0)
