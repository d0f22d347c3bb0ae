"""Allocation state kept in the curve store (a SQLite file or PostgreSQL), so that ``run`` can
resume.

The store (:class:`scalekit.curves.CurveStore`) holds the points; these three
tables, owned by the allocator, sit beside its tables in the same file:

- ``allocate_tasks(task, settings)``: the settings a task was started with;
- ``allocate_ledger(task, rung, run, start, stop, flops, status)``: every advance
  ordered, ``reserved`` before its trainer starts and ``done`` once its points
  are in the store;
- ``allocate_promotions(task, rung, runs)``: the runs promoted into each rung.

The tables are created and migrated by the one connection layer
(:mod:`scalekit.curves._database`), which also gives each write one transaction
with the store's timeout, and the lock that keeps a second process from running
the same task at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from scalekit.allocate._engine import Advance
from scalekit.curves import display, open_database
from scalekit.errors import InputError

class AllocationState:
    """The allocator's tables in the store at ``path`` (a file or a ``postgresql://`` URL; a
    context manager)."""

    def __init__(self, path: str | Path) -> None:
        self.path = display(path)
        self._db = open_database(path)
        self._con = self._db.con

    def _transaction(self):
        return self._db.transaction()

    def locked(self, task: str):
        """Hold the lock of ``task`` while the block runs: a second process running the same
        task at once is refused, naming the first (see :meth:`Database.locked`)."""
        return self._db.locked([f"allocate:{task}"], lambda name: f"allocation task {task!r}")

    def start_task(self, task: str, settings: Mapping) -> None:
        """Record ``task`` with ``settings``, or check that they match the recorded ones."""
        text = json.dumps(dict(settings), sort_keys=True)
        with self._transaction():
            row = self._con.execute("SELECT settings FROM allocate_tasks WHERE task = ?",
                                   (task,)).fetchone()
            if row is None:
                self._con.execute("INSERT INTO allocate_tasks VALUES (?, ?)", (task, text))
        if row is not None and row[0] != text:
            old, new = json.loads(row[0]), dict(json.loads(text))
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise InputError(f"allocation task {task!r} was started with other settings "
                             f"({', '.join(changed)} differ); use a new task name",
                             source=self.path)

    def ledger(self, task: str) -> dict[tuple[int, str], dict]:
        """``(rung, run) -> {start, stop, flops, status}`` for every advance ordered."""
        rows = self._con.execute("SELECT rung, run, start, stop, flops, status FROM "
                                "allocate_ledger WHERE task = ?", (task,)).fetchall()
        return {(r[0], r[1]): dict(start=r[2], stop=r[3], flops=r[4], status=r[5]) for r in rows}

    def reserve(self, task: str, advance: Advance) -> None:
        """Record ``advance`` as ordered (before its trainer starts); idempotent."""
        with self._transaction():
            self._con.execute("INSERT INTO allocate_ledger VALUES (?,?,?,?,?,?,?) "
                              "ON CONFLICT DO NOTHING",
                             (task, advance.rung, advance.run, advance.start, advance.stop,
                              advance.cost, "reserved"))

    def mark_done(self, task: str, advance: Advance) -> None:
        with self._transaction():
            self._con.execute("UPDATE allocate_ledger SET status = 'done' WHERE task = ? AND "
                             "rung = ? AND run = ?", (task, advance.rung, advance.run))

    def spent(self, task: str) -> float:
        """FLOPs of every advance ordered (finished or not)."""
        row = self._con.execute("SELECT COALESCE(SUM(flops), 0) FROM allocate_ledger "
                               "WHERE task = ?", (task,)).fetchone()
        return float(row[0])

    def promotion(self, task: str, rung: int) -> list[str] | None:
        row = self._con.execute("SELECT runs FROM allocate_promotions WHERE task = ? AND rung = ?",
                               (task, rung)).fetchone()
        return None if row is None else json.loads(row[0])

    def record_promotion(self, task: str, rung: int, runs: list[str]) -> None:
        with self._transaction():
            self._con.execute("INSERT INTO allocate_promotions VALUES (?, ?, ?) "
                              "ON CONFLICT DO NOTHING",
                             (task, rung, json.dumps(list(runs))))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> AllocationState:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
