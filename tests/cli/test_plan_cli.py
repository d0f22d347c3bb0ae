"""`scalekit plan` end to end: the same plan as `scalekit fit --target-compute`, closed forms,
refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isoflop.isoflop_synthetic import sweep
from scalekit_cli.app import main


def _write(tmp_path, frame, name="points.csv"):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


def test_plan_by_compute_loss_and_compare(tmp_path, capsys):
    path = _write(tmp_path, sweep(seed=0, noise=0.0))
    out = tmp_path / "plan.json"
    code = main(["plan", path, "--compute", "1e22", "--target-loss", "2.2", "--compare",
                 "7e10,1.4e12", "--bootstrap", "0", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.plan/1"
    law = report["law"]
    # Hoffmann et al. (2022), Appendix D: N*(C) = G (C/6)^a.
    G = (law["alpha"] * law["A"] / (law["beta"] * law["B"])) ** (1 / (law["alpha"] + law["beta"]))
    a = law["beta"] / (law["alpha"] + law["beta"])
    assert report["by_compute"]["params"] == pytest.approx(G * (1e22 / 6) ** a, rel=1e-4)
    assert report["by_compute"]["tokens_per_param"] == pytest.approx(
        (1e22 / 6) / (G * (1e22 / 6) ** a) ** 2, rel=1e-3)
    assert report["by_loss"]["target_loss"] == 2.2
    assert report["compare"]["extra"] > 0 and "6·N·D" in report["convention"]
    printed = capsys.readouterr().out
    assert "could be saved" in printed


def test_plan_needs_a_question(tmp_path):
    assert main(["plan", _write(tmp_path, sweep()), "--quiet"]) == 2
    assert main(["plan", _write(tmp_path, sweep()), "--compare", "7e10"]) == 2


def test_plan_equals_fit_target_compute_on_the_same_input(published_data, tmp_path):
    """Issue 13 §5: one answer per question, fitted from the file or read from a fit's JSON."""
    path = str(published_data / "chinchilla_epoch_svg.csv")
    common = ["--drop-top", "5", "--bootstrap", "12", "--n-jobs", "1", "--quiet"]
    fitted, planned, again = (tmp_path / name for name in ("fit.json", "plan.json", "from.json"))
    assert main(["fit", path, *common, "--target-compute", "5.76e23", "--json", str(fitted)]) == 0
    assert main(["plan", path, *common, "--compute", "5.76e23", "--json", str(planned)]) == 0
    assert main(["plan", "--from", str(fitted), "--compute", "5.76e23", "--quiet",
                 "--json", str(again)]) == 0
    fit_plan = json.loads(fitted.read_text())["plan"]
    plan, from_fit = (json.loads(p.read_text()) for p in (planned, again))
    assert plan["by_compute"] == fit_plan
    assert from_fit["by_compute"] == fit_plan
    assert fit_plan["params_ci"][0] < fit_plan["params"] < fit_plan["params_ci"][1]
    # Without --drop-top the five worst points pull N* away (the plan of issue 13 differed).
    assert plan["law"]["alpha"] == pytest.approx(0.3473, abs=0.002)
    codes = {d["code"] for d in plan["diagnostics"]}
    assert {"outliers_dropped", "extrapolation"} <= codes and "not_identified" not in codes


def test_plan_of_one_repeated_point_is_refused(tmp_path, capsys):
    """30 copies of one run (loss 5.0) cannot pin a law: exit 2, not a silent 3.85e-5."""
    frame = pd.DataFrame({"params": [1e8] * 30, "tokens": [2e9] * 30, "loss": [5.0] * 30})
    path = _write(tmp_path, frame)
    assert main(["plan", path, "--compute", "1e22", "--bootstrap", "0", "--quiet"]) == 2
    assert "cannot choose a law" in capsys.readouterr().err
    assert main(["plan", path, "--law", "chinchilla", "--compute", "1e22", "--bootstrap", "0",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "distinct points" in err and "hold 1" in err and len(err.strip().splitlines()) == 1


def test_plan_of_few_sizes_says_what_the_data_cannot_pin(tmp_path, capsys):
    """Five model sizes spanning 1.2x: alpha is not identified, the plan says so and its
    verdict is not to use it."""
    n, d = np.meshgrid(np.linspace(1e8, 1.2e8, 5), np.geomspace(1e9, 1e11, 8))
    truth = 1.7 + 400.0 / n ** 0.34 + 2000.0 / d ** 0.37
    loss = truth * np.exp(np.random.default_rng(0).normal(0, 0.005, n.shape))
    path = _write(tmp_path, pd.DataFrame({"params": n.ravel(), "tokens": d.ravel(),
                                          "loss": loss.ravel()}))
    out = tmp_path / "plan.json"
    assert main(["plan", path, "--compute", "1e21", "--bootstrap", "0", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    flagged = {(x["code"], x.get("param")) for x in report["diagnostics"]}
    assert ("not_identified", "alpha") in flagged and ("not_identified", "beta") not in flagged
    assert report["verdict"].endswith("do not use the plan as it stands")
    assert report["verdict"] in " ".join(capsys.readouterr().out.split())


def test_plan_from_a_report_that_is_not_a_fit(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "scalekit.isoflop/1"}))
    assert main(["plan", "--from", str(other), "--compute", "1e22"]) == 2
    assert "not a scalekit fit report" in capsys.readouterr().err
    path = _write(tmp_path, sweep())
    assert main(["plan", path, "--from", str(other), "--compute", "1e22"]) == 2


def test_plan_resample_choice_is_checked(tmp_path, capsys):
    assert main(["plan", _write(tmp_path, sweep()), "--compute", "1e22",
                 "--resample", "run"]) == 2
    assert "`--resample`" in capsys.readouterr().err


def test_plan_says_which_metric_it_fitted(tmp_path):
    frame = sweep(seed=0).rename(columns={"loss": "val_loss"})
    frame["train_loss"] = frame["val_loss"] - 0.05
    out = tmp_path / "plan.json"
    assert main(["plan", _write(tmp_path, frame), "--compute", "1e21", "--bootstrap", "0",
                 "--quiet", "--json", str(out)]) == 0
    [choice] = [d for d in json.loads(out.read_text())["diagnostics"]
                if d["code"] == "metric_choice"]
    assert choice["value"] == "val_loss"
