"""A law expression reads the data's own columns (fit, plan, design), and parameter bounds
set from the command line bind the fit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scalekit_cli.app import main

from scalekit.fit import resolve_law

TRUTH = {"L": 1.5, "B": 300.0, "alpha": 0.3, "beta": 0.1}
LAW = "L + B*dense_parameter_count**-alpha*num_experts**-beta"


def moe(n=40, seed=0, noise=0.005) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"run": [f"r{i}" for i in range(n)],
                          "dense_parameter_count": np.exp(rng.uniform(np.log(1e7), np.log(1e9), n)),
                          "num_experts": rng.choice([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], n)})
    frame["loss"] = (TRUTH["L"] + TRUTH["B"] * frame.dense_parameter_count ** -TRUTH["alpha"]
                     * frame.num_experts ** -TRUTH["beta"]) * np.exp(rng.normal(0, noise, n))
    return frame


def test_a_name_that_is_a_column_is_an_input_and_the_rest_are_parameters():
    law = resolve_law("L + B*width**-a", columns=["run", "width", "loss", "N"])
    assert law.inputs == ("width",) and law.param_names == ("L", "B", "a")
    # a data column named like a symbol does not take the symbol's place
    assert resolve_law("E + A*N**-a", columns=["N"]).inputs == ("params",)


def test_fit_reads_the_columns_a_law_names_and_recovers_the_truth(tmp_path, capsys):
    data, out = tmp_path / "moe.csv", tmp_path / "fit.json"
    moe(noise=0.001).to_csv(data, index=False)
    code = main(["fit", str(data), "--law", LAW, "--bootstrap", "0", "--json", str(out),
                 "--quiet"])
    assert code == 0, capsys.readouterr().err
    values = json.loads(out.read_text())["params"]
    for name, truth in TRUTH.items():
        assert values[name]["value"] == pytest.approx(truth, rel=0.05), name


def test_bounds_bind_the_fit_and_bad_bounds_exit_2(tmp_path, capsys):
    data, out = tmp_path / "moe.csv", tmp_path / "fit.json"
    moe().to_csv(data, index=False)
    code = main(["fit", str(data), "--law", LAW, "--bootstrap", "0", "--bounds",
                 "alpha=0.35:1", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["params"]["alpha"]["value"] == pytest.approx(0.35)
    for bad in ("alpha=1:0", "alpha", "alpha=a:1"):
        assert main(["fit", str(data), "--law", LAW, "--bounds", bad, "--quiet"]) == 2
        assert "The value of `--bounds` is" in capsys.readouterr().err


def test_design_replays_a_law_of_the_pools_columns_and_scores_a_target_with_losses(
        tmp_path, capsys):
    pool, target, out = tmp_path / "pool.csv", tmp_path / "target.csv", tmp_path / "d.json"
    moe(n=60).to_csv(pool, index=False)
    goal = pd.DataFrame({"dense_parameter_count": [2e9, 4e9, 6e9, 8e9],
                         "num_experts": [1.0, 4.0, 16.0, 64.0]})
    truth = (TRUTH["L"] + TRUTH["B"] * goal.dense_parameter_count ** -TRUTH["alpha"]
             * goal.num_experts ** -TRUTH["beta"]).to_numpy()
    goal.assign(loss=truth).to_csv(target, index=False)
    code = main(["design", "--law", LAW, "--pool", str(pool), "--target", str(target),
                 "--cost", "dense_parameter_count", "--budget", "30%", "--replay",
                 "--method", "v_optimal", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert set(report["chosen"][0]["inputs"]) == {"dense_parameter_count", "num_experts"}
    predicted = np.array([p["prediction"] for p in report["predictions"]])
    assert np.abs(predicted / truth - 1).max() < 0.02
    # the replay's score on the target's known losses, against a direct computation
    r2 = 1 - ((truth - predicted) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()
    assert report["score"]["r2"] == pytest.approx(max(r2, -1.0))
    bands = np.array([p["interval"] for p in report["predictions"]])
    held = ((bands[:, 0] <= truth) & (truth <= bands[:, 1])).mean()
    assert report["score"]["coverage"] == pytest.approx(held) and report["score"]["rows"] == 4
