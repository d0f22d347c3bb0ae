"""The planners' laws fitted to measurements (scalekit.planners._measured_laws) and the
theory model's simulation (simulate_samples), in Python and behind the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.errors import InputError
from scalekit.laws import get_law
from scalekit.planners._inference_k import simulate_samples
from scalekit.planners._judge_model import JudgeModel
from scalekit.planners._measured_laws import fit_class_count_law, fit_depth_law, fit_inference_k_law
from scalekit_cli.app import main

K_TRUTH = {"E": 0.05, "A": 0.6, "a": 1.2, "B": 0.3, "b": 0.4}


def _k_frame(ks=(1, 2, 4, 8, 16, 32, 64, 128, 256)):
    ks = np.asarray(ks, dtype=float)
    error = get_law("inference_k").predict({"k": np.maximum(ks, 1.0)}, K_TRUTH)
    return pd.DataFrame({"run": [f"k{int(k)}" for k in ks], "k": ks, "error": error})


def test_the_inference_k_law_recovers_its_truth_from_the_last_point_of_each_run():
    frame = _k_frame()
    early = frame.assign(step=1, error=frame.error * 3)      # an earlier, worse point per run
    result = fit_inference_k_law(pd.concat([early, frame.assign(step=2)]))
    assert len(result.points.y) == len(frame)
    for name, value in K_TRUTH.items():
        assert result.values[name] == pytest.approx(value, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("fit, frame, needle", [
    (fit_inference_k_law, _k_frame((0, 1, 2, 4, 8, 16)), "run 'k0' has k = 0, but every value "
                                                           "must be at least 1"),
    (fit_class_count_law, pd.DataFrame({"run": ["a", "b", "c"], "classes": [2, 4, 8],
                                        "error": [0.1, 1.5, 0.3]}),
     "run 'b' has error = 1.5, but every value must be strictly between 0 and 1"),
    (fit_class_count_law, pd.DataFrame({"classes": [2, 4]}), "needs the column(s) error"),
])
def test_a_value_outside_the_law_s_domain_is_refused_by_its_run(fit, frame, needle):
    with pytest.raises(InputError) as refused:
        fit(frame, source="m.csv")
    assert needle in str(refused.value) and str(refused.value).startswith("m.csv")


def test_end_layers_need_three_layers_named_as_the_parameter_or_the_flag(tmp_path, capsys):
    frame = pd.DataFrame({"run": ["a", "b"], "width": [64, 128], "depth": [4, 2],
                          "tokens": [1e9, 1e9], "loss": [3.0, 2.9]})
    with pytest.raises(InputError, match="run 'b' has depth = 2, but every value must be at "
                                         "least 3 with `exclude_end_layers`"):
        fit_depth_law(frame, exclude_end_layers=True)
    path = tmp_path / "depth.csv"
    frame.to_csv(path, index=False)
    assert main(["law", "depth", str(path), "--exclude-end-layers"]) == 2
    assert "at least 3 with `--exclude-end-layers`" in capsys.readouterr().err


def test_the_simulation_s_quadrature_agrees_with_its_monte_carlo_and_closed_form():
    model = JudgeModel(dim=20, n_train=40, n_test=30, seed=3)
    simulation = simulate_samples(model, temperature=0.5, k_max=32, repeats=400, seed=3)
    assert simulation.k[0] == 1 and simulation.k[-1] == 32
    assert simulation.quadrature[0] == pytest.approx(simulation.closed_forms["k=1"], rel=1e-3)
    gap = np.abs(np.subtract(simulation.monte_carlo, simulation.quadrature))
    assert (gap <= 4 * np.asarray(simulation.monte_carlo_stderr) + 1e-9).all()
    best = int(np.argmin(simulation.quadrature))
    assert simulation.k_least_error == simulation.k[best]
    with pytest.raises(InputError, match="`k_max`"):
        simulate_samples(model, k_max=0)
