"""`scalekit law task` and `scalekit plan --law data_constrained` end to end: reports,
figures and refusals (exit 2, one line, nothing written)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scalekit_cli.app import main

from scalekit.laws import get_law
from scalekit.planners._data_constrained import plan_data_constrained

TRUTH = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353,
         "rstar_d": 15.39, "rstar_n": 5.31}


@pytest.fixture(scope="module")
def ladder(published_data):
    folder = published_data / "olmo_ladder"
    return [str(p) for p in sorted(folder.glob("*xC.csv"))], str(folder / "final.json"), folder


def test_law_task_writes_predictions_and_both_steps(ladder, tmp_path, capsys):
    files, runs, folder = ladder
    out, figure = tmp_path / "task.json", tmp_path / "task.png"
    code = main(["law", "task", *files, "--runs", runs, "--predict", "N=6.89e9,D=3.95e12",
                 "--task", "piqa_val_5shot", "--bootstrap", "20", "--actual",
                 str(folder / "peteish7_eval_anneal.csv"), "--json", str(out),
                 "--plot", str(figure)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    (prediction,) = report["predictions"]
    assert prediction["task"] == "piqa_val_5shot"
    low, high = prediction["accuracy_interval"]
    assert low < prediction["accuracy"] < high
    assert prediction["step1"]["law"] == "chinchilla" and prediction["step2"]["law"] == "sigmoid"
    assert abs(prediction["error"]) < 0.02                            # PIQA: within 2 points
    assert figure.stat().st_size > 10_000
    assert "piqa_val_5shot" in capsys.readouterr().out


@pytest.mark.parametrize("args, flag", [
    (["--predict", "N=6.89e9"], "--predict"),
    (["--predict", "N=6.89e9,D=4e12", "--x", "loss"], "--x"),
    (["--predict", "N=6.89e9,D=4e12", "--task", "nope"], "--task"),
])
def test_law_task_refusals(ladder, tmp_path, capsys, args, flag):
    files, runs, _ = ladder
    out = tmp_path / "task.json"
    assert main(["law", "task", *files, "--runs", runs, *args, "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert flag in err and len(err.splitlines()) == 1 and len(err) <= 200
    assert not out.exists()


def test_plan_data_constrained_from_a_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 10 ** rng.uniform(7, 9.5, 80)
    u = 10 ** rng.uniform(8, 10, 80)
    d = u * 10 ** rng.uniform(-0.3, 2.2, 80)
    loss = get_law("data_constrained").predict(
        {"params": n, "tokens": d, "unique_tokens": u}, TRUTH) * np.exp(rng.normal(0, 0.002, 80))
    path = tmp_path / "runs.csv"
    pd.DataFrame({"params": n, "tokens": d, "U": u, "loss": loss}).to_csv(path, index=False)
    out = tmp_path / "plan.json"
    code = main(["plan", str(path), "--law", "data_constrained", "--compute", "1e21",
                 "--unique-tokens", "1e9", "--compare", "1e9,1.6e11", "--bootstrap", "0",
                 "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    plan = report["data_constrained"]
    truth = plan_data_constrained(TRUTH, 1e21, 1e9, compare=(1e9, 1.6e11))
    assert plan["params"] == pytest.approx(truth.params, rel=0.1)
    assert plan["epochs"] == pytest.approx(truth.epochs, rel=0.1)
    assert plan["wasted_percent"] == pytest.approx(truth.wasted_percent, abs=5)
    assert "loss lost to the data limit" in capsys.readouterr().out


def test_plan_data_constrained_needs_unique_tokens(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    pd.DataFrame({"params": [1e8], "tokens": [1e9], "U": [1e8], "loss": [3.0]}).to_csv(path)
    assert main(["plan", str(path), "--law", "data_constrained", "--compute", "1e21"]) == 2
    assert "--unique-tokens" in capsys.readouterr().err
    assert main(["plan", str(path), "--compute", "1e21", "--unique-tokens", "1e9"]) == 2


@pytest.mark.slow
def test_store_keeps_unique_tokens_and_fits_from_them(tmp_path, capsys):
    """`U` imported into the store is kept as the run's `unique_tokens` (run configuration),
    exported and read back, and `fit --store` recovers a known truth from it."""
    rng = np.random.default_rng(2)
    n, u = 10 ** rng.uniform(7, 9.5, 60), 10 ** rng.uniform(8, 10, 60)
    d = u * 10 ** rng.uniform(0, 2.3, 60)
    loss = get_law("data_constrained").predict({"params": n, "tokens": d, "unique_tokens": u},
                                                TRUTH)
    path, store = tmp_path / "runs.csv", str(tmp_path / "runs.db")
    pd.DataFrame({"run": [f"r{i}" for i in range(60)], "step": 1, "N": n, "D": d, "U": u,
                  "loss": loss}).to_csv(path, index=False)
    assert main(["store", "import", str(path), "--store", store]) == 0
    exported = tmp_path / "export.csv"
    assert main(["store", "export", str(exported), "--store", store]) == 0
    back = pd.read_csv(exported).set_index("run").loc[[f"r{i}" for i in range(60)]]
    np.testing.assert_allclose(back["config.unique_tokens"], u, rtol=1e-12)
    out = tmp_path / "fit.json"
    assert main(["fit", "--store", store, "--law", "data_constrained", "--json", str(out)]) == 0
    params = json.loads(out.read_text())["params"]
    for name in ("rstar_d", "rstar_n"):
        assert params[name]["value"] == pytest.approx(TRUTH[name], rel=1e-3), name
    capsys.readouterr()


@pytest.mark.slow
def test_law_task_reads_a_store_as_it_reads_the_files(ladder, tmp_path, capsys):
    """The ladder imported into a store (`store import FILES --runs TABLE`) gives the same
    predictions as the files themselves."""
    files, runs, _ = ladder
    db = tmp_path / "ladder.db"
    assert main(["store", "import", *files, "--runs", runs, "--store", str(db), "--quiet"]) == 0
    reports = []
    for source in ([*files, "--runs", runs], ["--store", str(db)]):
        out = tmp_path / f"task{len(reports)}.json"
        code = main(["law", "task", *source, "--predict", "N=6.89e9,D=3.95e12", "--task",
                     "piqa_val_5shot", "--task", "mmlu_avg_test_5shot", "--bootstrap", "10",
                     "--json", str(out), "--quiet"])
        assert code == 0, capsys.readouterr().err
        reports.append(json.loads(out.read_text())["predictions"])
    for from_files, from_store in zip(*reports, strict=True):
        assert from_store["task"] == from_files["task"]
        for key in ("intermediate", "accuracy"):
            assert from_store[key] == pytest.approx(from_files[key], rel=1e-9), key
        np.testing.assert_allclose(from_store["accuracy_interval"],
                                   from_files["accuracy_interval"], rtol=1e-9)


def test_law_task_wants_files_or_a_store_not_both(ladder, tmp_path, capsys):
    files, runs, _ = ladder
    code = main(["law", "task", *files, "--runs", runs, "--store", str(tmp_path / "x.db"),
                 "--predict", "N=1e9,D=1e10"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--store" in err
