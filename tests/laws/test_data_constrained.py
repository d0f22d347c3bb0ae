"""The data-constrained law of Muennighoff et al. (2023).

Checked against closed forms (it is Chinchilla's law without repetition), central
finite differences of its log form, and two published data sets: the aggregate
losses of the paper's runs (R*_D = 15.39, R*_N = 5.31 published) and ScaleBench's
pool (Li et al. 2026: R² = 0.79 on the test region for their all-data fit).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from jacobian_check import assert_jacobian_matches_central_differences

from scalekit.errors import InputError
from scalekit.fit import fit_law
from scalekit.fit._constrain import constrained_law
from scalekit.fit._inputs import law_inputs
from scalekit.fit._objective import objective
from scalekit.laws import get_law
from scalekit.laws._chinchilla import chinchilla_optimum
from scalekit.laws._data_constrained import data_constrained_law, unique_params_rule
from scalekit.planners._data_constrained_fit import PAPER_C4_BASE, fit_data_constrained

LAW = get_law("data_constrained")
PUBLISHED = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353,
             "rstar_d": 15.39, "rstar_n": 5.31}


def _points():
    N = np.array([1e8, 5e8, 2e9, 2e9, 9e9, 1e8])
    D = np.array([2e9, 1e10, 8e10, 1e10, 9e11, 1e9])
    U = np.array([1e8, 4e8, 1e11, 1e10, 1.5e9, 1e8])
    return {"params": N, "tokens": D, "unique_tokens": U}


def test_without_repetition_it_is_chinchillas_law():
    N, D = np.array([1e8, 1e9]), np.array([4e9, 3e10])
    X = {"params": N, "tokens": D, "unique_tokens": D * 3}    # U > D, N < U_D / 20
    chinchilla = get_law("chinchilla").predict({"params": N, "tokens": D}, PUBLISHED)
    np.testing.assert_allclose(LAW.predict(X, PUBLISHED), chinchilla, rtol=1e-12)


def test_repeated_tokens_are_worth_the_closed_form():
    # 40 epochs of 1e9 unique tokens: D' = U (1 + R* (1 - exp(-39 / R*))) tokens.
    U, R = 1e9, 39.0
    X = {"params": np.array([1e7]), "tokens": np.array([U * (R + 1)]),
         "unique_tokens": np.array([U])}
    effective = U * (1 + 15.39 * (1 - np.exp(-R / 15.39)))
    expected = 1.87 + 521.0 * 1e7 ** -0.353 + 1488.0 * effective ** -0.353
    np.testing.assert_allclose(LAW.predict(X, PUBLISHED), [expected], rtol=1e-12)


def test_analytic_jacobian_matches_finite_differences():
    X = _points()
    z = LAW.to_fitting(np.array([PUBLISHED[name] for name in LAW.param_names]))
    value, jacobian = LAW.log_value_and_jacobian(X, z[None])
    np.testing.assert_allclose(value[0], np.log(LAW.predict(X, PUBLISHED)), rtol=1e-12)
    assert_jacobian_matches_central_differences(LAW, X, z, jacobian)


def test_fit_recovers_a_known_truth():
    rng = np.random.default_rng(0)
    N = 10 ** rng.uniform(7, 9.5, 120)
    U = 10 ** rng.uniform(8, 10, 120)
    D = U * 10 ** rng.uniform(-0.5, 2.3, 120)
    X = {"params": N, "tokens": D, "unique_tokens": U}
    y = LAW.predict(X, PUBLISHED) * np.exp(rng.normal(0, 0.003, 120))
    fit = fit_law(LAW, X, y)
    for name in ("rstar_d", "rstar_n"):
        assert fit.values[name] == pytest.approx(PUBLISHED[name], rel=0.2), name
    for name in ("alpha", "beta"):
        assert fit.values[name] == pytest.approx(PUBLISHED[name], abs=0.02), name


def _datablations(published_data, *, with_missing=False):
    """The runs of the paper's own fit (its ``utils/parametric_fit.ipynb`` list without
    the seed replicates, the diverged and the hand-removed runs): 181 of the 229 rows,
    182 with the one run the CSV lacks (``datablations_paper_fit_extra.csv``)."""
    frame = pd.read_csv(published_data / "datablations_losses.csv")
    names = frame["model_args"].str.extract(r"'name': '([^']+)'")[0]
    runs = set((published_data / "datablations_paper_fit_runs.txt").read_text().split())
    kept = frame[names.isin(runs)].assign(unique_tokens=lambda f: f["token_num"] / f["epochs"])
    if with_missing:
        kept = pd.concat([kept, pd.read_csv(published_data / "datablations_paper_fit_extra.csv")])
    X = {"params": kept["num_params"].to_numpy(float), "tokens": kept["token_num"].to_numpy(float),
         "unique_tokens": kept["unique_tokens"].to_numpy(float)}
    return X, kept["openLM_loss"].to_numpy(float)


def test_unique_params_are_the_compute_optimal_size_for_the_unique_tokens():
    # The paper's C4 terms give U_N = 0.051 U_D; unequal exponents give N*(D*) of Chinchilla.
    assert unique_params_rule(PAPER_C4_BASE) == pytest.approx((0.051, 1.0), rel=2e-3)
    base = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
    scale, power = unique_params_rule(base)
    best = chinchilla_optimum(base, np.array([1e20, 1e23]))
    np.testing.assert_allclose(scale * best["tokens"] ** power, best["params"], rtol=1e-9)


@pytest.mark.slow
def test_two_stage_recovers_a_known_truth_with_its_base_held():
    rng = np.random.default_rng(1)
    N, U = 10 ** rng.uniform(7, 9.5, 80), 10 ** rng.uniform(8, 10, 80)
    X = {"params": N, "tokens": U * 10 ** rng.uniform(0, 2.3, 80), "unique_tokens": U}
    truth = {**PAPER_C4_BASE, "rstar_d": 15.39, "rstar_n": 5.31}
    y = data_constrained_law(PAPER_C4_BASE).predict(X, truth) * np.exp(rng.normal(0, 0.003, 80))
    fit = fit_data_constrained(X, y, base=PAPER_C4_BASE)
    assert fit.values["alpha"] == PAPER_C4_BASE["alpha"] and fit.stats["protocol"] == "two_stage"
    for name in ("rstar_d", "rstar_n"):
        assert fit.values[name] == pytest.approx(truth[name], rel=0.2), name
        low, high = fit.stats["profile_intervals"][name]     # closed: R* identified here
        assert truth[name] * 0.8 < low < high < truth[name] * 1.2, name
    assert not any("profile-likelihood" in d.message for d in fit.diagnostics)


def test_paper_objective_reproduced_and_its_published_optimum_is_not_the_least(published_data):
    """The paper's notebook prints its stage-2 minimum, 0.015825937 (Huber 1e-3 summed over
    log residuals, float32) at R*_D = 15.387756, R*_N = 5.309743 on its 182 runs: our data,
    ``U_N`` rule and objective give the same number. Yet the same objective is lower
    elsewhere (R*_D ~ 95, R*_N ~ 1.7): the published point is the optimum its grid of
    starts (R* in 6.7 ... 20) reached, not the least."""
    X, y = _datablations(published_data, with_missing=True)
    law = constrained_law(data_constrained_law(PAPER_C4_BASE), fixed=PAPER_C4_BASE)
    at_published = objective(law, law_inputs(law, X), np.log(y), np.log([15.387756, 5.309743]),
                             loss="huber", delta=1e-3)
    assert at_published == pytest.approx(0.015825937, rel=1e-6)
    best = fit_data_constrained(X, y, base=PAPER_C4_BASE, profile=False)
    assert best.stats["objective"] < at_published * (1 - 1e-3)


@pytest.mark.slow
def test_paper_protocol_profile_holds_the_published_values_and_cannot_pin_rstar_d(
        published_data):
    """Their two stages on their runs: the profile-likelihood 95% intervals hold the
    published 15.39 and 5.31; R*_D's is open above (the objective stays within the chi2
    threshold up to R*_D = 1e5), so the fit says R*_D is not identified, and R*_N's is
    closed (docs/data_constrained.md)."""
    X, y = _datablations(published_data)
    fit = fit_data_constrained(X, y, base=PAPER_C4_BASE)
    low_d, high_d = fit.stats["profile_intervals"]["rstar_d"]
    low_n, high_n = fit.stats["profile_intervals"]["rstar_n"]
    assert low_d < 15.39 and high_d is None
    assert low_n < 5.31 < high_n
    flagged = {d.param for d in fit.diagnostics
               if d.code == "not_identified" and "profile-likelihood" in d.message}
    assert flagged == {"rstar_d"}


def test_fit_data_constrained_refuses_bad_settings():
    X, y = _points(), np.ones(6)
    with pytest.raises(InputError, match="`protocol`"):
        fit_data_constrained(X, y, protocol="staged")
    with pytest.raises(InputError, match="`base`"):
        fit_data_constrained(X, y, protocol="joint", base=PAPER_C4_BASE)
    with pytest.raises(InputError, match="`base`"):
        fit_data_constrained(X, y, base={"E": 1.0})


def test_scalebench_test_region_r2(published_data):
    folder = published_data / "scalebench" / "data_constrained"
    train, test = (pd.read_parquet(folder / f"{part}.parquet") for part in ("train", "test"))

    def inputs(frame):
        return {name: frame[name].to_numpy(float) for name in ("params", "tokens", "unique_tokens")}

    fit = fit_law(LAW, inputs(train), train["loss"].to_numpy(float))
    predicted, actual = fit.predict(inputs(test)), test["loss"].to_numpy(float)
    r2 = 1 - ((actual - predicted) ** 2).sum() / ((actual - actual.mean()) ** 2).sum()
    assert r2 >= 0.79                                    # their all-data figure


def test_sigmoid_jacobian_matches_finite_differences():
    """The step-2 law of the task ladder (scalekit.laws._sigmoid), checked the same way."""
    law = get_law("sigmoid")
    X = {"x": np.linspace(0.5, 1.6, 7)}
    z = np.array([-0.6, 0.9, 6.0, 0.95])
    value, jacobian = law.log_value_and_jacobian(X, z[None])
    np.testing.assert_allclose(value[0], np.log(law.predict(X, z)), rtol=1e-12)
    assert_jacobian_matches_central_differences(law, X, z, jacobian)


def test_the_equation_names_the_law_inputs_and_its_fitted_decay_constants():
    """The header is L(N, D, U) (it printed `L(N, D, U_D, R, _D, R_D, likewise, with, _N)`,
    the words of the formula) and R*_D, R*_N appear as their fitted values."""
    from scalekit.fit import FitResult
    from scalekit.laws import data_constrained_law

    values = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353,
              "rstar_d": 15.39, "rstar_n": 5.31}
    for law in (data_constrained_law(), data_constrained_law({"A": 406.4, "B": 410.7,
                                                             "alpha": 0.34, "beta": 0.28})):
        result = FitResult(law, values, {k: 0.0 for k in values},
                           {k: (v, v) for k, v in values.items()}, 0.95, {})
        equation = result.equation()
        assert equation.startswith("L(N, D, U) = 1.87 + 521 / N'^0.353")
        assert "U_D (1 + 15.39 (1 - exp(-R_D / 15.39)))" in equation
        assert "U_N (1 + 5.31 (1 - exp(-R_N / 5.31)))" in equation
