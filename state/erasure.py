"""The state half of erasing an organization: its API keys, its cached dossier, its outbox rows, its row if ours.

`erase_organization_state` runs last in an organization erasure, after the knowledge and memory halves, in
one transaction that adds its counts to the erasure's receipt. The organization row is deleted only when
`agent.created_organizations` lists it (migration 0085): on the platform the row belongs to the
application, and the layer deletes only what it holds. This module must never delete an organization
row this deployment did not create, and never touch another organization.
"""

from __future__ import annotations

import json
from uuid import UUID

from state.db import Database
from state.errors import translated_db_errors
from state.queries import load_queries
from state.receipts import add_to_receipt

__all__ = ["erase_organization_state", "organization_created_here"]

QUERIES = load_queries(__file__)


async def organization_created_here(db: Database, organization_id: UUID) -> bool:
    """Whether this deployment created the organization (`org create` or POST /v1/organizations)."""
    with translated_db_errors():
        return bool(await db.fetchval(QUERIES["organization_created_here"], organization_id))


async def erase_organization_state(db: Database, organization_id: UUID, *, receipt_id: UUID) -> None:
    """Delete the organization's API keys and outbox rows, evict its cached dossier, and delete its row if ours.

    The rows the organization row's cascade takes (its users, CRM rows, definitions, runs, ...) are counted
    in the receipt per table, as every other table is.
    """
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            keys = await conn.fetchval(QUERIES["erase_organization_api_keys"], organization_id)
            await conn.execute(QUERIES["evict_organization_dossier"], organization_id)
            outbox = await conn.fetchval(QUERIES["erase_organization_outbox"], organization_id)
            rows, cascaded = 0, {}
            if await conn.fetchval(QUERIES["organization_created_here"], organization_id):
                cascaded = _counts(await conn.fetchval(QUERIES["organization_cascade_counts"], organization_id))
                rows = await conn.fetchval(QUERIES["delete_organization_row"], organization_id)
            counts = {"agent.api_keys": keys, "agent.event_outbox": outbox, "public.organizations": rows}
            await add_to_receipt(conn, receipt_id, {**cascaded, **counts})


def _counts(value: object) -> dict[str, int]:
    """The cascade counts as the database answers them (jsonb text, or a dict when a codec decoded it)."""
    decoded = json.loads(value) if isinstance(value, str) else value
    if not isinstance(decoded, dict):
        return {}
    return {str(k): int(v) for k, v in decoded.items()}
