"""The progress seam: library loops report through scalekit.progress; the CLI draws a rich bar
on a terminal's standard error only (checked under a real pseudo-terminal), never with --quiet."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from scalekit.fit import fit_law
from scalekit.laws import get_law
from scalekit.progress import reporting, track


def test_track_reports_every_item_and_nothing_without_a_listener():
    seen = []
    with reporting(lambda *event: seen.append(event)):
        assert list(track(["a", "b", "c"], "work")) == ["a", "b", "c"]
    assert seen == [("work", 0, 3), ("work", 1, 3), ("work", 2, 3), ("work", 3, 3)]
    assert list(track(iter([1, 2]), "unseen")) == [1, 2]
    assert seen[-1] == ("work", 3, 3)


def test_a_bootstrap_reports_its_progress_to_the_end():
    law = get_law("saturating_power")
    rng = np.random.default_rng(0)
    X = {"x": np.geomspace(1, 1e4, 30)}
    y = law.predict(X, np.array([0.5, 3.0, 0.5])) * np.exp(rng.normal(0, 0.02, 30))
    seen = []
    with reporting(lambda *event: seen.append(event)):
        fit_law(law, X, y, bootstrap=8, n_jobs=1)
    steps = [done for task, done, total in seen if task == "bootstrap"]
    totals = {total for task, done, total in seen if task == "bootstrap"}
    assert steps[0] == 0 and steps == sorted(steps) and len(totals) == 1
    assert steps[-1] == totals.pop()


def _fit_on_a_terminal(tmp_path, *extra: str) -> str:
    n, d = np.meshgrid(np.geomspace(1e7, 1e10, 5), np.geomspace(1e9, 1e11, 5))
    loss = 1.7 + 400 / n.ravel() ** 0.34 + 2000 / d.ravel() ** 0.37
    path = tmp_path / "runs.csv"
    pd.DataFrame({"run": [f"m{i}" for i in range(n.size)], "params": n.ravel(),
                  "tokens": d.ravel(), "loss": loss}).to_csv(path, index=False)
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm"}
    process = subprocess.run(
        [sys.executable, "-m", "scalekit_cli.app", "fit", str(path), "--law", "chinchilla",
         "--bootstrap", "40", *extra], stdout=subprocess.DEVNULL, stderr=slave, env=env,
        timeout=300)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.returncode == 0
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_the_cli_draws_a_bar_on_a_terminal_and_none_with_quiet(tmp_path):
    drawn = _fit_on_a_terminal(tmp_path)
    assert "bootstrap" in drawn and "/" in drawn  # "bootstrap ━━━  3/4"
    assert "bootstrap" not in _fit_on_a_terminal(tmp_path, "--quiet")


def test_no_bar_when_standard_error_is_not_a_terminal(tmp_path, capsys):
    from scalekit_cli.app import main

    n = np.geomspace(1, 1e4, 20)
    pd.DataFrame({"run": [f"r{i}" for i in range(20)], "x": n,
                  "loss": 0.5 + 3 * n ** -0.5}).to_csv(tmp_path / "c.csv", index=False)
    assert main(["fit", str(tmp_path / "c.csv"), "--law", "saturating_power", "--x", "x",
                 "--bootstrap", "10"]) == 0
    assert "bootstrap" not in capsys.readouterr().err


def test_an_allocation_run_reports_each_rung(tmp_path):
    from scalekit.allocate._policies import LossPolicy
    from scalekit.allocate._runner import run_allocation
    from scalekit.allocate._toy import SyntheticTrainer

    seen = []
    trainer = SyntheticTrainer(seed=0, sizes=9, variants=1, max_compute=1e18, points=9)
    with reporting(lambda *event: seen.append(event)):
        result = run_allocation(tmp_path / "s.db", "toy", trainer, LossPolicy(), budget=3e18)
    finals = {task: done for task, done, total in seen if done == total}
    trained = {}
    for advance in result.allocation.advances:
        trained[f"rung {advance.rung}"] = trained.get(f"rung {advance.rung}", 0) + 1
    assert finals == trained and len(trained) > 1


@pytest.mark.slow
def test_the_default_forecast_reports_each_candidate_fit_and_forecasts_the_same():
    from scalekit.surrogates._forecast import forecast_frame

    steps = np.geomspace(10, 1000, 12)
    frame = pd.DataFrame([dict(run=f"r{i}", step=s, loss=2 + (1 + i) * s ** -0.4)
                          for i in range(3) for s in steps])
    seen = []
    with reporting(lambda *event: seen.append(event)):
        listened = forecast_frame(frame, to=5000)
    quiet = forecast_frame(frame, to=5000)
    done = [d for task, d, total in seen if task == "forecast"]
    total = {t for task, d, t in seen if task == "forecast"}
    assert len(total) == 1 and done == list(range(total.pop() + 1)) and len(done) > 2
    pd.testing.assert_frame_equal(listened.table, quiet.table)
