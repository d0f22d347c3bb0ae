"""``scalekit allocate``: replay, plan and run from the command line; bad input exits with 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from scalekit.allocate._synthetic import early_leader_frame
from scalekit_cli.app import main


@pytest.fixture()
def curves(tmp_path):
    path = tmp_path / "curves.csv"
    early_leader_frame(seed=0, sizes=4, variants=2, points=30).to_csv(path, index=False)
    return path


def test_replay_writes_a_strict_json_report_and_a_plot(tmp_path, curves, capsys):
    out, png = tmp_path / "replay.json", tmp_path / "replay.png"
    code = main(["allocate", "--budget", "5%", "--budget", "20%", "--curves", str(curves),
                 "--policy", "loss",
                 "--replay", "--seeds", "1", "--json", str(out), "--plot", str(png)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())  # strict JSON: NaN would fail here
    assert report["format"] == "scalekit.allocate/1"
    assert "compute_convention" in report
    rows = {(r["budget"], r["policy"]): r for r in report["averages"]}
    assert rows[(0.05, "uniform")]["compute_fraction"] == pytest.approx(0.05)
    assert rows[(0.2, "exhaustive")]["compute_fraction"] == pytest.approx(1.0)
    for (budget, policy), row in rows.items():
        if policy != "exhaustive":
            assert row["compute_fraction"] <= budget * (1 + 1e-9)
    assert png.stat().st_size > 10_000
    assert "rung" in capsys.readouterr().out


def test_plan_lists_next_actions(tmp_path, curves, capsys):
    frame = early_leader_frame(seed=0, sizes=4, variants=2, points=30)
    partial = frame[frame.compute <= 0.2 * frame.compute.max()]
    path, out = tmp_path / "partial.csv", tmp_path / "plan.json"
    partial.to_csv(path, index=False)
    code = main(["allocate", "--budget", str(0.15 * 8 * frame.compute.max()), "--curves",
                 str(path), "--plan", "--policy", "loss", "--max-resource",
                 str(frame.compute.max()), "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    plan = json.loads(out.read_text())
    assert plan["rung"] is not None and plan["actions"]
    assert 0 < plan["projected_saving"] < 1
    kinds = {a["action"] for a in plan["actions"]}
    assert kinds <= {"continue", "stop"}
    for action in plan["actions"]:
        if action["action"] == "continue":
            assert action["to"] > action["from"]


def test_plan_and_replay_state_commit_s_forecast_with_its_intervals(tmp_path, curves, capsys):
    plan_out, replay_out = tmp_path / "plan.json", tmp_path / "replay.json"
    assert main(["allocate", "plan", "--budget", "1.6e20", "--curves", str(curves),
                 "--json", str(plan_out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    report = json.loads(plan_out.read_text())
    commit = next(d for d in report["decisions"] if d["action"] == "commit")
    said = commit["forecast"]
    # the probes of this sweep are part-way: a bound from above (see test_commit)
    assert said["80%"][0] == 0 and said["loss"] < said["80%"][1] < said["95%"][1]
    assert (f"predicted loss {said['loss']:.4g}, at most {said['80%'][1]:.4g} (80%), "
            f"at most {said['95%'][1]:.4g} (95%)") in printed
    assert main(["allocate", "replay", "--budget", "80%", "--curves", str(curves), "--policy",
                 "commit", "--seeds", "1", "--json", str(replay_out)]) == 0
    assert "forecast in 80%" in " ".join(capsys.readouterr().out.split())
    rows = {r["policy"]: r for r in json.loads(replay_out.read_text())["rows"]}
    assert rows["commit"]["forecasts"] >= 1 and 0 <= rows["commit"]["forecast_covered_80"] <= 1
    assert rows["uniform"]["forecasts"] == 0 and rows["uniform"]["forecast_covered_80"] is None


def test_plan_on_complete_curves_says_it_is_finished(tmp_path, curves, capsys):
    out = tmp_path / "plan.json"
    code = main(["allocate", "--budget", "1e30", "--curves", str(curves), "--plan",
                 "--policy", "loss", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["finished"] is True
    printed = " ".join(capsys.readouterr().out.split())
    assert "finished" in printed and "rung None" not in printed


def test_plan_prints_run_names_as_text_not_markup(tmp_path, capsys):
    frame = early_leader_frame(seed=0, sizes=4, variants=2, points=30)
    frame["run"] = frame["run"] + "[lr=0.001]"     # rich would read [..] as a style tag
    partial = frame[frame.compute <= 0.2 * frame.compute.max()]
    path = tmp_path / "partial.csv"
    partial.to_csv(path, index=False)
    code = main(["allocate", "--budget", str(0.15 * 8 * frame.compute.max()), "--curves",
                 str(path), "--plan", "--policy", "loss", "--max-resource",
                 str(frame.compute.max())])
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert sum(f"{run}" in out for run in frame["run"].unique()) >= 1
    assert out.count("[lr=0.001]") >= 1


def test_run_then_rerun_reads_back_everything(tmp_path, capsys):
    store = tmp_path / "store.db"
    args = ["allocate", "--budget", "3e18", "--run", "synthetic", "--store", str(store),
            "--policy", "loss"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    second = capsys.readouterr().out
    assert "0 read back" in first and "0 advances trained now" in second


def test_run_commits_by_default_and_explains_why_then_resumes(tmp_path, capsys):
    store, out = tmp_path / "store.db", tmp_path / "run.json"
    args = ["allocate", "run", "synthetic", "--budget", "3e18", "--store", str(store)]
    assert main([*args, "--json", str(out)]) == 0
    first = " ".join(capsys.readouterr().out.split())
    report = json.loads(out.read_text())["result"] if "result" in json.loads(
        out.read_text()) else json.loads(out.read_text())
    actions = [d["action"] for d in report["decisions"]]
    assert actions[0] == "probe" and "commit" in actions and report["rungs"] == []
    assert "phase 0: probe" in first and "commit" in first
    assert 0 < report["spent_flops"] <= 3e18 * (1 + 1e-12)
    assert main(args) == 0
    assert "0 advances trained now" in capsys.readouterr().out


def test_run_with_a_budget_too_small_for_any_point_reports_no_best_run(tmp_path, capsys):
    # 1e16 FLOPs is 0.04% of the synthetic sweep (27 runs of 1e18): no run reaches its
    # first logged point (every 1e18 / 40 FLOPs), so there is no best run to report.
    store, out = tmp_path / "store.db", tmp_path / "run.json"
    code = main(["allocate", "--budget", "1e16", "--run", "synthetic", "--store", str(store),
                 "--policy", "loss", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["best_run"] is None and report["best_loss"] is None
    assert 0 < report["spent_flops"] <= 1e16
    assert "no run has logged a point" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("args, message", [
    (["replay", "--eta", "1"], "The value of `--eta` is 1, but must be an integer > 1."),
    (["replay", "--budget", "lots"], "`--budget`"),
    (["replay", "--budget", "-5"], "`--budget`"),
    (["replay", "--policy", "greedy"], "The value of `--policy` is 'greedy'"),
    (["plan", "--policy", "uniform"], "The value of `--policy` is 'uniform'"),
    (["replay", "--resource", "epochs"], "The value of `--resource` is 'epochs'"),
    (["replay", "--duplicates", "mean"], "The value of `--duplicates` is 'mean'"),
    (["replay", "--min-resource", "0"], "The value of `--min-resource` is 0.0, but must be > 0."),
    (["plan", "--max-resource", "-5"], "The value of `--max-resource` is -5.0, but must be > 0."),
    (["replay", "--seed", "-1"], "The value of `--seed` is -1, but must be >= 0."),
    (["run", "synthetic", "--seed", "-1"], "The value of `--seed` is -1, but must be >= 0."),
    (["run", "synthetic", "--workers", "0"], "The value of `--workers` is 0, but must be >= 1."),
    (["run", "nope"], "The value of `task` is 'nope'"),
    (["run", "synthetic", "--executor", "dask"], "The value of `--executor` is 'dask'"),
    (["replay", "--frontier-min-compute", "0"], "The value of `--frontier-min-compute` is 0.0"),
    (["replay", "--budget", "1e400"], "The value of `--budget` is '1e400', but must be a finite"),
    (["plan", "--budget", "5%"], "allocate replay"),
    (["--plan", "--run", "synthetic"], "one of --replay, --plan and --run"),  # the old flags
    (["--replay", "--eta", "1"], "The value of `--eta` is 1"),
])
def test_bad_settings_exit_with_2_and_one_line(tmp_path, curves, capsys, args, message):
    base = ["allocate", *args[:2 if args[0] == "run" else 1]]
    base += ["--store", str(tmp_path / "s.db")] if args[0] == "run" else ["--curves", str(curves)]
    if "--budget" not in args:
        base += ["--budget", "1e20"]
    assert main([*base, *args[2 if args[0] == "run" else 1:]]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("note:")]
    assert len(errors) == 1 and message in errors[0], err


def test_the_old_mode_flags_are_aliases_of_the_subcommands_with_a_note(tmp_path, curves, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    assert main(["allocate", "--budget", "10%", "--curves", str(curves), "--seeds", "1",
                 "--policy", "loss", "--replay", "--json", str(old)]) == 0
    note = capsys.readouterr().err
    assert "`scalekit allocate --replay` is now `scalekit allocate replay`" in note
    assert main(["allocate", "replay", "--budget", "10%", "--curves", str(curves), "--seeds",
                 "1", "--policy", "loss", "--json", str(new)]) == 0
    assert capsys.readouterr().err == ""
    assert json.loads(old.read_text())["averages"] == json.loads(new.read_text())["averages"]


def test_bad_curves_exit_with_2(tmp_path, capsys):
    frame = early_leader_frame(seed=0, sizes=2, variants=1, points=10)
    frame.loc[4, "loss"] = -1.0
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    assert main(["allocate", "--budget", "10%", "--curves", str(path), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "loss" in err


def test_missing_file_exits_with_2(tmp_path, capsys):
    assert main(["allocate", "--budget", "1e19", "--curves", str(tmp_path / "none.csv")]) == 2
    assert "none.csv" in capsys.readouterr().err


@pytest.mark.parametrize("rule", ["first", "last"])
def test_duplicates_picks_which_repeated_step_is_kept(tmp_path, capsys, rule):
    frame = early_leader_frame(seed=0, sizes=3, variants=1, points=12)
    last = frame.groupby("run").tail(1)
    lower = last.assign(loss=last.loss - 0.5)   # the same final steps logged again, lower
    path, out = tmp_path / "twice.csv", tmp_path / "replay.json"
    pd.concat([frame, lower]).to_csv(path, index=False)
    assert main(["allocate", "--budget", "50%", "--curves", str(path), "--seeds", "1",
                 "--policy", "uniform"]) == 2
    assert "step" in capsys.readouterr().err
    code = main(["allocate", "--budget", "50%", "--curves", str(path), "--seeds", "1",
                 "--policy", "uniform", "--duplicates", rule, "--json", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    rows = {r["policy"]: r for r in json.loads(out.read_text())["averages"]}
    expected = (last if rule == "first" else lower).loss.min()
    assert rows["exhaustive"]["best_loss"] == pytest.approx(expected)
