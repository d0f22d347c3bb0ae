"""Allocation state kept in the curve store's SQLite file, so that ``run`` can resume.

The store (:class:`scalekit.curves.CurveStore`) holds the points; these three
tables, owned by the allocator, sit beside its tables in the same file:

- ``allocate_tasks(task, settings)``: the settings a task was started with;
- ``allocate_ledger(task, rung, run, start, stop, flops, status)``: every advance
  ordered, ``reserved`` before its trainer starts and ``done`` once its points
  are in the store;
- ``allocate_promotions(task, rung, runs)``: the runs promoted into each rung.

Each write is one transaction; SQLite's WAL mode and busy timeout make it safe
beside the store's own writers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from scalekit.allocate.engine import Advance
from scalekit.errors import InputError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS allocate_tasks (
    task TEXT PRIMARY KEY, settings TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS allocate_ledger (
    task TEXT NOT NULL, rung INTEGER NOT NULL, run TEXT NOT NULL,
    start REAL NOT NULL, stop REAL NOT NULL, flops REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('reserved', 'done')),
    PRIMARY KEY (task, rung, run));
CREATE TABLE IF NOT EXISTS allocate_promotions (
    task TEXT NOT NULL, rung INTEGER NOT NULL, runs TEXT NOT NULL,
    PRIMARY KEY (task, rung));
"""


class AllocationState:
    """The allocator's tables in the SQLite file at ``path`` (a context manager)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        with self._transaction():
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)

    def _transaction(self):
        db = self._db

        class _Tx:
            def __enter__(self):
                db.execute("BEGIN IMMEDIATE")

            def __exit__(self, kind, value, trace):
                db.execute("COMMIT" if kind is None else "ROLLBACK")

        return _Tx()

    def start_task(self, task: str, settings: Mapping) -> None:
        """Record ``task`` with ``settings``, or check that they match the recorded ones."""
        text = json.dumps(dict(settings), sort_keys=True)
        with self._transaction():
            row = self._db.execute("SELECT settings FROM allocate_tasks WHERE task = ?",
                                   (task,)).fetchone()
            if row is None:
                self._db.execute("INSERT INTO allocate_tasks VALUES (?, ?)", (task, text))
        if row is not None and row[0] != text:
            old, new = json.loads(row[0]), dict(json.loads(text))
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise InputError(f"allocation task {task!r} was started with other settings "
                             f"({', '.join(changed)} differ); use a new task name",
                             source=self.path)

    def ledger(self, task: str) -> dict[tuple[int, str], dict]:
        """``(rung, run) -> {start, stop, flops, status}`` for every advance ordered."""
        rows = self._db.execute("SELECT rung, run, start, stop, flops, status FROM "
                                "allocate_ledger WHERE task = ?", (task,)).fetchall()
        return {(r[0], r[1]): dict(start=r[2], stop=r[3], flops=r[4], status=r[5]) for r in rows}

    def reserve(self, task: str, advance: Advance) -> None:
        """Record ``advance`` as ordered (before its trainer starts); idempotent."""
        with self._transaction():
            self._db.execute("INSERT OR IGNORE INTO allocate_ledger VALUES (?,?,?,?,?,?,?)",
                             (task, advance.rung, advance.run, advance.start, advance.stop,
                              advance.cost, "reserved"))

    def mark_done(self, task: str, advance: Advance) -> None:
        with self._transaction():
            self._db.execute("UPDATE allocate_ledger SET status = 'done' WHERE task = ? AND "
                             "rung = ? AND run = ?", (task, advance.rung, advance.run))

    def spent(self, task: str) -> float:
        """FLOPs of every advance ordered (finished or not)."""
        row = self._db.execute("SELECT COALESCE(SUM(flops), 0) FROM allocate_ledger "
                               "WHERE task = ?", (task,)).fetchone()
        return float(row[0])

    def promotion(self, task: str, rung: int) -> list[str] | None:
        row = self._db.execute("SELECT runs FROM allocate_promotions WHERE task = ? AND rung = ?",
                               (task, rung)).fetchone()
        return None if row is None else json.loads(row[0])

    def record_promotion(self, task: str, rung: int, runs: list[str]) -> None:
        with self._transaction():
            self._db.execute("INSERT OR IGNORE INTO allocate_promotions VALUES (?, ?, ?)",
                             (task, rung, json.dumps(list(runs))))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "AllocationState":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
