"""The SQLite back end of a store: connection, retried transactions, schema version.

:class:`scalekit.curves.CurveStore` (runs and points) and the allocator's state
(:mod:`scalekit.allocate._state`) share one file and open it through
:class:`Database` (by way of :func:`scalekit.curves._database.open_database`),
with the same busy timeout and back-off. The file's schema carries a version in
``PRAGMA user_version``; opening a file of an older version migrates it in one
transaction (:data:`MIGRATIONS`), a newer one is refused. The ``locks`` table
lets one process at a time run an allocation task or train a run
(:meth:`scalekit.curves._database.StoreDatabase.locked`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scalekit.curves._database import StoreDatabase
from scalekit.errors import InputError

#: Tables of a store file before it had a version (user_version 0): the store's and the
#: allocator's.
_BASE_TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    params REAL, tokens REAL,
    depth INTEGER, width INTEGER, classes INTEGER, k INTEGER, seed INTEGER,
    config TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS points (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    compute REAL, tokens REAL, wall_time REAL,
    PRIMARY KEY (run_id, metric, step)
) WITHOUT ROWID;
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
# The primary key (run_id, metric, step) of points is the unique (run, step, metric)
# constraint and, the table being WITHOUT ROWID, the clustered index that makes
# reading one run's curve a single range scan. The reference to runs holds by
# construction: points are written only by ``CurveStore._insert`` with run ids
# resolved in the same transaction, and ``remove`` deletes a run's points itself.
# SQLite's per-row foreign-key check is therefore left off (its default): it
# costs about a tenth of a bulk import.

#: Migration to each schema version from the one before (SQL statements).
MIGRATIONS = {
    1: """CREATE TABLE IF NOT EXISTS locks (
              name TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL,
              started INTEGER, since REAL NOT NULL);""",
}
SCHEMA_VERSION = max(MIGRATIONS)
#: Bytes per page of a new store file: 16 KiB pages make bulk imports about 15% faster
#: than SQLite's default 4 KiB while a one-point append still writes little.
_PAGE_SIZE = 16384


class Database(StoreDatabase):
    """A connection to the store file at ``path``, set up and migrated to :data:`SCHEMA_VERSION`.

    Parameters
    ----------
    path : str or Path
        The store file.
    timeout : float
        Seconds a write waits for another process's transaction before failing.
    create : bool
        Whether a missing (or empty) file may become a store.
    """

    integrity_error = sqlite3.IntegrityError

    def __init__(self, path: str | Path, *, timeout: float = 120.0, create: bool = True) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self._depth = 0
        if self.path.exists() and not (self.path.is_file() or self.path.is_dir()):
            raise InputError("is not a regular file (a pipe, a device or a socket), so it "
                             "cannot be a curve store; give a file path", source=str(self.path))
        if not create and not self.path.is_file():
            raise InputError("no curve store here (import curves first)", source=str(self.path))
        if not create and self.path.stat().st_size == 0:
            raise InputError("the store file is empty (0 bytes): import curves into it first",
                             source=str(self.path))
        # A store on a read-only mount or without write permission is opened for reading
        # only (immutable where not even the folder is writable: no -shm file can be made).
        self.read_only = self.path.is_file() and not os.access(self.path, os.W_OK)
        folder_read_only = self.path.is_file() and not os.access(self.path.parent, os.W_OK)
        target = self.path
        if self.read_only or folder_read_only:
            self.read_only = True
            target = (self.path.resolve().as_uri() + "?mode=ro"
                      + ("&immutable=1" if folder_read_only else ""))
        new = not self.path.exists()
        try:
            self.con = sqlite3.connect(target, timeout=self.timeout, isolation_level=None,
                                       uri=self.read_only)
        except sqlite3.Error as exc:  # a missing folder, a folder, no permission
            raise InputError(f"cannot open the store file ({exc})", source=str(self.path)) from None
        try:
            self.con.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            self.retry(lambda: self._set_up(create))
        except BaseException as exc:
            self.con.close()
            if new:  # a store this call began: no empty file is left behind
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            text = str(exc).lower()
            if isinstance(exc, sqlite3.OperationalError) and (
                    "readonly" in text or "unable to open" in text):
                raise InputError(f"cannot write the store file: it or its folder is read-only "
                                 f"({exc})", source=str(self.path)) from None
            if "full" in text or (new and "disk i/o error" in text):
                raise InputError(write_failed(self.path, exc) + "; nothing was written",
                                 source=str(self.path)) from None
            raise InputError(f"not a scalekit curve store ({exc})", source=str(self.path)) from None

    def _set_up(self, create: bool) -> None:
        """Check the file is a store (or empty) before changing anything, set it up, migrate.

        A SQLite file holding other tables is refused untouched: its journal mode
        is not switched and no table is added to it.
        """
        con = self.con
        tables = {row[0] for row in
                  con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        is_store = {"runs", "points"} <= tables
        if not is_store and (tables or not create):
            found = ", ".join(sorted(tables)) or "none"
            raise sqlite3.DatabaseError(f"it has no runs and points tables; tables: {found}")
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise InputError(f"the store was written by a newer scalekit (schema version "
                             f"{version}; this one reads up to {SCHEMA_VERSION}): upgrade "
                             "scalekit", source=str(self.path))
        if self.read_only:
            if version < SCHEMA_VERSION:
                raise InputError(f"the store has an older schema (version {version}) and is "
                                 "read-only, so it cannot be brought up to date: copy it to a "
                                 "writable folder", source=str(self.path))
            return
        con.execute(f"PRAGMA page_size = {_PAGE_SIZE}")  # takes effect on a new file only
        if con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
        con.execute("PRAGMA cache_size = -65536")
        if version < SCHEMA_VERSION:
            self._migrate()

    def _migrate(self) -> None:
        """Bring the file to :data:`SCHEMA_VERSION` in one transaction (another process may
        have done it meanwhile: the version is read again inside)."""
        with self.transaction():
            version = self.con.execute("PRAGMA user_version").fetchone()[0]
            if version >= SCHEMA_VERSION:
                return
            if version == 0:
                _execute_script(self.con, _BASE_TABLES)
            for target in range(version + 1, SCHEMA_VERSION + 1):
                _execute_script(self.con, MIGRATIONS[target])
            self.con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def version(self) -> int:
        """The file's schema version (``PRAGMA user_version``)."""
        return int(self.con.execute("PRAGMA user_version").fetchone()[0])

    def retry(self, action):
        """Run ``action``, retrying with back-off while the file is locked by another writer."""
        delay, deadline = 0.005 * (1 + os.getpid() % 5), time.monotonic() + self.timeout
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Group several writes into one transaction: all of them land, or none.

        Writes outside this block are each their own transaction. Nested blocks
        are savepoints: an error caught inside one undoes only that block.
        """
        con = self.con
        if con.in_transaction:
            with self._savepoint(con, con.execute):
                yield con
            return
        self.retry(lambda: con.execute("BEGIN IMMEDIATE"))
        try:
            yield con
            self.retry(lambda: con.execute("COMMIT"))
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction, so that several queries see one state of the file."""
        if self.con.in_transaction:
            yield self.con
            return
        self.con.execute("BEGIN")
        try:
            yield self.con
        finally:
            if self.con.in_transaction:  # an error may have ended it (a damaged file)
                self.con.execute("COMMIT")

    def check_intact(self) -> None:
        """Refuse a damaged file (``PRAGMA quick_check``) with SQLite's own error."""
        found = [str(row[0]) for row in self.con.execute("PRAGMA quick_check(1)")]
        if found != ["ok"]:
            raise sqlite3.DatabaseError("malformed: quick_check found "
                                        + " ".join(found[0].split())[:60])

    def close(self) -> None:
        """Close the connection (the write-ahead log is folded into the file)."""
        self.con.close()


def write_failed(path: str | Path, exc: BaseException) -> str:
    """What a write into the store file at ``path`` that SQLite refused with ``exc`` ("database
    or disk is full", "disk I/O error") means: the device holding it took no more bytes."""
    from scalekit.serialise import device_of

    if "full" in str(exc).lower():
        return f"no space left on the device holding the store ({device_of(path)})"
    return (f"the store file could not be written ({exc}): the device holding it "
            f"({device_of(path)}) is most likely full, or the file over the size limit")


def _execute_script(con: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement)
