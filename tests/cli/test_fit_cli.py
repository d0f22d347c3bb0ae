"""`scalekit fit` end to end on files with a known truth."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scalekit_cli.app import main

TRUTH = {"E": 1.7, "A": 400.0, "B": 2000.0, "alpha": 0.34, "beta": 0.37}


def chinchilla(n, d, t=TRUTH):
    return t["E"] + t["A"] / n ** t["alpha"] + t["B"] / d ** t["beta"]


def strict_json(path):
    def reject(token):
        raise ValueError(f"non-strict JSON token {token}")
    return json.loads(path.read_text(), parse_constant=reject)


@pytest.fixture
def per_run_csv(tmp_path):
    rng = np.random.default_rng(7)
    n, d = np.meshgrid(np.geomspace(1e7, 1e10, 8), np.geomspace(1e9, 1e11, 8))
    n, d = n.ravel(), d.ravel()
    loss = chinchilla(n, d) * np.exp(rng.normal(0, 0.003, n.size))
    path = tmp_path / "runs.csv"
    pd.DataFrame({"model": [f"m{i}" for i in range(n.size)], "N": n, "D": d,
                  "loss": loss}).to_csv(path, index=False)
    return path


def test_fit_recovers_chinchilla_and_plans(per_run_csv, tmp_path, capsys):
    out = tmp_path / "fit.json"
    compute = 1e22
    rc = main(["fit", str(per_run_csv), "--bootstrap", "20", "--n-jobs", "1",
               "--target-compute", str(compute), "--json", str(out)])
    assert rc == 0
    report = strict_json(out)
    assert report["format"].startswith("scalekit.fit/")
    assert report["law"]["name"] == "chinchilla"
    values = {k: v["value"] for k, v in report["params"].items()}
    assert values["alpha"] == pytest.approx(TRUTH["alpha"], abs=0.03)
    assert values["beta"] == pytest.approx(TRUTH["beta"], abs=0.03)
    assert values["E"] == pytest.approx(TRUTH["E"], abs=0.05)
    a, al, be = TRUTH["A"], TRUTH["alpha"], TRUTH["beta"]
    g = (al * a / (be * TRUTH["B"])) ** (1 / (al + be))
    n_star = g * (compute / 6) ** (be / (al + be))
    assert report["plan"]["params"] == pytest.approx(n_star, rel=0.3)
    lo, hi = report["plan"]["loss_pi"]
    assert lo < chinchilla(n_star, compute / 6 / n_star) < hi
    printed = capsys.readouterr().out
    for section in ("L(N, D) = ", "Fit statistics", "Parameters", "Derived quantities",
                    "Plan at compute"):
        assert section in printed
    assert "95% CI" in printed


def test_fit_picks_frontier_for_compute_only(tmp_path):
    c = np.geomspace(1e17, 1e21, 12)
    path = tmp_path / "frontier.csv"
    pd.DataFrame({"flops": c, "loss": 2.0 + 30.0 * c ** -0.08}).to_csv(path, index=False)
    out = tmp_path / "f.json"
    assert main(["fit", str(path), "--bootstrap", "0", "--quiet", "--json", str(out)]) == 0
    report = strict_json(out)
    assert report["law"]["name"] == "frontier"
    values = {k: v["value"] for k, v in report["params"].items()}
    assert values["E"] == pytest.approx(2.0, rel=1e-3)


def test_fit_per_group_recovers_each_truth(tmp_path):
    x = np.geomspace(1e3, 1e7, 15)
    frame = pd.concat([pd.DataFrame({"size": x, "loss": 1.0 + 5.0 * x ** -0.3, "task": "a"}),
                       pd.DataFrame({"size": x, "loss": 2.0 + 9.0 * x ** -0.5, "task": "b"})])
    path = tmp_path / "groups.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "g.json"
    rc = main(["fit", str(path), "--x", "size", "--group", "task", "--bootstrap", "0",
               "--quiet", "--json", str(out)])
    assert rc == 0
    groups = {g["group"]["value"]: g for g in strict_json(out)["groups"]}
    assert groups["a"]["params"]["E"]["value"] == pytest.approx(1.0, rel=1e-3)
    assert groups["b"]["params"]["E"]["value"] == pytest.approx(2.0, rel=1e-3)


def test_quiet_prints_nothing_and_plot_is_a_png(per_run_csv, tmp_path, capsys):
    plot = tmp_path / "fit.png"
    rc = main(["fit", str(per_run_csv), "--bootstrap", "0", "--quiet", "--plot", str(plot)])
    assert rc == 0
    assert capsys.readouterr().out == ""
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args,needle", [
    (["fit", "no/such/file.csv"], "no such file"),
    (["fit", "{csv}", "--drop-top", "-1"], "`--drop-top`"),
    (["fit", "{csv}", "--law", "no_such_law"], "`--law`"),  # the library says `law`
    (["fit", "{csv}", "--y", "nope"], "no 'nope' column"),
    (["fit", "{csv}", "--target-compute", "-5", "--bootstrap", "0"], "`--target-compute`"),
    (["fit"], "either a curves FILE or --store"),
])
def test_bad_input_exits_2_with_one_line(per_run_csv, capsys, args, needle):
    rc = main([a.replace("{csv}", str(per_run_csv)) for a in args])
    err = capsys.readouterr().err
    assert rc == 2
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_cell_names_file_line_and_column(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("N,D,loss\n1e8,1e9,3.1\n2e8,oops,2.9\n")
    assert main(["fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv:3" in err and "'D'" in err


def test_all_points_of_runs_are_resampled_by_run_and_said(tmp_path):
    rows = [{"run": f"r{k}", "step": s, "x": size * 2.0 ** s,
             "loss": 1.0 + 30.0 * (size * 2.0 ** s) ** -0.2}
            for k, size in enumerate(np.geomspace(1e3, 1e6, 8)) for s in range(1, 6)]
    path = tmp_path / "curves.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "fit.json"
    assert main(["fit", str(path), "--x", "x", "--all-points", "--bootstrap", "10", "--n-jobs",
                 "1", "--quiet", "--json", str(out)]) == 0
    report = strict_json(out)
    assert report["stats"]["resample"] == "runs" and report["stats"]["n_runs"] == 8
    assert report["settings"]["resample"] is None and isinstance(report["diagnostics"], list)
    assert main(["fit", str(path), "--x", "x", "--all-points", "--bootstrap", "10", "--n-jobs",
                 "1", "--resample", "points", "--quiet", "--json", str(out)]) == 0
    assert strict_json(out)["stats"]["resample"] == "points"


def test_more_jobs_than_resamples_run_as_many_workers_as_resamples_and_say_so(per_run_csv,
                                                                                tmp_path):
    import os

    out = tmp_path / "fit.json"
    assert main(["fit", str(per_run_csv), "--bootstrap", "3", "--n-jobs", "100000", "--quiet",
                 "--json", str(out)]) == 0
    cpus = len(os.sched_getaffinity(0))
    workers = min(3, cpus)
    reason = "3 jobs" if cpus >= 3 else f"{cpus} CPU{'s' * (cpus != 1)}"
    expected = (f"bootstrap: {workers} worker{'s' * (workers != 1)} instead of 100000: "
                f"{reason} (--n-jobs 100000)")
    assert expected in json.loads(out.read_text())["notes"]


def test_fit_takes_the_soft_l1_loss(per_run_csv, tmp_path):
    """--loss soft_l1 with --delta: the truth recovered, and the reported standard errors
    are those of the same objective fitted through the library."""
    from scalekit.fit import fit_law
    from scalekit.laws import get_law
    out = tmp_path / "fit.json"
    rc = main(["fit", str(per_run_csv), "--loss", "soft_l1", "--delta", "0.01",
               "--json", str(out)])
    assert rc == 0
    report = strict_json(out)
    values = {k: v["value"] for k, v in report["params"].items()}
    assert values["alpha"] == pytest.approx(TRUTH["alpha"], abs=0.03)
    frame = pd.read_csv(per_run_csv)
    direct = fit_law(get_law("chinchilla"), {"params": frame["N"].to_numpy(),
                                             "tokens": frame["D"].to_numpy()},
                     frame["loss"].to_numpy(), loss="soft_l1", delta=0.01)
    for name, se in direct.stderr.items():
        assert report["params"][name]["stderr"] == pytest.approx(se, rel=1e-6)
