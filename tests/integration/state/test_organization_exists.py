"""The existence check of an organization an operator names reads in that organization's tenant session.

Row-level security shows a tenant session its own organization's row only, so the answer is the service
role's; reading it there leaves the pooled connection in the session the request's reads use next (a front
door brief's), instead of two session switches per request (issue 45). A pool of one connection makes every
borrow the same connection.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from state.db import Database
from state.organizations import create_organization, organization_exists
from state.settings import load_settings


@pytest.fixture
async def one(db_url: str) -> AsyncIterator[Database]:
    """A pool of exactly one connection on the test database."""
    database = await Database.open(load_settings(pool_min_size=1, pool_max_size=1), url=db_url, migrate=False)
    try:
        yield database
    finally:
        await database.close()


def _session(db: Database) -> object:
    (holder,) = db.pool._holders
    return holder._con.session()  # type: ignore[union-attr]


async def test_the_check_answers_as_the_service_role_would(one: Database) -> None:
    ours = (await create_organization(one, "Ours")).id
    other = (await create_organization(one, "Other")).id
    assert await organization_exists(one, ours)
    assert await organization_exists(one, other), "another organization's row is seen in its own session"
    assert not await organization_exists(one, uuid.uuid4()), "an unknown id names no organization"
    async with one.tenant(ours):
        pass
    assert await organization_exists(one, other), "the check never reads in the session a connection last held"


async def test_the_check_leaves_the_connection_in_the_organizations_tenant_session(one: Database) -> None:
    org = (await create_organization(one, "Ours")).id
    async with one.tenant(org) as conn:
        await conn.fetchval("SELECT 1")
    assert _session(one) == org
    assert await organization_exists(one, org)
    assert _session(one) == org, "the existence check switched a tenant session to the service role"
