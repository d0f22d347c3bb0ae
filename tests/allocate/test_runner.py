"""``run`` mode: points go to the store, the budget holds, a killed run resumes exactly."""

from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from scalekit.allocate._policies import LossPolicy, get_policy
from scalekit.allocate._runner import run_allocation
from scalekit.allocate._state import AllocationState
from scalekit.allocate._toy import SyntheticTrainer
from scalekit.curves import CurveStore
from scalekit.errors import InputError

TRAINER = dict(seed=2, sizes=9, variants=1, max_compute=1e19, points=30)
BUDGET = 0.12 * 9 * 1e19  # 12% of the exhaustive sweep (9 runs of 1e19 FLOPs each)


class Killed(RuntimeError):
    """Stands for the process dying in the middle of the allocation."""


@dataclasses.dataclass
class DyingTrainer(SyntheticTrainer):
    """The toy trainer, killed after ``lives`` advances (count shared by pickled copies)."""

    lives: int = 10**9

    def advance(self, run, start, stop):
        if self.lives <= 0:
            raise Killed(f"killed before advancing {run}")
        self.lives -= 1
        return super().advance(run, start, stop)


def _points(path) -> pd.DataFrame:
    with CurveStore(path) as store:
        frame = store.curves().frame
    columns = ["run", "step", "tokens", "compute", "loss"]
    return frame[columns].sort_values(["run", "step"]).reset_index(drop=True)


def _decisions(path) -> dict:
    """The allocator's ledger (every advance) and promotions, in a stable order."""
    import sqlite3

    with sqlite3.connect(path) as db:
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
                for table in ("allocate_ledger", "allocate_promotions")}


def _run(path, trainer, executor=None, policy=None):
    return run_allocation(path, "toy", trainer, policy or get_policy("forecast"),
                          budget=BUDGET, seed=0, executor=executor)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    path = tmp_path_factory.mktemp("whole") / "store.db"
    result = _run(path, SyntheticTrainer(**TRAINER))
    return path, result


def test_points_reach_the_store_within_budget(uninterrupted):
    path, result = uninterrupted
    points = _points(path)
    trainer = SyntheticTrainer(**TRAINER)
    assert result.allocation.spent <= BUDGET
    with AllocationState(path) as state:
        assert state.spent("toy") == pytest.approx(result.allocation.spent)
    # FLOPs implied by the steps each run reached never exceed the budget
    per_step = 6 * trainer.candidates().set_index("run")["params"] * trainer.tokens_per_step
    implied = sum(per_step[r] * group.step.max() for r, group in points.groupby("run"))
    assert implied <= BUDGET * (1 + 1e-12)
    # every stored point is one the trainer logs for that run, and no step is stored twice
    for run, group in points.groupby("run"):
        full = trainer.advance(run, 0, group.compute.max())
        assert np.allclose(group.loss.to_numpy(), full.loss.to_numpy(), rtol=0, atol=0)
    assert not points.duplicated(["run", "step"]).any()
    assert len(result.allocation.promotions[-1]) == result.bracket.rungs[-1].runs


@pytest.mark.parametrize("lives, again", [(0, 2), (3, 1), (9, 2), (12, None)])
def test_kill_and_resume_gives_the_points_of_an_uninterrupted_run(tmp_path, uninterrupted,
                                                                  lives, again):
    whole_path, whole = uninterrupted
    assert whole.trained == 13  # 9 + 3 + 1 advances
    path = tmp_path / "store.db"
    with pytest.raises(Killed):
        _run(path, DyingTrainer(**TRAINER, lives=lives))
    if again is not None:  # killed a second time, a few advances after the restart
        with pytest.raises(Killed):
            _run(path, DyingTrainer(**TRAINER, lives=again))
    resumed = _run(path, SyntheticTrainer(**TRAINER))
    pd.testing.assert_frame_equal(_points(path), _points(whole_path))
    assert resumed.allocation.promotions == whole.allocation.promotions
    assert resumed.reused == lives + (again or 0)  # finished advances are read back
    assert resumed.trained + resumed.reused == whole.trained


def test_resume_breaks_ties_as_an_uninterrupted_run(tmp_path):
    # Two logged points per run and rungs of 1, 3, 9, ... steps: no run logs a point
    # before its last rungs, so every early promotion is a tie broken by the seed.
    # A resume reads the promotions made before the kill back; the later ones must
    # still break their ties exactly as the uninterrupted run did.
    settings = dict(seed=1, sizes=9, variants=1, max_compute=1e19, points=2, resource="step")

    def run(path, trainer):
        return run_allocation(path, "ties", trainer, LossPolicy(), budget=1e21, eta=3,
                              min_resource=1, seed=0)

    whole = run(tmp_path / "whole.db", SyntheticTrainer(**settings))
    assert len(whole.bracket.rungs) > 3 and len(whole.allocation.promotions[1]) == 1
    path = tmp_path / "store.db"
    with pytest.raises(Killed):
        run(path, DyingTrainer(**settings, lives=9 + 1))  # killed in rung 1
    resumed = run(path, SyntheticTrainer(**settings))
    assert resumed.allocation.promotions == whole.allocation.promotions
    pd.testing.assert_frame_equal(_points(path), _points(tmp_path / "whole.db"))


def test_resume_with_parallel_trainers(tmp_path, uninterrupted):
    whole_path, _ = uninterrupted
    path = tmp_path / "store.db"
    with ThreadPoolExecutor(max_workers=3) as pool, pytest.raises(Killed):
        _run(path, DyingTrainer(**TRAINER, lives=5), executor=pool)
    with ThreadPoolExecutor(max_workers=3) as pool:
        _run(path, SyntheticTrainer(**TRAINER), executor=pool)
    pd.testing.assert_frame_equal(_points(path), _points(whole_path))


def test_other_settings_under_the_same_task_are_refused(tmp_path):
    path = tmp_path / "store.db"
    _run(path, SyntheticTrainer(**TRAINER), policy=LossPolicy())
    with pytest.raises(InputError, match="other settings.*policy"):
        _run(path, SyntheticTrainer(**TRAINER))


KILLABLE = """
import sys, time
from contextlib import nullcontext
from scalekit.allocate._policies import LossPolicy
from scalekit.allocate._runner import run_allocation
from scalekit.allocate._toy import SyntheticTrainer
from scalekit.executors import make_executor, running

class Slow(SyntheticTrainer):
    def advance(self, run, start, stop):
        time.sleep(0.15)
        return super().advance(run, start, stop)

pool = (make_executor(sys.argv[2], max_workers=1, folder=sys.argv[1] + ".jobs")
        if sys.argv[2] != "local" else None)
with running(pool) if pool else nullcontext():
    run_allocation(sys.argv[1], "toy", Slow(**{settings}), LossPolicy(), budget={budget}, seed=0,
                   executor=pool)
"""


def _advances_done(process, path, target: int, *, seconds: float) -> int:
    """Wait until ``process`` has finished ``target`` advances in the store at ``path`` (or
    ended, or ``seconds`` passed); the advances done."""
    done, deadline = 0, time.monotonic() + seconds
    while done < target and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
        if path.exists():
            with sqlite3.connect(path, timeout=30) as db:
                try:
                    done = db.execute("SELECT COUNT(*) FROM allocate_ledger "
                                      "WHERE status = 'done'").fetchone()[0]
                except sqlite3.OperationalError:  # tables not created yet
                    done = 0
    return done


def test_a_killed_process_resumes_exactly(tmp_path):
    whole = tmp_path / "whole.db"
    run_allocation(whole, "toy", SyntheticTrainer(**TRAINER), LossPolicy(), budget=BUDGET, seed=0)
    path = tmp_path / "killed.db"
    script = KILLABLE.format(settings=TRAINER, budget=BUDGET)
    process = subprocess.Popen([sys.executable, "-c", script, str(path), "local"])
    target = int(np.random.default_rng(7).integers(2, 10))  # kill after a random advance
    done = _advances_done(process, path, target, seconds=60)
    process.kill()
    process.wait()
    assert target <= done < 13  # it died in the middle
    run_allocation(path, "toy", SyntheticTrainer(**TRAINER), LossPolicy(), budget=BUDGET, seed=0)
    pd.testing.assert_frame_equal(_points(path), _points(whole))
    assert _decisions(path) == _decisions(whole)


def _killed_part_way(tmp_path, executor: str, *, advances: int, seconds: float):
    """An uninterrupted local run's store, and a store whose driver (on ``executor``) was killed
    with its process group once ``advances`` advances were done; returns both and that count."""
    import os
    import signal

    whole = tmp_path / "whole.db"
    run_allocation(whole, "toy", SyntheticTrainer(**TRAINER), LossPolicy(), budget=BUDGET, seed=0)
    path = tmp_path / "killed.db"
    script = KILLABLE.format(settings=TRAINER, budget=BUDGET)
    process = subprocess.Popen([sys.executable, "-c", script, str(path), executor],
                               start_new_session=True)
    done = _advances_done(process, path, advances, seconds=seconds)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return whole, path, done


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_a_killed_driver_on_ray_resumes_exactly(tmp_path):
    # the trainer calls run on a local Ray cluster started by the driver; the driver and
    # its cluster are killed together (SIGKILL to the process group) part-way, and a
    # resumed run on Ray writes the points an uninterrupted local run writes
    pytest.importorskip("ray")
    from scalekit.executors import make_executor, running

    whole, path, done = _killed_part_way(tmp_path, "ray", advances=3, seconds=120)
    assert 3 <= done < 13  # it died in the middle
    with running(make_executor("ray", max_workers=1)) as pool:
        again = run_allocation(path, "toy", SyntheticTrainer(**TRAINER), LossPolicy(),
                               budget=BUDGET, seed=0, executor=pool)
    assert again.reused >= 3
    pd.testing.assert_frame_equal(_points(path), _points(whole))
    assert _decisions(path) == _decisions(whole)


@pytest.mark.slow  # a fresh interpreter per advance
def test_a_killed_driver_on_submitit_resumes_exactly(tmp_path):
    # each advance a job of submitit's local executor (the pickling, submission and result
    # path of its Slurm executor); the driver is killed (SIGKILL to its process group) part-way,
    # and a resumed run through submitit writes the points and the decisions (ledger and
    # promotions) an uninterrupted local run writes
    pytest.importorskip("submitit")
    from scalekit.executors import make_executor, running

    whole, path, done = _killed_part_way(tmp_path, "submitit-local", advances=2, seconds=240)
    assert 2 <= done < 13  # it died in the middle
    with running(make_executor("submitit-local", folder=tmp_path / "jobs")) as pool:
        again = run_allocation(path, "toy", SyntheticTrainer(**TRAINER), LossPolicy(),
                               budget=BUDGET, seed=0, executor=pool)
    assert again.reused >= 2 and again.trained >= 1
    pd.testing.assert_frame_equal(_points(path), _points(whole))
    assert _decisions(path) == _decisions(whole)
