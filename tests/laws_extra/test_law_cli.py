"""`scalekit law depth|classes|inference-k`: reports, plans and exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalekit.laws import get_law
from scalekit.planners._cot import plan_tree
from scalekit_cli.app import main


def _write_csv(path, header, rows):
    path.write_text(header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


@pytest.fixture()
def classes_csv(tmp_path):
    law = get_law("class_count")
    K = np.array([2, 4, 8, 16, 32, 64, 128, 256])
    eps = law.predict({"classes": K}, {"c": 0.01, "gamma": 0.8})
    eps = eps * np.exp(np.random.default_rng(0).normal(0, 0.03, K.size))
    return _write_csv(tmp_path / "classes.csv", "classes,error", zip(K, eps, strict=True))


@pytest.fixture()
def k_csv(tmp_path):
    law = get_law("inference_k")
    ks = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
    err = law.predict({"k": ks}, {"E": 0.05, "A": 0.6, "a": 1.2, "B": 0.3, "b": 0.4})
    return _write_csv(tmp_path / "k.csv", "k,error", zip(ks, err, strict=True))


def test_depth_on_chinchilla_with_plan(published_data, tmp_path, capsys):
    out = tmp_path / "depth.json"
    rc = main(["law", "depth", str(published_data / "chinchilla_depth_width.csv"),
               "--keep-lowest", "203", "--plan", "params=1e9,tokens=2e10,width=4096,depth=5",
               "--json", str(out), "--plot", str(tmp_path / "depth.png"), "--quiet"])
    assert rc == 0 and capsys.readouterr().out == ""
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.law.depth/1" and len(report["input_sha256"]) == 64
    assert report["stats"]["n_points"] == 203
    assert abs(report["params"]["alpha_l"]["value"] - 1.2) <= 0.3
    plan = report["plan"]
    assert plan["regime"] == "ensemble-like"
    assert 12 * plan["width"] ** 2 * plan["depth"] == pytest.approx(1e9, rel=1e-6)
    assert plan["loss_lost"] > 0
    assert (tmp_path / "depth.png").stat().st_size > 0


def test_classes_plan_is_the_exact_tree_of_the_fitted_law(classes_csv, tmp_path):
    out = tmp_path / "classes.json"
    assert main(["law", "classes", str(classes_csv), "--plan", "classes=64", "--json", str(out),
                 "--quiet"]) == 0
    report = json.loads(out.read_text())
    values = {name: p["value"] for name, p in report["params"].items()}
    expected = plan_tree(64, values)
    assert tuple(report["plan"]["degrees"]) == expected.degrees
    assert report["plan"]["error"] == pytest.approx(expected.error)
    # the law's JSON is the fit's own (FitResult.to_dict), so the result is rebuilt from it
    from scalekit.fit import FitResult

    rebuilt = FitResult.from_dict(report)
    assert rebuilt.law.name == "class_count" and rebuilt.values == values


def test_inference_k_reports_the_u_shape_optimum(k_csv, tmp_path):
    out = tmp_path / "k.json"
    assert main(["law", "inference-k", str(k_csv), "--plan", "cost=0.0001", "--json", str(out),
                 "--quiet"]) == 0
    report = json.loads(out.read_text())
    k_star = (1.2 * 0.6 / (0.4 * 0.3)) ** (1 / 0.8)
    assert report["derived"]["shape"] == "U-shaped"
    assert report["derived"]["k_opt"] == pytest.approx(k_star, rel=0.05)
    assert report["plan"]["k"] <= round(k_star) + 1


def test_simulate_prints_quadrature_and_monte_carlo(tmp_path, capsys):
    out = tmp_path / "sim.json"
    assert main(["law", "inference-k", "--simulate", "--k-max", "16", "--n-test", "4",
                 "--repeats", "100", "--temperature", "0.5", "--json", str(out)]) == 0
    assert "quadrature" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["quadrature"][0] == pytest.approx(report["closed_forms"]["k=1"], rel=1e-3)
    assert report["k"][-1] == 16


@pytest.mark.parametrize("argv, message", [
    (["law", "classes", "{missing}"], "no such file"),
    (["law", "classes", "{bad_classes}"], "between 0 and 1"),
    (["law", "classes", "{classes}", "--plan", "K=64"], "--plan takes"),
    (["law", "inference-k", "{classes}"], "k"),
    (["law", "inference-k", "--simulate", "{classes}"], "--simulate reads no FILE"),
    (["law", "depth", "{classes}"], "loss"),
    (["law", "classes", "{classes}", "--loss", "cubic"], "`--objective`"),  # --loss: its alias
    # a fractional or infinite class count or k_max was truncated by int() (or crashed)
    (["law", "classes", "{classes}", "--plan", "classes=2.5"], "`--plan classes` is 2.5"),
    (["law", "classes", "{classes}", "--plan", "classes=inf"], "`--plan classes` is inf"),
    (["law", "inference-k", "{k}", "--plan", "cost=0.01,k_max=10.5"], "`--plan k_max` is 10.5"),
    # a data symbol other than m and l is named, with the ones allowed
    (["law", "depth", "{classes}", "--param-count", "m*x"],
     "`--param-count` is 'm*x', but must be a formula in m (width) and l (depth) only (it "
     "also names x)"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, classes_csv, k_csv, argv, message):
    bad = _write_csv(tmp_path / "bad.csv", "classes,error", [(2, 0.1), (4, 1.5)])
    paths = {"missing": tmp_path / "nope.csv", "bad_classes": bad, "classes": classes_csv,
             "k": k_csv}
    argv = [a.format(**paths) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1
