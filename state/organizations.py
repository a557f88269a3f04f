"""Organizations for a standalone deployment: create, list, and the one existence check.

The platform owns `public.organizations`; these helpers exist so the layer can run on its own (the CLI's
`org create|list`, `POST /v1/organizations`) and so every organization-scoped entry point answers an
unknown organization the same way: `OrganizationNotFoundError` (`organization_not_found`), never a silent
answer with platform rows only, and never a foreign-key violation. `create_organization(..., per_minute=N)`
refuses with `RateLimitedError` once N organizations were created in the last minute (counted in the
database, so every replica shares the window). This module must never delete or rename an organization.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from state.db import Database
from state.errors import OrganizationNotFoundError, RateLimitedError, translated_db_errors
from state.queries import load_queries

__all__ = [
    "MAX_ORGANIZATION_NAME",
    "Organization",
    "create_organization",
    "get_organization",
    "organization_exists",
    "require_organization",
]

QUERIES = load_queries(__file__)
MAX_ORGANIZATION_NAME = 200
"""The longest organization name accepted."""


@dataclass(frozen=True, slots=True)
class Organization:
    """One organization."""

    id: UUID
    """Its id, the tenancy every read filters by."""
    name: str
    """Its display name."""
    created_at: datetime
    """When it was created."""


async def create_organization(db: Database, name: str, *, per_minute: int | None = None) -> Organization:
    """Create an organization named `name` (stripped, 1..200 characters); ValueError for a bad name.

    With `per_minute`, refuse with `RateLimitedError` (and its `retry_after_s`) when that many organizations
    were created in the last 60 seconds.
    """
    clean = name.strip()
    if not clean or len(clean) > MAX_ORGANIZATION_NAME:
        raise ValueError(f"an organization name has 1 to {MAX_ORGANIZATION_NAME} characters")
    with translated_db_errors():
        async with db.connection() as conn:
            if per_minute is None:
                row = await conn.fetchrow(QUERIES["create_organization"], clean)
            else:
                async with conn.transaction():
                    await conn.execute(QUERIES["lock_organization_create"])
                    row = await conn.fetchrow(QUERIES["create_organization_within_rate"], clean, per_minute)
    assert row is not None  # INSERT … RETURNING, or the window's one row, answers a row
    if row["id"] is None:
        raise RateLimitedError(
            f"at most {per_minute} organizations may be created per minute", retry_after_s=row["retry_after_s"]
        )
    return Organization(row["id"], row["name"], row["created_at"])


async def get_organization(db: Database, organization_id: UUID) -> Organization:
    """One organization, or `OrganizationNotFoundError` naming the id."""
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["get_organization"], organization_id)
    if row is None:
        raise OrganizationNotFoundError(f"no organization {organization_id}")
    return Organization(row["id"], row["name"], row["created_at"])


async def organization_exists(db: Database, organization_id: UUID) -> bool:
    """Whether an organization has this id.

    Read in that organization's own tenant session, where row-level security shows exactly its own row (so
    the answer is the service role's): an operator's request naming an organization checks it first, and
    its reads then find the pooled connection already in the session they need, with no switch either way.
    """
    with translated_db_errors():
        async with db.tenant(organization_id) as conn:
            return bool(await conn.fetchval(QUERIES["organization_exists"], organization_id))


async def require_organization(db: Database, organization_id: UUID) -> None:
    """Return when the organization exists; raise `OrganizationNotFoundError` naming it otherwise."""
    if not await organization_exists(db, organization_id):
        raise OrganizationNotFoundError(f"no organization {organization_id}")
