"""Sweeps: the width law shows, the store gets every point once, a killed sweep resumes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from scalekit.curves import CurveStore
from scalekit.executors import make_executor, usable_cpus
from scalekit.train._config import TrainConfig
from scalekit.train._sweep import StoreLog, SweepSpec, run_sweep

BASE = TrainConfig(steps=60, evals=4, eval_size=256, device="cpu")


@pytest.mark.slow
def test_teacher_student_loss_falls_with_width():
    spec = SweepSpec(base=TrainConfig(steps=400, evals=2, lr=1e-2, lr_schedule="cosine", device="cpu"),
                     widths=[2, 8, 64])
    frame = run_sweep(spec.configs())
    final = frame[frame["step"] == 400].sort_values("width")
    assert np.all(np.diff(final["loss"].to_numpy()) < 0)
    assert np.all(np.diff(final["params"].to_numpy()) > 0)


def _without_wall_time(frame):
    return frame.drop(columns=["wall_time"]).sort_values(["run", "step"]).reset_index(drop=True)


class Killed(Exception):
    pass


class DiesAfter(StoreLog):
    """A store log that dies (like a killed process) after writing ``limit`` points."""

    def __init__(self, path, limit):
        super().__init__(path)
        self.limit = limit

    def __call__(self, name, attrs, points):
        super().__call__(name, attrs, points)
        self.limit -= len(points)
        if self.limit <= 0:
            raise Killed


def test_a_killed_sweep_resumes_without_duplicate_or_missing_points(tmp_path, monkeypatch):
    from scalekit.train import _sweep as sweep

    configs = SweepSpec(base=BASE, widths=[4, 8], seeds=[0, 1]).configs()
    whole = run_sweep(configs, store=tmp_path / "whole.db")

    store, checkpoints = tmp_path / "killed.db", tmp_path / "ckpt"
    dying = DiesAfter(store, limit=6)
    monkeypatch.setattr(sweep, "StoreLog", lambda path: dying)
    with pytest.raises(Killed):  # the second run dies after its second point, the others at once
        run_sweep(configs, store=store, checkpoint_dir=checkpoints)
    with CurveStore(store) as opened:
        assert len(opened.curves().frame) == 4 + 2 + 1 + 1
    monkeypatch.undo()
    resumed = run_sweep(configs, store=store, checkpoint_dir=checkpoints)
    with CurveStore(store) as opened, CurveStore(tmp_path / "whole.db") as reference:
        stored, expected = opened.curves().frame, reference.curves().frame
    assert len(stored) == len(expected) == 4 * 4
    assert not stored.duplicated(["run", "step"]).any()
    columns = ["run", "step", "loss", "compute", "tokens"]
    assert _without_wall_time(stored)[columns].equals(_without_wall_time(expected)[columns])
    assert _without_wall_time(resumed).equals(_without_wall_time(whole))


def test_a_finished_sweep_run_again_trains_nothing_and_adds_nothing(tmp_path):
    configs = SweepSpec(base=BASE, widths=[4]).configs()
    store, checkpoints = tmp_path / "s.db", tmp_path / "ckpt"
    first = run_sweep(configs, store=store, checkpoint_dir=checkpoints)
    again = run_sweep(configs, store=store, checkpoint_dir=checkpoints)
    assert again["wall_time"].tolist() == first["wall_time"].tolist()  # read back, not retrained
    with CurveStore(store) as opened:
        assert len(opened.curves().frame) == 4


@pytest.mark.parametrize("kind", [pytest.param("local", marks=pytest.mark.slow),
                                  pytest.param("ray", marks=[pytest.mark.slow,
                                                            pytest.mark.xdist_group("ray")])])
def test_executor_gives_the_curves_of_the_calling_process(kind):
    if kind == "ray":
        pytest.importorskip("ray")
    configs = SweepSpec(base=BASE.replace(steps=30), widths=[4, 8]).configs()
    inline = run_sweep(configs)
    executor = make_executor(kind, max_workers=2)
    try:
        elsewhere = run_sweep(configs, executor=executor)
    finally:
        executor.shutdown()
    columns = ["run", "step", "loss", "train_loss", "compute"]
    assert elsewhere[columns].equals(inline[columns])


@pytest.mark.slow
def test_pool_workers_share_the_cpus_between_their_torch_threads():
    executor = make_executor("local", max_workers=2)
    try:  # torch is imported in the worker by the job, after the pool set its threads
        threads = [executor.submit(torch.get_num_threads).result() for _ in range(2)]
    finally:
        executor.shutdown()
    assert threads == [max(1, usable_cpus() // 2)] * 2


@pytest.mark.slow
def test_batched_sweep_stores_the_curves_of_the_sequential_sweep(tmp_path):
    configs = SweepSpec(base=BASE, widths=[4, 8], seeds=[0, 1], lrs=[3e-3, 1e-2]).configs()
    sequential = run_sweep(configs, store=tmp_path / "seq.db")
    batched = run_sweep(configs, store=tmp_path / "bat.db", batched=True)
    assert batched["run"].tolist() == sequential["run"].tolist()
    assert batched["loss"].to_numpy() == pytest.approx(sequential["loss"].to_numpy(), rel=1e-4)
    with CurveStore(tmp_path / "bat.db") as opened:
        stored = opened.curves().frame
    assert len(stored) == len(sequential) and not stored.duplicated(["run", "step"]).any()
