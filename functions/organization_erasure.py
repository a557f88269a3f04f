"""Erasing an organization: the knowledge, memory and state halves in order, under one receipt.

Each half works in bounded batches and adds its counts to the receipt in the transaction that deletes them,
so the job is resumable: a rerun after a crash (even SIGKILL) finds the running receipt, counts one more
resume, and finishes what is left. A repeat of a completed erasure that finds nothing new answers the same
receipt. Order matters: the organization is marked erasing first (`state.erasure_marks`: every write for it
is refused from then on, and the mark waits for the writes in flight), every source of the organization is
made unsearchable next (the knowledge half's first statement), memories next, then the organization row
(where this deployment created it), and last a sweep of the object store's folder of the organization, so
a crash never leaves a half-deleted source searchable or an organization row without its data's receipt,
and no object a raced upload stored survives. Only then is the receipt complete, its disk step recorded as
pending in the same transaction; the space the deleted rows held is reclaimed after it (`state.reclaim`),
and what that did is recorded on the receipt, which ends the step. A rerun that finds the receipt complete
with its disk step pending (a kill between the two) runs the step before it answers.
This module holds no SQL and no rule of the rooms it calls; it must never erase anything of another
organization or of the platform.
"""

from __future__ import annotations

from uuid import UUID

from knowledge.documents.objects import ObjectStore, organization_prefix
from knowledge.ingestion.delete import erase_organization_knowledge
from memory.erasure import erase_organization_memories
from state.brief_receipts import erase_organization_receipts
from state.db import Database
from state.erasure import erase_organization_state
from state.erasure_marks import clear_organization_mark, mark_organization_erasing
from state.errors import OrganizationNotFoundError
from state.organizations import organization_exists
from state.receipts import Receipt, add_to_receipt, begin_receipt, discard_empty_receipt, finish_receipt, latest_receipt
from state.reclaim import erased_tables, finish_disk_step, mark_disk_step_pending

__all__ = ["DEFAULT_ERASE_BATCH", "SWEPT_OBJECTS", "erase_organization", "erased_tables"]

SWEPT_OBJECTS = "objects_swept"
"""The receipt's count of objects the final sweep of the organization's folder found and deleted."""

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
    if previous is not None:  # a run killed after its receipt completed left its disk step to do
        previous = await finish_disk_step(db, previous)
    if (previous is None or previous.status == "complete") and not await organization_exists(db, organization_id):
        if previous is not None:
            return previous
        raise OrganizationNotFoundError(f"no organization has id {organization_id}")
    async with db.connection() as conn:
        receipt = await begin_receipt(
            conn, "organization", organization_id=organization_id, target_id=organization_id, requested_by=requested_by
        )
    await mark_organization_erasing(db, organization_id, receipt_id=receipt.id)
    async with db.connection() as conn, conn.transaction():  # first: the halves below then delete none of them
        await add_to_receipt(conn, receipt.id, await erase_organization_receipts(conn, organization_id))
    await erase_organization_knowledge(db, store, organization_id, receipt_id=receipt.id, batch_size=batch_size)
    await erase_organization_memories(db, organization_id, receipt_id=receipt.id, batch_size=batch_size)
    await erase_organization_state(db, organization_id, receipt_id=receipt.id)
    swept = len(await store.delete_prefix(organization_prefix(organization_id)))  # raced or unreferenced objects
    async with db.connection() as conn, conn.transaction():  # the mark ends as the receipt completes
        await add_to_receipt(conn, receipt.id, {SWEPT_OBJECTS: swept})
        await clear_organization_mark(conn, organization_id)
        if previous is not None and previous.status == "complete" and await discard_empty_receipt(conn, receipt.id):
            return previous
        done = await finish_receipt(conn, receipt.id)
        await mark_disk_step_pending(conn, done.id)
    return await finish_disk_step(db, done)
