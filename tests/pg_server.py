"""A throw-away PostgreSQL server for the tests: Debian's binaries, a temporary data folder,
TCP on 127.0.0.1 only, started once per session and stopped at its end.

Run as root (as in CI), the server runs as the ``postgres`` user (``initdb``
refuses root). Without the binaries or psycopg the tests that need it are
skipped, except in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (PATH first, then Debian's versioned folders)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda f: int(f.split("/")[4]))
    return Path(folders[-1]) if folders else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """A running server; :meth:`new_database` gives each test its own empty store location.

    Each location is a schema of its own in one database (``…/scalekit?options=
    -csearch_path=NAME``, libpq's URL form): as empty as a new database to the store,
    and a thousand times cheaper to make than one (a new database copies its template).
    """

    def __init__(self) -> None:
        bin_dir = binaries()
        missing = "PostgreSQL's binaries (initdb, pg_ctl)" if bin_dir is None else None
        try:
            import psycopg  # noqa: F401 - the client of the postgresql extra
        except ImportError:
            missing = "the psycopg package (the postgresql extra)"
        if missing:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"{missing} missing in CI (.ci/run installs them)")
            pytest.skip(f"{missing} not installed")
        self.folder = Path(tempfile.mkdtemp(prefix="scalekit-pg-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self._as = []
        if os.geteuid() == 0:  # initdb refuses root: run the server as postgres
            shutil.chown(self.folder, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run(str(bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
        self._pg_ctl = str(bin_dir / "pg_ctl")
        for attempt in range(3):  # the free port may be taken meanwhile (xdist workers race)
            options = (f"-h 127.0.0.1 -p {self.port} -k '' -F -c max_connections=60 "
                       "-c shared_buffers=32MB")
            try:
                self._run(self._pg_ctl, "-D", str(self.data), "-o", options, "-l",
                          str(self.folder / "log"), "-w", "start")
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}"
        self.admin("CREATE DATABASE scalekit")

    def _run(self, *command: str) -> None:
        done = subprocess.run([*self._as, *command], capture_output=True, text=True, timeout=120,
                              check=False)
        if done.returncode:
            raise RuntimeError(f"{command[0]} failed: {done.stderr or done.stdout}")

    def admin(self, sql: str, database: str = "postgres") -> list[tuple]:
        """Run ``sql`` in ``database`` (autocommit) and return its rows."""
        import psycopg

        with psycopg.connect(f"{self.url}/{database}", autocommit=True) as con:
            cursor = con.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def new_database(self) -> str:
        """The URL of a new, empty store location (a new schema)."""
        name = "t" + uuid.uuid4().hex[:12]
        self.admin(f"CREATE SCHEMA {name}", database="scalekit")
        return f"{self.url}/scalekit?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        self._run(self._pg_ctl, "-D", str(self.data), "-m", "fast", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
