"""`scalekit isoflop` end to end: exit codes and JSON conventions."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from isoflop.isoflop_synthetic import A_TRUE, learning_curves, sweep
from scalekit_cli.app import main

CHINCHILLA_BUDGETS = "6e18,1e19,3e19,6e19,1e20,3e20,6e20,1e21,3e21"


def test_chinchilla_approach_2_report(published_data, tmp_path, capsys):
    path = published_data / "chinchilla_epoch_svg.csv"
    out = tmp_path / "iso.json"
    code = main(["isoflop", str(path), "--approach", "2", "--budgets", CHINCHILLA_BUDGETS,
                 "--bootstrap", "100", "--json", str(out), "--plot", str(tmp_path / "iso.png")])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.isoflop/1"
    assert report["input_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert report["settings"]["budgets"][0] == 6e18 and report["seed"] == 0
    a2 = report["approaches"]["2 IsoFLOP profiles"]
    assert a2["a"]["value"] == pytest.approx(0.49, abs=0.03)
    assert a2["a"]["ci"][0] < a2["a"]["value"] < a2["a"]["ci"][1]
    assert {"b", "k_N", "k_D", "warnings"} <= set(a2)
    assert "6·N·D" in report["convention"] and "6·N·D" in capsys.readouterr().out
    assert (tmp_path / "iso.png").stat().st_size > 10_000


def test_llama3_tokens_profile(published_data, tmp_path, capsys):
    """Dubey et al. (2024), Llama 3 report, section 3.2.1: D*(C) = A·C^alpha with
    alpha = 0.53, A = 0.29. The file has compute and tokens only; N = C/(6D) is derived
    and said so."""
    out = tmp_path / "llama.json"
    code = main(["isoflop", str(published_data / "llama3_isoflops.csv"), "--approach", "2",
                 "--in", "tokens", "--bootstrap", "200", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    fit = report["approaches"]["2 IsoFLOP profiles"]
    assert fit["b"]["value"] == pytest.approx(0.53, abs=0.02)
    assert fit["k_D"]["ci"][0] < 0.29 < fit["k_D"]["ci"][1]
    assert any("params derived as N = C/(6·D)" in n for n in report["notes"])


def test_all_approaches_with_target(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    sweep(seed=0).to_csv(path, index=False)
    out = tmp_path / "iso.json"
    code = main(["isoflop", str(path), "--target-compute", "1e23", "--bootstrap", "20",
                 "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert set(report["approaches"]) == {"2 IsoFLOP profiles", "3 parametric law"}
    assert "learning curves" in report["skipped"]["1 envelope"]
    for row in report["comparison"]:
        assert row["a"] == pytest.approx(A_TRUE, abs=0.02)
        assert row["params_lo"] < row["params"] < row["params_hi"]


def test_envelope_from_a_curve_store(tmp_path, capsys):
    from scalekit.curves import CurveStore

    curves = learning_curves(seed=0, n_runs=25, n_steps=40)
    store = tmp_path / "curves.db"
    with CurveStore(store) as opened:
        opened.import_frame(curves, source="synthetic")
    out = tmp_path / "env.json"
    code = main(["isoflop", "--store", str(store), "--approach", "1", "--bootstrap", "50",
                 "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    fit = json.loads(out.read_text())["approaches"]["1 envelope"]
    assert fit["a"]["value"] == pytest.approx(A_TRUE, abs=0.03)
    assert fit["a"]["ci"][0] < fit["a"]["value"] < fit["a"]["ci"][1]


def _write(tmp_path, frame):
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("case", ["one budget", "two points", "zero compute"])
def test_bad_input_exits_2(tmp_path, capsys, case):
    data = sweep(budgets=np.array([1e19]) if case == "one budget" else np.logspace(18, 20, 3))
    if case == "two points":  # two of the three budgets: too few for a parabola each
        for budget in np.logspace(18, 20, 3)[:2]:
            data = data.drop(data.index[data["compute"] == budget][2:])
    if case == "zero compute":
        data = data.drop(columns=["tokens"])
        data.loc[4, "compute"] = 0.0
    code = main(["isoflop", _write(tmp_path, data), "--approach", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_thirty_copies_of_one_point_are_refused(tmp_path, capsys):
    frame = pd.DataFrame({"params": [1e8] * 30, "tokens": [2e9] * 30, "loss": [5.0] * 30})
    for approach in ("all", "3"):
        assert main(["isoflop", _write(tmp_path, frame), "--approach", approach, "--quiet"]) == 2
        err = capsys.readouterr().err
        reason = "distinct (params, tokens) pair" if approach == "3" else "no approach can be"
        assert reason in err and len(err.strip().splitlines()) == 1


def test_json_and_terminal_carry_the_diagnostics_and_a_verdict(tmp_path, capsys):
    data = sweep(seed=0)
    data = data.drop(data.index[data["compute"] == data["compute"].min()][2:])  # 2 sizes left
    out = tmp_path / "iso.json"
    code = main(["isoflop", _write(tmp_path, data), "--approach", "2", "--bootstrap", "20",
                 "--target-compute", "1e23", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    codes = [d["code"] for d in report["diagnostics"]]
    assert codes.count("budget_skipped") == 1 and codes.count("extrapolation") == 1
    extrapolation = next(d for d in report["diagnostics"] if d["code"] == "extrapolation")
    assert extrapolation["value"] == pytest.approx(1e23 / 1e21, rel=0.05)  # largest budget 1e21
    assert extrapolation["severity"] == "warning"
    assert all(d["message"].startswith("approach 2 IsoFLOP profiles: ")
               for d in report["diagnostics"])
    assert report["verdict"].startswith("verdict: 2 IsoFLOP profiles: 1 warning (extrapolation)")
    flat = " ".join(printed.split())
    assert "Notes and warnings" in flat and report["verdict"] in flat
    assert "info: approach 2 IsoFLOP profiles: budget" in flat and "warning: approach 2" in flat
    # the per-approach body carries the fit's own diagnostics (no extrapolation: that is the
    # question's)
    own = report["approaches"]["2 IsoFLOP profiles"]["diagnostics"]
    assert [d["code"] for d in own] == ["budget_skipped"]


def test_a_target_inside_the_budgets_is_no_extrapolation(tmp_path, capsys):
    out = tmp_path / "iso.json"
    code = main(["isoflop", _write(tmp_path, sweep(seed=0)), "--approach", "2", "--bootstrap",
                 "0", "--target-compute", "1e20", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["diagnostics"] == []
    assert report["verdict"] == "verdict: 2 IsoFLOP profiles: no warnings"


@pytest.mark.parametrize("option, value, named", [("--window", "2", "--window"),
                                                  ("--window", "foo", "--window"),
                                                  ("--in", "token", "--in")])
def test_a_bad_approach_2_setting_exits_2_even_with_all_approaches(tmp_path, capsys, option,
                                                                   value, named):
    # with several approaches a data problem skips one; a bad setting is the user's error
    code = main(["isoflop", _write(tmp_path, sweep(seed=0)), option, value, "--bootstrap", "0",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and f"`{named}`" in err and value in err
