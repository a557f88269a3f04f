"""Fixtures of the application-state source tests."""

from __future__ import annotations

import pytest

from state.db import Database
from tests.integration.sources.helpers import AppFactory


@pytest.fixture
def app(db: Database) -> AppFactory:
    """The shared row factory plus dossier and outreach rows."""
    return AppFactory(db)
