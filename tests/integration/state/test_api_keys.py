"""API key storage (issue 21): a high-entropy secret behind a public id, stored only as a hash, looked up by
id, revoked in place; the table stays closed to the tenant and user-key roles even where default
privileges grant every new table (as a Supabase project does)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from state.api_keys import authenticate_key, mint_key, page_keys, parse_key, revoke_key
from state.db import Database
from state.embedded import server_dsn
from state.errors import ApiKeyNotFoundError, OrganizationNotFoundError
from state.migrate import apply_migrations
from tests.factories import Factory


async def test_a_key_is_minted_authenticated_and_revoked_by_its_id(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    minted = await mint_key(db, organization_id=org, name="  billing  ")
    parsed = parse_key(minted.secret)
    assert parsed is not None and parsed[0] == minted.key.id and len(parsed[1]) == 43, "a 256-bit secret"
    assert minted.key.name == "billing" and minted.key.scope == "organization"
    holder = await authenticate_key(db, minted.secret)
    assert holder is not None and (holder.id, holder.organization_id, holder.revoked) == (minted.key.id, org, False)

    first = await revoke_key(db, minted.key.id)
    again = await revoke_key(db, minted.key.id)
    assert first.revoked_at is not None and again.revoked_at == first.revoked_at, "revocation is idempotent"
    revoked = await authenticate_key(db, minted.secret)
    assert revoked is not None and revoked.revoked
    assert [k.revoked_at for k in (await page_keys(db, organization_id=org)).items] == [first.revoked_at]
    assert (await page_keys(db, organization_id=org, include_revoked=False)).items == []

    with pytest.raises(ApiKeyNotFoundError):
        await revoke_key(db, "0" * 16)
    with pytest.raises(OrganizationNotFoundError):
        await mint_key(db, organization_id=uuid.uuid4())


async def test_an_organization_key_dies_with_its_organization(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    minted = await mint_key(db, organization_id=org)
    async with db.connection() as conn:
        await conn.execute("DELETE FROM public.organizations WHERE id = $1", org)
    assert await authenticate_key(db, minted.secret) is None


@pytest.fixture
async def granting_url(pg_server_url: str) -> AsyncIterator[str]:
    """A database whose default privileges grant every new table to PUBLIC, then migrated."""
    name = f"ac_grants_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_server_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = server_dsn(pg_server_url, name)
    try:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO PUBLIC")
        finally:
            await conn.close()
        await apply_migrations(url)
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.mark.parametrize("role", ["ac_tenant", "authenticated"])
async def test_the_key_table_stays_closed_to_the_tenant_roles_under_granting_defaults(
    granting_url: str, role: str
) -> None:
    conn = await asyncpg.connect(granting_url)
    try:
        for statement in (
            "SELECT id, secret_sha256 FROM agent.api_keys",
            "INSERT INTO agent.api_keys (id, scope, secret_sha256) VALUES (repeat('a', 16), 'operator', sha256('x'))",
        ):
            async with conn.transaction():
                await conn.execute(f"SET LOCAL ROLE {role}")
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.execute(statement)
    finally:
        await conn.close()
