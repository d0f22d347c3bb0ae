"""The one SQLite layer: schema version and migration of an old file, locks between processes."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scalekit.allocate._policies import LossPolicy
from scalekit.allocate._runner import run_allocation
from scalekit.allocate._state import AllocationState
from scalekit.allocate._toy import SyntheticTrainer
from scalekit.curves import CurveStore
from scalekit.curves._database import open_database
from scalekit.curves._sqlite import SCHEMA_VERSION
from scalekit.errors import InputError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_v0.db"


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_store_written_before_versioning_is_migrated_with_nothing_lost(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(FIXTURE, path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert "locks" not in _tables(path)
    with CurveStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION >= 1
        loss = store.curves(runs=["a"]).frame
        accuracy = store.curves(runs=["a"], metric="accuracy").frame
    assert "locks" in _tables(path)
    # the values the fixture was written with (tests/fixtures/README.md)
    assert loss["step"].tolist() == [1, 2, 4] and loss["loss"].tolist() == [3.0, 2.5, 2.2]
    assert accuracy["accuracy"].tolist() == [0.1, 0.2, 0.3]
    assert loss["params"].iloc[0] == 1e6 and loss["width"].iloc[0] == 8
    assert loss["lr"].iloc[0] == 0.01
    # the allocation it holds resumes: every advance is read back, none is trained again
    trainer = SyntheticTrainer(seed=1, sizes=3, variants=1, max_compute=1e18, points=4)
    with AllocationState(path) as state:
        done = [e for e in state.ledger("toy").values() if e["status"] == "done"]
    assert done
    again = run_allocation(path, "toy", trainer, LossPolicy(), budget=0.5 * 3 * 1e18, seed=0)
    assert again.trained == 0 and again.reused == len(done)


def test_a_store_of_a_newer_schema_is_refused_untouched(tmp_path):
    path = tmp_path / "new.db"
    with CurveStore(path):
        pass
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(InputError, match=f"newer scalekit \\(schema version {SCHEMA_VERSION + 1}"):
        CurveStore(path)
    assert path.read_bytes() == before


HOLDER = """
import sys, time
from scalekit.allocate._state import AllocationState
with AllocationState(sys.argv[1]) as state, state.locked("toy"):
    print("held", flush=True)
    time.sleep(120)
"""


def _locks(location) -> list[tuple]:
    db = open_database(location)
    try:
        return db.con.execute("SELECT name, pid FROM locks").fetchall()
    finally:
        db.close()


def test_a_task_run_elsewhere_is_refused_naming_the_process_and_a_dead_ones_lock_taken(new_store):
    path = new_store()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with AllocationState(path) as state:
            with pytest.raises(InputError, match=f"allocation task 'toy' is being run by pid "
                                                 f"{holder.pid} since 20"), state.locked("toy"):
                pass
            with state.locked("other"):  # another task is free
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the holder died without releasing its lock: the next run takes it over
    with AllocationState(path) as state, state.locked("toy"):
        assert _locks(path) == [("allocate:toy", os.getpid())]
    assert _locks(path) == []  # and releases it at the end


def test_the_store_and_the_allocation_state_share_one_timeout(tmp_path):
    path = tmp_path / "store.db"
    with CurveStore(path) as store, AllocationState(path) as state:
        assert store.timeout == state._db.timeout
        busy = [c.execute("PRAGMA busy_timeout").fetchone()[0] for c in (store._con, state._con)]
    assert busy[0] == busy[1] > 0
