"""Copy a whole store to another location, on either back end (SQLite file <-> PostgreSQL).

Runs are copied in the order they were added (their ids may differ), with their
points and every metric, and the allocator's tables (tasks, ledger,
promotions), in one transaction on the destination, which must hold no run:
the copy lands whole or not at all. Locks are not copied (they belong to
processes). Exporting the copy writes the same bytes as exporting the source.
"""

from __future__ import annotations

from pathlib import Path

from scalekit.curves._schema import RUN_COLUMNS
from scalekit.curves._store import CurveStore, ImportSummary
from scalekit.errors import InputError

#: The allocator's tables, copied row for row (the same columns on both back ends).
_ALLOCATOR_TABLES = ("allocate_tasks", "allocate_ledger", "allocate_promotions")
#: Points read and written per batch.
_BATCH = 20_000


def copy_store(source: str | Path, destination: str | Path) -> ImportSummary:
    """Copy the store at ``source`` into the new or empty store at ``destination``.

    Parameters
    ----------
    source, destination : str or Path
        SQLite files or ``postgresql://`` URLs; ``destination`` is created if missing.

    Returns
    -------
    ImportSummary
        The runs and points copied.

    Raises
    ------
    InputError
        ``source`` is no store, or ``destination`` already holds runs.
    """
    with CurveStore(source, create=False) as src, CurveStore(destination) as dst:
        if str(src.path) == str(dst.path):
            raise InputError("the source and the destination are the same store",
                             source=str(dst.path))
        s_db, d_db = src._db, dst._db
        points = 0
        with s_db.snapshot() as read, d_db.transaction() as write:
            if write.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                raise InputError("the destination store already holds runs; copy into a new "
                                 "one", source=str(dst.path))
            columns = ["name", "source", *RUN_COLUMNS, "config"]
            runs = read.execute(f"SELECT id, {', '.join(columns)} FROM runs ORDER BY id").fetchall()
            ids = {}
            for row in runs:
                ids[row[0]] = write.execute(
                    f"INSERT INTO runs ({', '.join(columns)}) VALUES "
                    f"({', '.join('?' * len(columns))}) RETURNING id", row[1:]).fetchone()[0]
            for old, new in ids.items():
                cursor = read.execute("SELECT step, metric, value, compute, tokens, wall_time "
                                      "FROM points WHERE run_id = ? ORDER BY metric, step", (old,))
                while rows := cursor.fetchmany(_BATCH):
                    write.executemany("INSERT INTO points (run_id, step, metric, value, compute, "
                                      "tokens, wall_time) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                      [(new, *r) for r in rows])
                    points += len(rows)
            for table in _ALLOCATOR_TABLES:
                rows = read.execute(f"SELECT * FROM {table}").fetchall()
                if rows:
                    marks = ", ".join("?" * len(rows[0]))
                    write.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    return ImportSummary(runs=len(ids), points=points)
