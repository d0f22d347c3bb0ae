"""``scalekit design --submit``: the unattended loop against the same loop run by hand."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from scalekit_cli.app import main

from scalekit.curves import CurveStore
from scalekit.fit import last_points
from scalekit.train._models import MLP, count_parameters

TRAIN = {"evals": 3, "eval_size": 64}


def _params(width: int) -> int:
    return count_parameters(MLP(32, 1, width=width, depth=1))["params"]


@pytest.fixture
def files(tmp_path):
    rows = [{"params": _params(w), "tokens": 64 * s, "width": w, "depth": 1, "steps": s}
            for w in (2, 4, 8) for s in (10, 20, 40)]
    pd.DataFrame(rows).to_csv(tmp_path / "pool.csv", index=False)
    pd.DataFrame([{"params": _params(16), "tokens": 64 * 160}]).to_csv(tmp_path / "target.csv",
                                                                       index=False)
    (tmp_path / "train.json").write_text(json.dumps(TRAIN))
    pool_cost = sum(6.0 * r["params"] * r["tokens"] for r in rows)
    return tmp_path, 0.6 * pool_cost


def _design(tmp_path, budget, store, *extra):
    return ["design", "--law", "chinchilla", "--pool", str(tmp_path / "pool.csv"), "--target",
            str(tmp_path / "target.csv"), "--budget", str(budget), "--store", str(store),
            "--batch", "2", *extra]


def _loop(tmp_path, budget, store, *extra):
    return _design(tmp_path, budget, store, "--submit", "local", "--task", "teacher_student",
                   "--train-config", str(tmp_path / "train.json"), *extra)


def _finals(store) -> dict:
    with CurveStore(store) as opened:
        frame = last_points(opened.curves(metric="loss").frame)
    return dict(zip(frame.run, frame.loss, strict=True))


def _rounds(store) -> list[list[dict]]:
    log = store.with_name(store.name + ".design.jsonl")
    return [r["proposed"] for r in map(json.loads, log.read_text().splitlines())
            if "proposed" in r]


def _hand_run(tmp_path, budget, store) -> list[list[dict]]:
    """The loop of bench/design_loop.py: design with what is left of the budget, ``scalekit
    train`` each proposal into the same store, design again until nothing is proposed."""
    CurveStore(store).close()
    spent, rounds = 0.0, []
    while True:
        plan = tmp_path / f"plan{len(rounds)}.json"
        assert main([*_design(tmp_path, budget - spent, store), "--quiet", "--json",
                     str(plan)]) == 0
        chosen = json.loads(plan.read_text())["chosen"]
        if not chosen:
            return rounds
        rounds.append([c["settings"] for c in chosen])
        spent += sum(c["cost"] for c in chosen)
        for run in rounds[-1]:
            assert main(["train", "teacher_student", "--widths", str(run["width"]),
                         "--depths", str(run["depth"]), "--steps", str(run["steps"]),
                         "--evals", str(TRAIN["evals"]), "--eval-size",
                         str(TRAIN["eval_size"]), "--store", str(store), "--quiet"]) == 0


@pytest.mark.slow
def test_unattended_loop_matches_the_hand_run_loop_and_resumes(files, capsys):
    tmp_path, budget = files
    by_hand = _hand_run(tmp_path, budget, tmp_path / "hand.db")
    assert len(by_hand) >= 2
    unattended = tmp_path / "loop.db"
    assert main(_loop(tmp_path, "60%", unattended)) == 0
    out = capsys.readouterr().out
    assert _rounds(unattended) == by_hand
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("round ")] == [
        f"round {k}" for k in range(len(by_hand) + 1)]
    assert _finals(unattended) == _finals(tmp_path / "hand.db")

    # Killed after round 0 (stopped by --rounds), then after proposing round 1 and before
    # training it (the log holds round 1's proposals): a rerun ends in the same store, and
    # the log lists every run once.
    resumed = tmp_path / "resumed.db"
    assert main(_loop(tmp_path, "60%", resumed, "--rounds", "1", "--quiet")) == 0
    assert _rounds(resumed) == by_hand[:1]
    log = resumed.with_name(resumed.name + ".design.jsonl")
    with log.open("a") as handle:
        handle.write(json.dumps({"round": 1, "proposed": by_hand[1], "runs": [
            {**run, "params": _params(run["width"]), "tokens": 64 * run["steps"]}
            for run in by_hand[1]]}) + "\n")
    assert main(_loop(tmp_path, "60%", resumed, "--quiet")) == 0
    assert _rounds(resumed) == by_hand
    assert _finals(resumed) == _finals(unattended)
    assert len(_finals(resumed)) == sum(map(len, by_hand))

    # A real kill (SIGKILL of the whole process group) once round 1 is proposed.
    killed = tmp_path / "killed.db"
    log = killed.with_name(killed.name + ".design.jsonl")
    command = [sys.executable, "-m", "scalekit_cli.app", *_loop(tmp_path, "60%", killed),
               "--quiet"]
    process = subprocess.Popen(command, start_new_session=True)
    try:
        while process.poll() is None and not (log.is_file() and '"round": 1, "proposed"'
                                               in log.read_text()):
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL  # killed, not finished
    assert main(_loop(tmp_path, "60%", killed, "--quiet")) == 0
    assert _rounds(killed) == by_hand
    assert _finals(killed) == _finals(unattended)


@pytest.mark.parametrize(("extra", "message"), [
    (["--submit", "local", "--task", "teacher_student"], "--submit needs --store"),
    (["--submit", "local", "--store", "{tmp}/new.db"], "--submit needs --task"),
    (["--task", "teacher_student"], "--task goes with --submit"),
    (["--submit", "local", "--task", "teacher_student", "--store", "{tmp}/new.db",
      "--ray-address", "auto"], "--ray-address goes with --submit ray"),
    (["--submit", "local", "--task", "teacher_student", "--store", "{tmp}/new.db",
      "--slurm-gpus", "1"], "--slurm-gpus goes with --submit slurm or submitit-local"),
    (["--submit", "local", "--task", "teacher_student", "--store", "{tmp}/new.db",
      "--train-config", "{tmp}/missing.json"], "`--train-config` is"),
])
def test_bad_loop_options_exit_2_with_one_line(files, capsys, extra, message):
    tmp_path, _ = files
    args = ["design", "--law", "chinchilla", "--pool", str(tmp_path / "pool.csv"), "--target",
            str(tmp_path / "target.csv"), "--budget", "50%",
            *(a.format(tmp=tmp_path) for a in extra)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize(("pool", "config", "message"), [
    (["params", "tokens"], {}, "the pool has no column of a run setting"),
    (["params", "tokens", "width", "depth", "steps"], {"evalz": 3}, "unknown sweep settings"),
])
def test_a_loop_that_cannot_train_exits_2_before_it_logs_a_round(files, capsys, pool, config,
                                                                  message):
    tmp_path, budget = files
    pd.read_csv(tmp_path / "pool.csv")[pool].to_csv(tmp_path / "pool.csv", index=False)
    (tmp_path / "train.json").write_text(json.dumps(config))
    store = tmp_path / "new.db"
    assert main(_loop(tmp_path, budget, store)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not store.exists() and not store.with_name(store.name + ".design.jsonl").exists()


@pytest.mark.parametrize("kind", [
    pytest.param("submitit-local", marks=pytest.mark.slow),
    pytest.param("ray", marks=[pytest.mark.slow, pytest.mark.xdist_group("ray")])])
def test_other_executors_train_the_round_the_design_proposes(files, kind, capsys):
    pytest.importorskip({"submitit-local": "submitit", "ray": "ray"}[kind])
    tmp_path, budget = files
    plan, store = tmp_path / "plan.json", tmp_path / "loop.db"
    CurveStore(tmp_path / "empty.db").close()
    assert main([*_design(tmp_path, budget, tmp_path / "empty.db"), "--quiet", "--json",
                 str(plan)]) == 0
    proposed = [c["settings"] for c in json.loads(plan.read_text())["chosen"]]
    loop = _loop(tmp_path, budget, store, "--rounds", "1", "--quiet")
    loop[loop.index("local")] = kind
    assert main(loop) == 0, capsys.readouterr().err
    assert _rounds(store) == [proposed]
    with CurveStore(store) as opened:
        frame = opened.curves(metric="loss").frame
    trained = sorted(zip(frame.groupby("run").params.first(), frame.groupby("run").size(),
                         strict=True))
    expected = sorted((_params(s["width"]), TRAIN["evals"]) for s in proposed)
    assert trained == expected
