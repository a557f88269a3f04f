"""Fixtures of the memory tests: a tenant with an agent and its runs, and the service over the test database."""

from __future__ import annotations

import pytest

from memory.service import MemoryService
from state.db import Database
from tests.factories import Factory
from tests.integration.memory.helpers import World, make_world


@pytest.fixture
async def world(factory: Factory) -> World:
    """One organization with two users, an agent definition, a user run and a trigger run."""
    return await make_world(factory)


@pytest.fixture
def service(db: Database) -> MemoryService:
    """The memory service on the test database."""
    return MemoryService(db)
