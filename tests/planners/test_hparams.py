"""fit_hparams: the optimal learning rate and batch size of a sweep as laws in N and D.

Synthetic sweeps with known optimum laws (a quadratic bowl in log lr and log batch around
η* = 1.5·N^-0.7·D^0.3 and B* = 0.01·D^0.5), and ScaleBench's lr_bsz task: fitted on its
train pool, scored on the target region's own grid (1.07B parameters, 100B tokens).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalekit.errors import InputError
from scalekit.planners import HparamsFit, fit_hparams, recommend_hparams, score_on_grid
from scalekit_cli.app import main

LR_BSZ = Path(__file__).resolve().parents[2] / "data" / "published" / "scalebench" / "lr_bsz"
LR_CURVATURE, BATCH_CURVATURE = 0.02, 0.01


def true_lr(n, d):
    return 1.5 * n ** -0.7 * d ** 0.3


def true_batch(n, d):
    return 0.01 * d ** 0.5


def true_loss(n, d):
    return 1.7 + 400.0 / n ** 0.34 + 410.0 / d ** 0.28


def sweep(seed=0, noise=3e-4, sizes=(1e8, 2e8, 4e8, 8e8), tokens=(2e9, 8e9, 3.2e10)):
    """Every cell on one grid of lr (2^-14 … 2^-6) and batch (2^5 … 2^13), steps of √2."""
    rng = np.random.default_rng(seed)
    lrs, batches = 2.0 ** np.arange(-14, -5.5, 0.5), 2.0 ** np.arange(5, 13.5, 0.5)
    rows = []
    for n in sizes:
        for d in tokens:
            for lr in lrs:
                for b in batches:
                    x, z = np.log(lr / true_lr(n, d)), np.log(b / true_batch(n, d))
                    loss = (true_loss(n, d) + LR_CURVATURE * x * x + BATCH_CURVATURE * z * z
                            + 0.004 * x * z + rng.normal(0.0, noise))
                    rows.append({"params": n, "tokens": d, "lr": lr, "batch": b, "loss": loss})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def synthetic():
    return fit_hparams(sweep(), target=(1.2e9, 5e10), bootstrap=40, seed=1)


def test_synthetic_laws_recover_the_known_exponents(synthetic):
    # the bowl has an x·z term: held-out error picks the surface that has one
    assert synthetic.surface["form"] == "quadratic"
    assert synthetic.surface["scores"]["quadratic"] < synthetic.surface["scores"]["additive"]
    lr = synthetic.laws["lr"]
    assert lr["form"] == "N,D"
    assert lr["terms"]["a"] == pytest.approx(-0.7, abs=0.03)
    assert lr["terms"]["b"] == pytest.approx(0.3, abs=0.03)
    batch = synthetic.laws["batch"]
    assert batch["terms"]["b"] == pytest.approx(0.5, abs=0.03)
    assert abs(batch["terms"].get("a", 0.0)) < 0.03
    assert all(c["bracketed_lr"] and c["bracketed_batch"] for c in synthetic.cells)


def test_synthetic_recommendation_holds_the_truth(synthetic):
    r = synthetic.recommendation
    n, d = 1.2e9, 5e10
    assert r["lr"] == pytest.approx(true_lr(n, d), rel=0.1)
    assert r["batch"] == pytest.approx(true_batch(n, d), rel=0.1)
    assert r["lr_interval"][0] < true_lr(n, d) < r["lr_interval"][1]
    assert r["lr_variants"] == (r["lr_interval"][0], r["lr"], r["lr_interval"][1])
    assert r["batch_interval"][0] < true_batch(n, d) < r["batch_interval"][1]
    assert r["loss"] == pytest.approx(true_loss(n, d), rel=0.01)
    # the relative loss cost of a 2× learning rate is the bowl's curvature · ln(2)² / L*
    assert r["penalty_lr_2x"] == pytest.approx(
        LR_CURVATURE * np.log(2) ** 2 / true_loss(n, d), rel=0.15)


def test_unbracketed_cell_is_named_and_left_out_of_the_lr_law():
    data = sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9))
    n, d = 2e8, 8e9
    cell = (data["params"] == n) & (data["tokens"] == d)
    data = data[~cell | (data["lr"] < true_lr(n, d) / 3)]  # that cell's grid stops short
    result = fit_hparams(data, bootstrap=0)
    row = next(c for c in result.cells if c["params"] == n and c["tokens"] == d)
    assert not row["bracketed_lr"]
    assert result.laws["lr"]["cells"] == len(result.cells) - 1
    assert any(x.code == "no_optimum" and x.param == "lr" for x in result.diagnostics)


def test_far_target_warns_of_extrapolation(synthetic):
    _, _, found = recommend_hparams(synthetic, 1e11, 8e9)
    assert [(x.code, x.severity, x.param) for x in found] == [("extrapolation", "warning", "params")]


def test_round_trip(synthetic):
    data = json.loads(json.dumps(synthetic.to_dict()))
    again = HparamsFit.from_dict(data)
    assert again.to_dict() == synthetic.to_dict()
    assert len(again.to_frame()) == len(synthetic.cells)


def test_bad_input_names_column_and_row():
    data = sweep(sizes=(1e8, 2e8), tokens=(2e9, 8e9))
    with pytest.raises(InputError, match="batch"):
        fit_hparams(data.drop(columns="batch"), bootstrap=0)
    data.loc[5, "lr"] = -1.0
    with pytest.raises(InputError, match="lr = -1"):
        fit_hparams(data, bootstrap=0)


@pytest.mark.slow
def test_published_target_region():
    """Fitted on the train pool only; scored on the target region's own grid (117 runs)."""
    train = pd.read_parquet(LR_BSZ / "train.parquet")
    test = pd.read_parquet(LR_BSZ / "test.parquet")
    n, d = float(test["non_embedding_param_size"].iloc[0]), float(test["data_size"].iloc[0])
    result = fit_hparams(train, lr="lr", batch="bsz", by=("non_embedding_param_size", "data_size"),
                         y="lm_loss", target=(n, d), sequence_length=2048, bootstrap=60)
    r = result.recommendation
    landed = score_on_grid(r["lr"], r["batch"], test, batch_column="bsz", y="lm_loss")
    assert landed["gap"] <= 0.005
    assert r["loss"] == pytest.approx(landed["best_loss"], rel=0.01)
    assert r["lr_interval"][0] <= landed["best_lr"] <= r["lr_interval"][1]
    # Step Law was fitted on these sweeps; its authors report 0.094% from the best on this
    # test set (Li et al. 2025, abstract)
    step = result.published["step_law"]
    assert score_on_grid(step["lr_value"], step["batch_value"], test, batch_column="bsz",
                         y="lm_loss")["gap"] <= 0.005


def test_cli_json_reads_back_and_bad_predict_exits_2(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9)).to_csv(path, index=False)
    out = tmp_path / "h.json"
    assert main(["law", "hparams", str(path), "--predict", "N=6e8,D=1e10", "--bootstrap", "20",
                 "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.law.hparams/1"
    result = HparamsFit.from_dict(report)
    assert result.recommendation["lr"] == pytest.approx(true_lr(6e8, 1e10), rel=0.15)
    assert main(["law", "hparams", str(path), "--predict", "N=6e8"]) == 2
    assert "--predict" in capsys.readouterr().err


def test_plan_carries_lr_and_batch_at_its_optimum(tmp_path, capsys):
    """``plan --hparams``: the planned N*, D* with the lr and batch of the sweep's laws."""
    sweep_path, runs_path = tmp_path / "sweep.csv", tmp_path / "runs.csv"
    sweep(sizes=(1e8, 2e8, 4e8, 8e8), tokens=(2e9, 8e9, 3.2e10)).to_csv(sweep_path, index=False)
    n, d = (a.ravel() for a in np.meshgrid(np.geomspace(1e7, 1e10, 7), np.geomspace(1e9, 1e11, 7)))
    pd.DataFrame({"run": [f"r{i}" for i in range(n.size)], "N": n, "D": d,
                  "loss": true_loss(n, d)}).to_csv(runs_path, index=False)
    fit_json, plan_json = tmp_path / "h.json", tmp_path / "plan.json"
    assert main(["law", "hparams", str(sweep_path), "--bootstrap", "30", "--json", str(fit_json),
                 "--quiet"]) == 0
    assert main(["plan", str(runs_path), "--compute", "1e20", "--bootstrap", "0",
                 "--hparams", str(fit_json), "--json", str(plan_json)]) == 0
    plan = json.loads(plan_json.read_text())
    p, r = plan["by_compute"], plan["hparams"]["by_compute"]
    assert (r["params"], r["tokens"]) == (p["params"], p["tokens"])
    assert r["lr"] == pytest.approx(true_lr(p["params"], p["tokens"]), rel=0.1)
    assert r["lr_interval"][0] < true_lr(p["params"], p["tokens"]) < r["lr_interval"][1]
    assert r["batch"] == pytest.approx(true_batch(p["params"], p["tokens"]), rel=0.1)
    assert "learning rate" in capsys.readouterr().out
    assert main(["plan", str(runs_path), "--compute", "1e20", "--bootstrap", "0",
                 "--hparams", str(runs_path)]) == 2
    # fit --target-compute plans the same optimum and carries the same lr and batch
    fitted = tmp_path / "fit.json"
    assert main(["fit", str(runs_path), "--target-compute", "1e20", "--bootstrap", "0",
                 "--hparams", str(fit_json), "--json", str(fitted), "--quiet"]) == 0
    carried = json.loads(fitted.read_text())["hparams"]["plan"]
    assert carried["lr"] == pytest.approx(r["lr"], rel=1e-6)
    assert main(["fit", str(runs_path), "--hparams", str(fit_json), "--quiet"]) == 2


def test_html_page_and_report_command(tmp_path):
    path = tmp_path / "sweep.csv"
    sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9)).to_csv(path, index=False)
    page, saved, again = tmp_path / "h.html", tmp_path / "h.json", tmp_path / "again.html"
    assert main(["law", "hparams", str(path), "--predict", "N=6e8,D=1e10", "--bootstrap", "10",
                 "--html", str(page), "--json", str(saved), "--quiet"]) == 0
    assert main(["report", str(saved), "-o", str(again)]) == 0
    for written in (page, again):
        text = written.read_text()
        assert "<svg" in text and "learning rate" in text


def test_cell_with_one_learning_rate_is_named_and_left_out():
    data = sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9))
    cell = (data["params"] == 4e8) & (data["tokens"] == 8e9)
    data = data[~cell | (data["lr"] == 2.0 ** -10)]
    result = fit_hparams(data, bootstrap=0)
    assert len(result.cells) == 5
    named = [x for x in result.diagnostics if x.code == "few_points" and x.value == 4e8]
    assert len(named) == 1 and "N = 4e+08, D = 8e+09" in named[0].message
    assert result.laws["loss"] is None  # five cells: too few for the loss law's five parameters


def test_two_sizes_cannot_choose_a_form_and_say_so():
    result = fit_hparams(sweep(sizes=(1e8, 2e8), tokens=(2e9, 8e9)), bootstrap=0)
    assert {x.param for x in result.diagnostics if x.code == "few_points"} >= {"lr", "batch"}


def test_published_forms_by_name():
    result = fit_hparams(sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9)), lr_law="step_law",
                         batch_law="step_law", bootstrap=0)
    assert (result.laws["lr"]["form"], result.laws["batch"]["form"]) == ("N,D", "D")
    # the batch truth depends on D alone: Step Law's form recovers its exponent
    assert result.laws["batch"]["terms"]["b"] == pytest.approx(0.5, abs=0.03)
    deepseek = fit_hparams(sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9)),
                           lr_law="deepseek_llm", batch_law="deepseek_llm", bootstrap=0)
    assert (deepseek.laws["lr"]["form"], deepseek.laws["batch"]["form"]) == ("C", "C")


def test_isoflop_carries_lr_and_batch_at_each_approach(tmp_path):
    """``isoflop --target-compute C --hparams``: each approach's N*, D* with its lr and batch."""
    sweep_path, points, fit_json, out = (tmp_path / name for name in
                                         ("sweep.csv", "iso.csv", "h.json", "iso.json"))
    sweep().to_csv(sweep_path, index=False)
    rows = [{"run": f"{c:g}-{n:.3g}", "params": n, "tokens": c / (6 * n),
             "loss": true_loss(n, c / (6 * n))}
            for c in (1e18, 3e18, 1e19, 3e19, 1e20) for n in np.geomspace(2e7, 5e9, 15)]
    pd.DataFrame(rows).to_csv(points, index=False)
    assert main(["law", "hparams", str(sweep_path), "--bootstrap", "20", "--json", str(fit_json),
                 "--quiet"]) == 0
    assert main(["isoflop", str(points), "--target-compute", "3e20", "--bootstrap", "10",
                 "--hparams", str(fit_json), "--json", str(out), "--quiet"]) == 0
    found = json.loads(out.read_text())["hparams"]
    assert found
    for r in found.values():
        assert r["lr"] == pytest.approx(true_lr(r["params"], r["tokens"]), rel=0.1)
        assert r["batch"] == pytest.approx(true_batch(r["params"], r["tokens"]), rel=0.1)
    assert main(["report", str(out), "-o", str(tmp_path / "iso.html")]) == 0
    assert main(["isoflop", str(points), "--hparams", str(fit_json), "--quiet"]) == 2


def test_too_few_bracketed_cells_give_no_law_and_say_so():
    data = sweep(sizes=(1e8, 2e8, 4e8), tokens=(2e9, 8e9))
    data = data[data["lr"] < 0.9 * true_lr(data["params"], data["tokens"]) / 2]  # grids stop short
    result = fit_hparams(data, target=(3e8, 4e9), bootstrap=10)
    assert result.laws["lr"] is None and result.recommendation["lr"] is None
    assert any(x.code == "few_points" and x.param == "lr" for x in result.diagnostics)
    assert result.recommendation["batch_interval"] is not None  # the batch law stands alone
