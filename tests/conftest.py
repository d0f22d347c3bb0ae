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
