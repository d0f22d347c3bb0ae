"""The one connection layer of a curve store, with two back ends: a SQLite file or PostgreSQL.

:func:`open_database` takes a store's location: a ``postgresql://user@host/db``
URL opens the server's database (:mod:`scalekit.curves._postgres`, which needs
the optional ``psycopg`` package); anything else is a SQLite file
(:mod:`scalekit.curves._sqlite`), the default. Both back ends give the same
tables, schema version and migrations, one transaction per write (nested
blocks are savepoints), consistent read snapshots, and the ``locks`` table that
lets one process at a time run an allocation task or train a run
(:meth:`StoreDatabase.locked`). The store and the allocator write their SQL once,
with ``?`` placeholders and the upsert syntax both back ends share
(``INSERT … ON CONFLICT``, ``RETURNING``).
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from scalekit.errors import InputError

#: URL schemes of a PostgreSQL store.
POSTGRES_SCHEMES = ("postgresql", "postgres")
#: The environment variable holding the store location where ``--store`` is not given.
STORE_VARIABLE = "SCALEKIT_STORE"


def is_server_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://…``) rather than a file."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in POSTGRES_SCHEMES \
        and "://" in location


#: A password in a URL: ``user:SECRET@`` before the host, ``password=SECRET`` (and libpq's
#: ``sslpassword=``) in the query string.
_SECRETS = (re.compile(r"(?<=://)([^/?#@]*?):([^/?#@]*)@"),
            re.compile(r"((?:^|[?&;])[^=&;#]*password=)([^&;#]*)", re.IGNORECASE))


def display(location: str | Path) -> str:
    """``location`` as messages show it: every password in a URL (``user:SECRET@host``,
    ``?password=SECRET``) replaced by ``***``. Text only: a URL too malformed to parse is
    masked all the same."""
    if not is_server_url(location):
        return str(location)
    text = _SECRETS[0].sub(lambda m: f"{m[1]}:***@", str(location), count=1)
    head, mark, query = text.partition("?")
    return head + mark + _SECRETS[1].sub(lambda m: f"{m[1]}***", query)


class StoreDatabase:
    """What a back end gives the store and the allocator.

    Attributes
    ----------
    path : Path or str
        The SQLite file, or the PostgreSQL URL (password masked), as messages name it.
    timeout : float
        Seconds a write waits for another writer before failing.
    con
        The connection: ``execute(sql, params)`` returns a cursor (``fetchone``,
        ``fetchall``, iteration) and ``executemany(sql, rows)``; SQL uses ``?``.
    integrity_error : type
        The exception a broken unique constraint raises.
    copies : bool
        Whether points are written with :meth:`copy_points` (PostgreSQL's COPY) rather
        than multi-row ``INSERT`` statements.
    """

    path: Path | str
    timeout: float
    con: Any
    integrity_error: type[Exception]
    copies = False

    def copy_points(self, metric: str, extras: list[str], matrix) -> None:
        """Write the points of ``metric``: rows of run id, step, value and ``extras``."""
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager:
        """Group several writes into one transaction (nested blocks are savepoints)."""
        raise NotImplementedError

    @contextmanager
    def _savepoint(self, con, undo) -> Iterator[Any]:
        """A block nested in a transaction, as a savepoint: an error raised inside it undoes
        the block alone (``undo(sql)`` runs the rollback) and goes on up."""
        name = f"sk{self._depth}"
        con.execute(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield con
        except BaseException:
            undo(f"ROLLBACK TO {name}")
            undo(f"RELEASE {name}")
            raise
        finally:
            self._depth -= 1
        con.execute(f"RELEASE {name}")

    def snapshot(self) -> AbstractContextManager:
        """A read transaction, so that several queries see one state of the store."""
        raise NotImplementedError

    @property
    def version(self) -> int:
        """The store's schema version."""
        raise NotImplementedError

    def check_intact(self) -> None:
        """Refuse a damaged store before its first write (raise the back end's own error).

        A server checks its own pages; a back end with nothing to check returns."""

    def close(self) -> None:
        raise NotImplementedError

    @contextmanager
    def locked(self, names: Iterable[str], what) -> Iterator[None]:
        """Hold the locks ``names`` (all or none) while the block runs.

        A lock held by another live process is an :class:`InputError` that names
        ``what(name)`` it guards, the process, its host and since when; a lock
        whose process has died (a ``kill -9``) is taken over. A process on
        another host is taken to be alive.
        """
        names = list(dict.fromkeys(names))
        me = (os.getpid(), socket.gethostname(), _started(os.getpid()))
        with self.transaction() as con:
            for name in names:
                row = con.execute("SELECT pid, host, started, since FROM locks WHERE name = ?",
                                  (name,)).fetchone()
                if row is not None and (row[0], row[1]) != me[:2] and _alive(*row[:3]):
                    held = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row[3]))
                    where = "" if row[1] == me[1] else f" on {row[1]}"
                    raise InputError(f"{what(name)} is being run by pid {row[0]}{where} since "
                                     f"{held}; wait for it to end (or stop it)",
                                     source=str(self.path))
            con.executemany("INSERT INTO locks VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO "
                            "UPDATE SET pid = excluded.pid, host = excluded.host, "
                            "started = excluded.started, since = excluded.since",
                            [(name, *me, time.time()) for name in names])
        try:
            yield
        finally:
            with self.transaction() as con:
                con.executemany("DELETE FROM locks WHERE name = ? AND pid = ? AND host = ?",
                                [(name, *me[:2]) for name in names])


def open_database(location: str | Path, *, timeout: float = 120.0,
                  create: bool = True) -> StoreDatabase:
    """The store at ``location``: a ``postgresql://`` URL, else a SQLite file.

    Parameters
    ----------
    location : str or Path
        The SQLite file, or ``postgresql://user[:password]@host[:port]/database``.
    timeout : float
        Seconds a write waits for another writer before failing.
    create : bool
        Whether a missing store may be created (its tables added to an empty database).
    """
    if is_server_url(location):
        from scalekit.curves._postgres import PostgresDatabase

        return PostgresDatabase(str(location), timeout=timeout, create=create)
    from scalekit.curves._sqlite import Database

    return Database(location, timeout=timeout, create=create)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (Linux), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot; Linux), to tell a reused pid."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def _alive(pid: int, host: str, started: int | None) -> bool:
    """Whether the process that took a lock still runs (one on another host is assumed to)."""
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    fields = _stat(pid)
    if fields is None:  # not Linux: the pid is all there is
        return True
    return fields[0] not in ("Z", "X") and (started is None or int(fields[19]) == started)
