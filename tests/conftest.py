"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Folder of the published data sets (``../shared/data`` beside the repo)."""
    assert SHARED_DATA.is_dir(), f"published data not found at {SHARED_DATA}"
    return SHARED_DATA
