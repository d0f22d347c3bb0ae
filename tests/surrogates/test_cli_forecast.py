"""``scalekit forecast``: tables, JSON, plot, evaluation, exit codes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scalekit_cli.app import main


@pytest.fixture
def curves(tmp_path):
    rows = []
    for i, (e, a) in enumerate(((2.0, 5.0), (2.2, 4.0), (1.9, 6.0))):
        for step in np.arange(1, 41) * 50:
            rows.append({"run": f"r{i}", "step": int(step), "loss": e + a * (step / 50) ** -0.5})
    path = tmp_path / "curves.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _final(report) -> list[dict]:
    """Each run's final forecast, read back through :meth:`Forecast.from_dict`."""
    from scalekit.surrogates._forecast import Forecast

    return Forecast.from_dict(report).final.to_dict(orient="records")


def test_forecast_writes_json_and_plot(curves, tmp_path, capsys):
    out, png = tmp_path / "f.json", tmp_path / "f.png"
    assert main(["forecast", str(curves), "--to", "20000", "--method", "pow3",
                 "--json", str(out), "--plot", str(png)]) == 0
    assert "r1" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.forecast/1" and report["settings"]["method"] == "pow3"
    assert len(report["input_sha256"]) == 64
    final = {row["run"]: row for row in _final(report)}
    assert final["r0"]["x"] == pytest.approx(20000)
    truth = 2.0 + 5.0 * (20000 / 50) ** -0.5
    assert final["r0"]["q0.5"] == pytest.approx(truth, rel=0.01)
    assert final["r0"]["q0.1"] <= final["r0"]["q0.5"] <= final["r0"]["q0.9"]
    assert png.stat().st_size > 10_000


def test_evaluate_mode_scores_the_method(curves, tmp_path):
    out = tmp_path / "e.json"
    assert main(["forecast", str(curves), "--evaluate", "--method", "satpow", "--json", str(out),
                 "-q"]) == 0
    rows = json.loads(out.read_text())["evaluation"]
    overall = [r for r in rows if r["subset"] == "all"][0]
    assert overall["method"] == "satpow" and overall["final_log_err"] < 0.01


@pytest.mark.parametrize("args", [
    ["--to", "100", "--evaluate"],
    [],
    ["--to", "1e9", "--method", "nope"],
    ["--to", "1e9", "--run", "missing"],
    ["--to", "10"],
    ["--to", "1000", "--method", "pow3", "--schedule", "r0=constant:warmup=10,peak=1e-3,total=3000"],
    ["--evaluate", "--schedule", "r0=constant:warmup=10,peak=1e-3,total=3000"],
    ["--to", "1000", "--schedule", "r9=constant:warmup=10,peak=1e-3,total=3000"],
    ["--to", "1000", "--schedule", "r0"],
])
def test_bad_requests_exit_with_code_2(curves, args, capsys):
    assert main(["forecast", str(curves), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Traceback" not in err


def test_missing_file_exits_with_code_2(tmp_path, capsys):
    assert main(["forecast", str(tmp_path / "none.csv"), "--to", "10"]) == 2


def test_to_compute_forecasts_along_the_compute_column(tmp_path):
    steps = np.arange(1, 41) * 50.0
    frame = pd.DataFrame({"run": "a", "step": steps.astype(int), "compute": steps * 1e15,
                          "loss": 2.0 + 5.0 * (steps / 50) ** -0.5})
    path, out = tmp_path / "c.csv", tmp_path / "c.json"
    frame.to_csv(path, index=False)
    assert main(["forecast", str(path), "--to-compute", "2e19", "--method", "satpow",
                 "--json", str(out), "-q"]) == 0
    report = json.loads(out.read_text())
    assert report["settings"]["x"] == "compute"
    final = _final(report)[0]
    assert final["x"] == pytest.approx(2e19)
    assert final["q0.5"] == pytest.approx(2.0 + 5.0 * (2e4 / 50) ** -0.5, rel=0.01)


def test_to_compute_along_another_axis_exits_with_code_2(tmp_path, capsys):
    steps = np.arange(1, 41) * 50.0
    frame = pd.DataFrame({"run": "a", "step": steps.astype(int), "compute": steps * 1e15,
                          "tokens": steps * 1e6, "loss": 2.0 + 5.0 * (steps / 50) ** -0.5})
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    # 2e19 is a compute; read as a token count it would forecast far past the compute asked
    assert main(["forecast", str(path), "--to-compute", "2e19", "--x", "tokens", "-q"]) == 2
    assert "--to-compute forecasts along compute" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["average", "m4"])
def test_new_methods_forecast_noise_free_power_laws(curves, tmp_path, method):
    """The equal-weight ensemble and the M4 family, 10x beyond the data: within 5%."""
    out = tmp_path / "f.json"
    assert main(["forecast", str(curves), "--to", "20000", "--method", method,
                 "--json", str(out), "-q"]) == 0
    final = {row["run"]: row for row in _final(json.loads(out.read_text()))}
    for run, (e, a) in zip(("r0", "r1", "r2"), ((2.0, 5.0), (2.2, 4.0), (1.9, 6.0)), strict=True):
        assert final[run]["q0.5"] == pytest.approx(e + a * (20000 / 50) ** -0.5, rel=0.05)


def _error_curves(tmp_path, floors, *, floor_from):
    """Error-rate curves, one per run: floor + 0.5 (step/50)^-0.5, then the floor from
    step ``floor_from`` on (steps 50 ... 2000)."""
    rows = [{"run": run, "step": int(step),
             "error": floor + 0.5 * (step / 50) ** -0.5 if step < floor_from else floor}
            for run, floor in floors.items() for step in np.arange(1, 41) * 50]
    path = tmp_path / "errors.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_run_with_a_zero_metric_is_skipped_with_a_note_naming_it(tmp_path, capsys):
    """An error rate that reaches 0 in one run cannot be forecast on a log scale; the other
    runs are still forecast and the note names the run (it used to fail the whole command
    with a message naming no run)."""
    path = _error_curves(tmp_path, {"good": 0.05, "perfect": 0.0}, floor_from=2000)
    out = tmp_path / "f.json"
    assert main(["forecast", str(path), "--y", "error", "--to", "8000", "--json", str(out)]) == 0
    body = json.loads(out.read_text())
    body = body.get("body", body)
    assert {row["run"] for row in _final(body)} == {"good"}
    skipped = [d for d in body["diagnostics"] if d["code"] == "run_skipped"]
    assert [(d["run"], d["severity"]) for d in skipped] == [("perfect", "warning")]
    assert "caveats" not in body and "warnings" not in body


def test_evaluate_leaves_out_a_run_with_a_zero_metric(tmp_path):
    """--evaluate scores log errors, so a run whose error reaches 0 cannot be scored; it is
    left out instead of failing the whole evaluation."""
    path = _error_curves(tmp_path, {"good": 0.05, "also": 0.08, "perfect": 0.0},
                         floor_from=1500)
    out = tmp_path / "e.json"
    assert main(["forecast", str(path), "--y", "error", "--evaluate", "-q", "--json", str(out)]) == 0
    body = json.loads(out.read_text())
    body = body.get("body", body)
    overall = next(r for r in body["evaluation"] if r["subset"] == "all")
    assert overall["curves"] == 2 * 3   # two runs; cuts at 20/30/50% (10% leaves 4 points)


def test_evaluate_json_keeps_the_readers_notes_and_diagnostics_apart(curves, tmp_path):
    """A file with a training and a validation loss and a column the reader ignores: the
    evaluation JSON has the ignored column among `notes`, the metric choice under
    `diagnostics` (once), and no `warnings` key."""
    frame = pd.read_csv(curves).rename(columns={"loss": "val_loss"})
    frame["train_loss"] = frame["val_loss"] * 0.9
    frame["colour"] = "blue"
    path = tmp_path / "two.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "e.json"
    assert main(["forecast", str(path), "--evaluate", "--method", "satpow", "--json", str(out),
                 "-q"]) == 0
    body = json.loads(out.read_text())
    assert "warnings" not in body
    assert [d["code"] for d in body["diagnostics"]] == ["metric_choice"]
    assert any("colour" in note for note in body["notes"])
    assert not any("train_loss" in note for note in body["notes"])  # said once, by the diagnostic


@pytest.mark.slow
def test_a_schedule_given_to_the_default_lowers_that_runs_forecast(curves, tmp_path):
    """The rate of r0 falls along a cosine to step 4000: the forecast at 4000 of the run
    given its schedule is lower than without it."""
    finals = []
    for extra in ([], ["--schedule", "r0=cosine:warmup=10,peak=1e-3,final=1e-4,total=4000"]):
        out = tmp_path / f"f{len(extra)}.json"
        assert main(["forecast", str(curves), "--to", "4000", "--json", str(out), "-q",
                     *extra]) == 0
        report = json.loads(out.read_text())
        finals.append({row["run"]: row["q0.5"] for row in _final(report)})
    assert report["settings"]["schedules"] == {"r0": "cosine:warmup=10,peak=1e-3,final=1e-4,"
                                                      "total=4000"}
    assert finals[1]["r0"] < finals[0]["r0"]
