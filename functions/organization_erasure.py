"""Erasing an organization: the knowledge, memory and state halves in order, under one receipt.

Each half works in bounded batches and adds its counts to the receipt in the transaction that deletes them,
so the job is resumable: a rerun after a crash (even SIGKILL) finds the running receipt, counts one more
resume, and finishes what is left. A repeat of a completed erasure that finds nothing new answers the same
receipt. Order matters: every source of the organization is made unsearchable first (the knowledge half's
first statement), memories next, and the organization row (where this deployment created it) last, so a
crash never leaves a half-deleted source searchable or an organization row without its data's receipt.
This module holds no SQL and no rule of the rooms it calls; it must never erase anything of another
organization or of the platform.
"""

from __future__ import annotations

from uuid import UUID

from knowledge.delete import erase_organization_knowledge
from knowledge.objects import ObjectStore
from memory.erasure import erase_organization_memories
from state.db import Database
from state.erasure import erase_organization_state
from state.errors import OrganizationNotFoundError
from state.organizations import organization_exists
from state.receipts import Receipt, begin_receipt, discard_empty_receipt, finish_receipt, latest_receipt

__all__ = ["DEFAULT_ERASE_BATCH", "erase_organization"]

DEFAULT_ERASE_BATCH = 2000
"""Rows per batch: small enough that no transaction holds locks for long at the largest tenant."""


async def erase_organization(
    db: Database,
    store: ObjectStore,
    organization_id: UUID,
    *,
    requested_by: str,
    batch_size: int = DEFAULT_ERASE_BATCH,
) -> Receipt:
    """Erase everything this layer holds for one organization and return the receipt.

    `OrganizationNotFoundError` when no organization has this id and none was erased under it.
    """
    async with db.connection() as conn:
        previous = await latest_receipt(
            conn, "organization", organization_id=organization_id, target_id=organization_id
        )
    if (previous is None or previous.status == "complete") and not await organization_exists(db, organization_id):
        if previous is not None:
            return previous
        raise OrganizationNotFoundError(f"no organization has id {organization_id}")
    async with db.connection() as conn:
        receipt = await begin_receipt(
            conn, "organization", organization_id=organization_id, target_id=organization_id, requested_by=requested_by
        )
    await erase_organization_knowledge(db, store, organization_id, receipt_id=receipt.id, batch_size=batch_size)
    await erase_organization_memories(db, organization_id, receipt_id=receipt.id, batch_size=batch_size)
    await erase_organization_state(db, organization_id, receipt_id=receipt.id)
    async with db.connection() as conn:
        if previous is not None and previous.status == "complete" and await discard_empty_receipt(conn, receipt.id):
            return previous
        return await finish_receipt(conn, receipt.id)
