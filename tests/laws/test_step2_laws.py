"""The log-sigmoid step-2 law of Bhagia et al. (2024) for task cross-entropy.

Checked against the paper's own way of writing it (OLMo-ladder ``fitting_functions.py``:
``(-a) log(1 - 1 / (1 + exp(-k (x - x0)))) + 1`` with ``a <= 0``), central finite differences, a fit to
points drawn from a known truth, and the chained prediction on a noise-free synthetic
ladder whose accuracy follows it.
"""

from __future__ import annotations

import numpy as np
import pytest
from jacobian_check import assert_jacobian_matches_central_differences

from scalekit.fit import fit_law
from scalekit.laws import get_law
from scalekit.planners._ladder_synthetic import STEP1_TRUTH, synthetic_ladder
from scalekit.planners._task_law import STEP2, TASKS, predict_task

LAW = get_law("log_sigmoid")
TRUTH = {"a": 0.2, "x0": 0.5, "k": 3.0}


def test_it_is_the_papers_log_sigmoid():
    x = np.linspace(0.1, 2.5, 25)
    a, x0, k = TRUTH.values()
    a_theirs = -a                                                      # bounded above by 0
    paper = -a_theirs * np.log(1 - 1 / (1 + np.exp(-k * (x - x0)))) + 1
    np.testing.assert_allclose(LAW.predict({"x": x}, TRUTH), paper, rtol=1e-10)


def test_analytic_jacobian_matches_finite_differences():
    X = {"x": np.linspace(0.2, 2.0, 9)}
    z = LAW.to_fitting(np.array(list(TRUTH.values())))
    value, jacobian = LAW.log_value_and_jacobian(X, z[None])
    np.testing.assert_allclose(value[0], np.log(LAW.predict(X, TRUTH)), rtol=1e-12)
    assert_jacobian_matches_central_differences(LAW, X, z, jacobian)


def test_fit_recovers_a_known_truth():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 1.6, 200)
    y = LAW.predict({"x": x}, TRUTH) + rng.normal(0, 0.005, 200)
    fit = fit_law(LAW, {"x": x}, y, loss="squared")
    for name, value in TRUTH.items():
        assert fit.values[name] == pytest.approx(value, rel=0.05), name


def test_chain_through_the_log_sigmoid_recovers_the_truth():
    """A noise-free ladder whose accuracy is the log-sigmoid of its loss, fitted with the
    paper's task-CE step 2 (log-sigmoid, last half of each run, no smoothing)."""
    spec = TASKS["hellaswag_val_5shot"]
    columns = (spec.columns("bpb")[0][0], spec.columns("bpb")[1][0])
    runs = synthetic_ladder(np.random.default_rng(0), columns=columns, run_noise=0.0,
                            checkpoint_noise=0.0, eval_noise=0.0, step2=TRUTH,
                            step2_law="log_sigmoid")
    prediction = predict_task(runs, spec.name, 7e9, 4e12, bootstrap=0, step2=STEP2["ce"])
    x = get_law("chinchilla").predict({"params": [7e9], "tokens": [4e12]}, STEP1_TRUTH)[0]
    assert prediction.step2["law"] == "log_sigmoid"
    assert prediction.intermediate == pytest.approx(x, rel=0.02)
    assert prediction.accuracy == pytest.approx(LAW.predict({"x": [x]}, TRUTH)[0], abs=0.01)
