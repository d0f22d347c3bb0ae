"""``run`` mode under faults: a ``kill -9`` in the middle of a rung, orphaned workers, torch
in the parent of a process pool.

The allocation runs in a child process that is killed for real; the trainer logs
every call to a file (:mod:`fault_trainers`), so the tests count what was
trained against an uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from allocate.fault_trainers import CountingTrainer, calls, pids
from scalekit.allocate._policies import LossPolicy
from scalekit.allocate._runner import run_allocation
from scalekit.curves import CurveStore

HERE = Path(__file__).resolve().parent
TRAINER = dict(seed=2, sizes=9, variants=1, max_compute=1e19, points=30)
BUDGET = 0.12 * 9 * 1e19  # rungs of 9, 3 and 1 runs: 13 advances
SCRIPT = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(HERE.parent)!r})
    from allocate.fault_trainers import CountingTrainer
    from scalekit.allocate._policies import LossPolicy
    from scalekit.allocate._runner import run_allocation

    if __name__ == "__main__":
        path, log, delay, workers = sys.argv[1:5]
        run_allocation(path, "toy", CountingTrainer(**{TRAINER!r}, log=log, delay=float(delay)),
                       LossPolicy(), budget={BUDGET!r}, seed=0, workers=int(workers))
""")


def _points(path) -> pd.DataFrame:
    with CurveStore(path) as store:
        frame = store.curves().frame
    return frame[["run", "step", "compute", "loss"]].sort_values(["run", "step"]).reset_index(
        drop=True)


def _done(path) -> set[tuple[str, float, float]]:
    """The advances the ledger holds as done (the points of each are in the store)."""
    if not path.exists():
        return set()
    with sqlite3.connect(path, timeout=30) as db:
        try:
            rows = db.execute("SELECT run, start, stop FROM allocate_ledger "
                              "WHERE status = 'done'").fetchall()
        except sqlite3.OperationalError:  # tables not created yet
            return set()
    return {(r, float(a), float(b)) for r, a, b in rows}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie has stopped; only its exit status is left


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    where = tmp_path_factory.mktemp("whole")
    log = str(where / "calls.log")
    run_allocation(where / "store.db", "toy", CountingTrainer(**TRAINER, log=log), LossPolicy(),
                   budget=BUDGET, seed=0)
    return _points(where / "store.db"), calls(log)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_kill_in_the_middle_of_a_rung_repeats_no_finished_advance(tmp_path, uninterrupted,
                                                                    workers):
    whole_points, whole_calls = uninterrupted
    assert len(whole_calls) == 13 and len(set(whole_calls)) == 13
    script = tmp_path / "run_toy.py"
    script.write_text(SCRIPT)
    path, first_log = tmp_path / "store.db", str(tmp_path / "first.log")
    process = subprocess.Popen([sys.executable, str(script), str(path), first_log, "0.3",
                                str(workers)])
    deadline = time.monotonic() + 120
    while len(_done(path)) < 4 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
    assert process.poll() is None, "the allocation ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = time.monotonic()
    kept = _done(path)
    assert 4 <= len(kept) < 9, "the kill must fall inside the first rung (9 advances)"
    if workers > 1:  # the pool's workers die with their parent and write nothing more
        workers_seen = pids(first_log) - {process.pid}
        assert len(workers_seen) == 2
        while any(map(_alive, workers_seen)) and time.monotonic() < killed_at + 5:
            time.sleep(0.05)
        assert not any(map(_alive, workers_seen))
        size = os.path.getsize(first_log)
        time.sleep(0.5)
        assert os.path.getsize(first_log) == size
        assert _done(path) == kept
    second_log = str(tmp_path / "second.log")
    assert subprocess.run([sys.executable, str(script), str(path), second_log, "0",
                           str(workers)], timeout=120).returncode == 0
    again = calls(second_log)
    assert not set(again) & kept  # no finished advance is trained twice
    assert len(again) == 13 - len(kept)
    assert set(again) | kept == set(whole_calls)
    pd.testing.assert_frame_equal(_points(path), whole_points)


TORCH_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from scalekit.allocate._policies import LossPolicy
    from scalekit.allocate._runner import run_allocation
    from scalekit.train._allocation_trainer import TorchTaskTrainer
    from scalekit.train import TrainConfig

    if __name__ == "__main__":
        torch.set_num_threads(2)
        torch.randn(256, 256) @ torch.randn(256, 256)  # the parent's OpenMP threads are running
        configs = [TrainConfig(task="teacher_student", width=w, depth=1, steps=24, batch_size=16,
                               evals=4, eval_size=64, device="cpu", seed=0) for w in (4, 8)]
        trainer = TorchTaskTrainer(configs, sys.argv[2])
        budget = 0.8 * sum(trainer.flops_per_step(c) * c.steps for c in configs)  # torch again
        result = run_allocation(sys.argv[1], "ts", trainer, LossPolicy(), budget=budget,
                                workers=2)
        print(result.workers, result.trained, len(result.allocation.advances))
""")


@pytest.mark.slow
def test_a_torch_task_runs_to_completion_on_two_workers(tmp_path):
    pytest.importorskip("torch")
    from scalekit.train import TrainConfig, train

    script = tmp_path / "torch_allocate.py"
    script.write_text(TORCH_SCRIPT)
    store = tmp_path / "store.db"
    # a forked pool deadlocked here (its workers blocked in OpenMP); spawned workers finish
    done = subprocess.run([sys.executable, str(script), str(store), str(tmp_path / "ck")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    workers, trained, advances = map(int, done.stdout.split())
    assert workers == 2 and trained == advances >= 2
    stored = _points(store)
    for width in (4, 8):
        config = TrainConfig(task="teacher_student", width=width, depth=1, steps=24,
                             batch_size=16, evals=4, eval_size=64, device="cpu", seed=0)
        mine = stored[stored.run == config.name]
        reference = [p for p in train(config).points if p["step"] <= mine.step.max()]
        assert [p["step"] for p in reference] == mine.step.tolist()
        assert np.allclose([p["loss"] for p in reference], mine.loss, rtol=1e-5)
