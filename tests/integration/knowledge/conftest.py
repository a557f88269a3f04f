"""Fixtures for knowledge's database half: a local object store and a kit on the fake model."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from tests.integration.knowledge.helpers import Kit


@pytest.fixture
def store(tmp_path: Path) -> LocalObjectStore:
    """Objects under the test's temporary folder."""
    return LocalObjectStore(tmp_path / "objects")


@pytest.fixture
async def kit(db: Database, store: LocalObjectStore) -> Kit:
    """A kit whose platform default is the 64-dimension fake model."""
    kit = Kit(db, store)
    await kit.use_platform_model()
    return kit
