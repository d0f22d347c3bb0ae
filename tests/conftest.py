"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PUBLISHED_DATA = REPO / "data" / "published"


@pytest.fixture(scope="session")
def published_data() -> Path:
    """Folder of the published data sets carried by the repository (``data/published``)."""
    assert PUBLISHED_DATA.is_dir(), f"published data not found at {PUBLISHED_DATA}"
    return PUBLISHED_DATA


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the session (tests/pg_server.py); skipped where none can run."""
    from pg_server import Server

    server = Server()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def new_store(request, tmp_path_factory):
    """Makes locations of new, empty stores on each back end: ``new_store()`` is a SQLite file
    in a fresh folder, or the URL of a fresh database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return lambda: tmp_path_factory.mktemp("store") / "curves.db"
    return request.getfixturevalue("postgres_server").new_database
