"""A command reading a file says which metric its reader took, in its JSON diagnostics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from scalekit_cli.app import main


def test_fit_of_a_file_with_train_and_val_loss_reports_the_metric_choice(tmp_path):
    source, report = tmp_path / "finals.csv", tmp_path / "fit.json"
    sizes = [1e6, 3e6, 1e7, 3e7, 1e8, 3e8]
    val = [1.7 + 400.0 / n ** 0.34 for n in sizes]
    pd.DataFrame({"run": [f"r{i}" for i in range(6)], "params": sizes, "val_loss": val,
                  "train_loss": [v - 0.1 for v in val]}).to_csv(source, index=False)
    assert main(["fit", str(source), "--x", "params", "--bootstrap", "0", "--json",
                 str(report), "-q"]) == 0
    body = json.loads(report.read_text())
    [choice] = [d for d in body["diagnostics"] if d["code"] == "metric_choice"]
    assert choice["value"] == "val_loss" and "'train_loss'" in choice["message"]
    assert np.isclose(body["params"]["alpha"]["value"], 0.34, rtol=1e-3)  # fitted on val_loss
