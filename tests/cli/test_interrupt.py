"""Ctrl-C: a real SIGINT to the command in a child process exits 130 with one line saying
what was interrupted and what was kept."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalekit.curves import CurveStore

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _in_command(pid: int) -> bool:
    """Whether the command body runs (it imports numpy lazily, the entry point never does)
    with Python's Ctrl-C handler in place (SIGINT among the caught signals)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(next(line.split()[1] for line in status.splitlines()
                          if line.startswith("SigCgt:")), 16)
        return bool(caught & 1 << (signal.SIGINT - 1)) and \
            "numpy" in Path(f"/proc/{pid}/maps").read_text()
    except (FileNotFoundError, StopIteration):
        return False


def _ctrl_c_as_at_a_terminal() -> None:
    """In the child before it runs: Ctrl-C's default action, as a shell started from a
    terminal gives its commands (a test run started in the background or under nohup
    ignores SIGINT, and that would be inherited: the command would rightly ignore it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(args, ready, *, timeout=120.0):
    """Start ``scalekit ARGS``, send SIGINT once ``ready()`` holds; return (code, stderr)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    process = subprocess.Popen([sys.executable, "-m", "scalekit_cli.app", *map(str, args)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=REPO, preexec_fn=_ctrl_c_as_at_a_terminal)
    deadline = time.monotonic() + timeout
    while not (_in_command(process.pid) and ready()):
        assert process.poll() is None, f"ended before it was interrupted: {process.stderr.read()}"
        assert time.monotonic() < deadline, "never got ready"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def _ledger(path: Path, status: str = "done") -> int:
    """Advances of the allocation ledger with ``status`` (``%``: any)."""
    if not path.exists():
        return 0
    with sqlite3.connect(path, timeout=30) as db:
        try:
            return db.execute("SELECT COUNT(*) FROM allocate_ledger WHERE status LIKE ?",
                              (status,)).fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def _points(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path, timeout=30) as db:
        try:
            return db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_an_interrupted_fit_exits_130_and_writes_nothing(tmp_path):
    out = tmp_path / "fit.json"
    started = time.monotonic()
    code, err = _interrupt(["fit", REPO / "data" / "sample_curves.csv", "--bootstrap", "200000",
                            "--json", out], lambda: time.monotonic() > started + 1)
    assert code == 130, err
    assert err.strip().splitlines() == [
        "interrupted: scalekit fit stopped by Ctrl-C; nothing was written"]
    assert not out.exists()


@pytest.mark.slow
def test_an_interrupted_train_exits_130_and_says_what_the_store_keeps(tmp_path):
    store = tmp_path / "t.db"
    code, err = _interrupt(["train", "teacher_student", "--widths", "4,8", "--steps", "200000",
                            "--evals", "400", "--device", "cpu", "--store", store, "-q"],
                           lambda: _points(store) > 0)
    assert code == 130, err
    [line] = err.strip().splitlines()
    with CurveStore(store) as opened:
        runs = opened.runs()
    kept = f"keeps {runs['points'].sum()} points of {len(runs)} runs logged before it"
    assert line == (f"interrupted: scalekit train stopped by Ctrl-C; the store {store} {kept}; "
                    "run the same command again to resume from the checkpoints")


@pytest.mark.slow
def test_an_interrupted_allocation_exits_130_and_says_what_it_kept(tmp_path):
    store = tmp_path / "a.db"
    code, err = _interrupt(["allocate", "run", "teacher_student", "--budget", "2e11",
                            "--store", store, "-q"], lambda: _ledger(store, "%") > 0)
    assert code == 130, err
    [line] = err.strip().splitlines()
    done = _ledger(store)
    assert line == (f"interrupted: scalekit allocate run stopped by Ctrl-C; the store {store} keeps "
                    f"{done} finished advance{'s' * (done != 1)} of task 'teacher_student'; "
                    "run the same command again to resume")


def _class_whose_definition_is_interrupted():
    """Define a class while Ctrl-C lands in a descriptor's ``__set_name__`` (as it did in
    CI, inside a dataclass of a module being imported): Python 3.11 re-raises it as a
    ``RuntimeError`` whose cause is the interrupt."""
    class Field:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    class Owner:  # noqa: F841 - defining it is what raises
        field = Field()


def test_a_ctrl_c_wrapped_in_another_exception_is_still_an_interruption():
    from scalekit_cli.app import ctrl_c_within

    with pytest.raises(Exception) as wrapped:  # noqa: PT011 - whichever type Python wraps it in
        _class_whose_definition_is_interrupted()
    assert not isinstance(wrapped.value, KeyboardInterrupt)
    assert ctrl_c_within(wrapped.value)
    assert not ctrl_c_within(RuntimeError("no interrupt here"))


def test_a_command_interrupted_inside_an_import_exits_130_not_1(monkeypatch, capsys):
    import scalekit_cli.allocate
    import scalekit_cli.app as cli

    def interrupted(args):  # the first step of reading a command's arguments
        _class_whose_definition_is_interrupted()

    monkeypatch.setattr(scalekit_cli.allocate, "legacy_args", interrupted)
    assert cli.main(["fit", "x.csv"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        "interrupted: scalekit fit stopped by Ctrl-C; nothing was written"]
