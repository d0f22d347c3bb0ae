"""Sweeps through submitit (issue 42 item 1): its local executor runs each run as a job
of its own process, through the same pickling, submission and result path as Slurm; a
job killed mid-run is resumed from its checkpoint by running the sweep again. And the
Slurm executor's script, read by a fake ``sbatch`` on PATH."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time

import pytest

pytest.importorskip("submitit")

from scalekit.curves import CurveStore  # noqa: E402
from scalekit.executors import SubmititExecutor, make_executor  # noqa: E402
from scalekit.train._config import TrainConfig  # noqa: E402
from scalekit.train._sweep import SweepSpec, run_sweep  # noqa: E402

COLUMNS = ["run", "step", "loss", "compute", "tokens"]


def stored(path):
    with CurveStore(path) as opened:
        frame = opened.curves().frame
    if frame.empty:  # a store the job has only begun to write
        return frame
    return frame[COLUMNS].sort_values(["run", "step"]).reset_index(drop=True)


@pytest.mark.slow  # a fresh interpreter per job (imports torch)
def test_a_submitit_job_killed_mid_run_resumes_from_its_checkpoint(tmp_path):
    # evaluations log-spaced: the second at step 2, the rest of the 6000 steps (seconds of
    # CPU time) still to train when the job is killed
    configs = SweepSpec(base=TrainConfig(steps=6000, evals=10, eval_size=64, device="cpu"),
                        widths=[4]).configs()
    run_sweep(configs, store=tmp_path / "whole.db")
    store, checkpoints = tmp_path / "jobs.db", tmp_path / "ckpt"
    executor = make_executor("submitit-local", folder=tmp_path / "jobs",
                             slurm={"time_min": 10})
    failed = []

    def sweep():
        try:
            run_sweep(configs, store=store, checkpoint_dir=checkpoints, executor=executor)
        except Exception as exc:  # noqa: BLE001 - the killed job's error, checked below
            failed.append(exc)

    thread = threading.Thread(target=sweep)
    thread.start()
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:  # kill the job once it has logged two evaluations
            if store.exists() and len(stored(store)) >= 2:
                break
            time.sleep(0.05)
    finally:
        executor.terminate()
    thread.join(timeout=120)
    assert failed, "the job finished before it was killed"
    kept = len(stored(store))
    assert 2 <= kept < 10
    run_sweep(configs, store=store, checkpoint_dir=checkpoints,
              executor=make_executor("submitit-local", folder=tmp_path / "jobs"))
    resumed, whole = stored(store), stored(tmp_path / "whole.db")
    assert not resumed.duplicated(["run", "step"]).any()
    assert resumed.equals(whole)


@pytest.mark.slow  # a fresh interpreter per job (imports torch)
def test_submitit_local_jobs_store_the_curves_of_the_calling_process(tmp_path):
    configs = SweepSpec(base=TrainConfig(steps=60, evals=4, eval_size=64, device="cpu"),
                        widths=[4, 8]).configs()
    run_sweep(configs, store=tmp_path / "inline.db")
    run_sweep(configs, store=tmp_path / "jobs.db",
              executor=make_executor("submitit-local", folder=tmp_path / "jobs"))
    assert stored(tmp_path / "jobs.db").equals(stored(tmp_path / "inline.db"))


def test_the_slurm_script_carries_the_partition_time_and_gpus(tmp_path, monkeypatch):
    """A fake ``sbatch`` on PATH keeps the script submitit writes and answers as Slurm does;
    without Slurm the executor says so in one line."""
    from scalekit.errors import InputError

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InputError, match="runs where Slurm does"):
        SubmititExecutor(folder=tmp_path / "jobs")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sbatch"
    fake.write_text(f"#!{sys.executable}\nimport shutil, sys\n"
                    f"shutil.copy(sys.argv[-1], {str(tmp_path / 'script.sh')!r})\n"
                    "print('Submitted batch job 4242')\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 1\n")   # submitit looks for it; never run
    (bin_dir / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.defpath}")
    executor = SubmititExecutor(folder=tmp_path / "jobs", partition="gpu-long", time_min=90,
                                gpus=2, cpus_per_job=8)
    future = executor.submit(sum, [1, 2])
    assert future.job.job_id == "4242"
    script = (tmp_path / "script.sh").read_text()
    for line in ("#SBATCH --partition=gpu-long", "#SBATCH --time=90", "#SBATCH --gpus-per-node=2",
                 "#SBATCH --cpus-per-task=8"):
        assert line in script.splitlines(), script
    assert "submitit.core._submit" in script
    assert str(tmp_path / "jobs") in script


@pytest.mark.parametrize("text, minutes", [
    ("90", 90), ("10:30", 11), ("1:30:00", 90), ("2-0", 2880), ("1-2:30", 1590),
    ("1-02:30:01", 1591)])
def test_slurm_time_reads_slurms_forms(text, minutes):
    """Slurm's ``--time`` forms (sbatch(1)): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S; a
    part-minute rounds up."""
    from scalekit_cli.common import slurm_time

    assert slurm_time(text) == minutes


@pytest.mark.parametrize("args, message", [
    (["--slurm-partition", "gpu"], "--slurm-partition applies to --executor slurm"),
    (["--executor", "slurm", "--slurm-time", "0:0"], "The value of `--slurm-time` is '0:0'"),
    (["--executor", "slurm", "--slurm-time", "-5"], "The value of `--slurm-time` is '-5'"),
    (["--executor", "slurm", "--slurm-gpus", "-1"], "The value of `--slurm-gpus` is -1"),
])
def test_bad_slurm_options_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, args,
                                                                   message):
    from scalekit_cli.app import main

    store = tmp_path / "s.db"
    assert main(["train", "teacher_student", "--widths", "4", "--steps", "10", "--store",
                 str(store), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not store.exists() and not (tmp_path / "s.db.jobs").exists()
