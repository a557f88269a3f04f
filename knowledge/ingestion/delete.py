"""Deleting a knowledge source, and the knowledge half of erasing an organization.

A delete runs in short transactions, so searches, brief building and other tenants never wait for it:

1. lock every version of the source's URI (asked by the id of any of them, a version a re-sync replaced
   included: migrations/0097), in the order a re-sync's swap locks them, so a swap in flight commits first
   and its new version is deleted too; open or resume its receipt (kind `source`, listing the versions),
   and set the status `deleting` (migrations/0081): the lexical trigger takes its pairs out of
   the searchable set and its postings out of the statistics in that statement, so no search or brief
   returns its text from that commit on, and no ingestion step can make it ready again;
2. delete its chunks of every model in batches of `batch_size`, each in its own transaction with its
   counts added to the receipt;
3. delete its objects (its pending new version's too) from the store unless another source still names
   the same key (keys written before migrations/0098 were content-addressed); the objects go before the
   rows because only the rows hold the keys;
4. delete the row (its readiness rows and any chunk a raced write left with it) and finish the receipt.

A crash anywhere and a rerun of the same delete finishes the job: the running receipt is resumed and a
`deleting` source is continued. `erase_organization_knowledge` does the same for every source of one
organization, then removes its statistics, the object deletes still queued for it (migrations/0098), its
settings and switchovers. Every table either writes is counted on the receipt, the source-level statistics
of migrations/0092 included. This module must never delete a
platform source without the operator's rights, never hold a transaction across a batch, an object store
call or the caller's hook, and never touch another organization's rows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from uuid import UUID

import asyncpg

from knowledge._sql import QUERIES, translated
from knowledge.documents.objects import ObjectStore
from knowledge.errors import PlatformSourceForbiddenError, SourceDeletedError, UnknownSourceError
from knowledge.ingestion.object_deletes import drain_object_deletes
from state.db import Connection, Database
from state.receipts import Receipt, add_to_receipt, begin_receipt, finish_receipt

__all__ = ["DEFAULT_BATCH_SIZE", "BatchHook", "delete_source", "erase_organization_knowledge", "was_deleted"]

DEFAULT_BATCH_SIZE = 2000
"""Chunks (or rows) deleted per transaction (docs/decisions.md, "deleting a source")."""

BatchHook = Callable[[], Awaitable[None]]
"""Awaited after each committed batch, outside any transaction (tests pause a delete here)."""

CHUNKS = "agent.knowledge_chunks"
POSTINGS = "agent.knowledge_postings"
SEARCHABLE = "agent.knowledge_searchable"
SOURCE_MODELS = "agent.knowledge_source_models"
ATTEMPTS = "agent.knowledge_source_attempts"
SOURCES = "agent.knowledge_sources"
LEXEMES = "agent.knowledge_lexemes"
SCOPES = "agent.knowledge_lexical_scopes"
SETTINGS = "public.knowledge_settings"
SWITCHES = "agent.knowledge_switches"
LEXICAL_CHUNKS = "agent.knowledge_lexical_chunks"
LEXICAL_SOURCES = "agent.knowledge_lexical_sources"
SOURCE_TERMS = "agent.knowledge_source_terms"
OBJECTS = "objects"
CITATIONS = "agent.brief_citations"


def _unsearchable(counts: asyncpg.Record) -> dict[str, int]:
    """The receipt counts of making sources unsearchable: pairs, postings and source-level statistics."""
    return {
        SEARCHABLE: counts["pairs"], POSTINGS: counts["postings"], LEXICAL_CHUNKS: counts["lexical_chunks"],
        LEXICAL_SOURCES: counts["lexical_sources"], SOURCE_TERMS: counts["source_terms"],
    }  # fmt: skip


async def delete_source(
    db: Database,
    store: ObjectStore,
    source_id: UUID,
    *,
    organization_id: UUID | None,
    operator: bool,
    requested_by: str,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: BatchHook | None = None,
) -> Receipt:
    """Delete a source of the caller's organization (any, with `organization_id` None); answers its receipt.

    `source_not_found` for no such source in scope, `platform_source_forbidden` for a platform source
    without `operator`, `source_deleted` (naming the receipt) for a source already deleted; each changes
    nothing. A rerun after a crash resumes the running receipt and finishes the delete.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    with translated():
        async with db.connection() as conn, conn.transaction():
            rows = await conn.fetch(QUERIES["lock_source_for_delete"], source_id)
            if not rows:
                receipt = await _deletion_receipt(conn, source_id, organization_id)
                if receipt is None:
                    raise UnknownSourceError(f"no knowledge source {source_id}")
                if receipt["status"] == "complete":
                    raise SourceDeletedError(
                        f"the knowledge source {source_id} is already deleted (receipt {receipt['id']})",
                        receipt_id=str(receipt["id"]),
                    )
                receipt_id: UUID = receipt["id"]  # the row went, the receipt did not: finish it below
                ids: list[UUID] = []
                keys: list[str] = []
            else:
                owner = rows[0]["organization_id"]  # every version of a URI has the same scope
                if organization_id is not None and owner != organization_id:
                    raise UnknownSourceError(f"no knowledge source {source_id}")
                if owner is None and not operator:
                    raise PlatformSourceForbiddenError(
                        f"the knowledge source {source_id} is a platform source: "
                        "deleting it needs the operator's rights"
                    )
                # Every version of the URI, replacements first: a row replaced by one still listed goes after it.
                ids = [r["id"] for r in rows]
                keys = sorted({r["object_key"] for r in rows})
                opened = await begin_receipt(
                    conn, "source", organization_id=owner, target_id=source_id, requested_by=requested_by
                )
                receipt_id = opened.id
                counts = await conn.fetchrow(QUERIES["count_unsearchable_rows"], ids)
                assert counts is not None
                await conn.execute(QUERIES["mark_sources_deleting"], ids)
                await conn.execute(QUERIES["record_receipt_versions"], receipt_id, ids)
                await add_to_receipt(conn, receipt_id, _unsearchable(counts))
    if ids:
        await db.note_write(owner)  # unsearchable from that commit, on a standby too (state.replicas)
        await _delete_chunks(db, receipt_id, QUERIES["delete_source_chunk_batch"], ids, batch_size, on_batch)
        async with db.connection() as conn:
            with translated():
                removable = [k for k in keys if not await conn.fetchval(QUERIES["object_key_shared"], k, ids)]
        for key in removable:  # before the rows: only the rows hold the keys
            await store.delete(key)
        async with db.connection() as conn, conn.transaction():
            with translated():
                # Only the rows this delete marked (by id: the asked one may be a version a swap removed).
                locked = {r["id"] for r in await conn.fetch(QUERIES["lock_deleting_sources"], ids)}
                gone = [i for i in ids if i in locked]
                await _delete_rows(conn, receipt_id, gone, removable)
    async with db.connection() as conn:
        return await finish_receipt(conn, receipt_id)  # a complete receipt is left as it is


async def was_deleted(db: Database, source_id: UUID) -> bool:
    """Whether a delete of this source was asked (its receipt exists, running or complete)."""
    with translated():
        async with db.connection() as conn:
            return await conn.fetchrow(QUERIES["source_deletion_receipt"], source_id) is not None


async def _deletion_receipt(conn: Connection, source_id: UUID, organization_id: UUID | None) -> asyncpg.Record | None:
    """The receipt of a source's deletion, when the caller may know of it (an organization's own only)."""
    row = await conn.fetchrow(QUERIES["source_deletion_receipt"], source_id)
    if row is None or (organization_id is not None and row["organization_id"] != organization_id):
        return None
    return row


async def _delete_chunks(
    db: Database, receipt_id: UUID, query: str, target: object, batch_size: int, on_batch: BatchHook | None
) -> None:
    """Delete chunks in batches, each in its own transaction with its counts on the receipt."""
    while True:
        with translated():
            async with db.connection() as conn, conn.transaction():
                row = await conn.fetchrow(query, target, batch_size)
                assert row is not None
                await add_to_receipt(conn, receipt_id, {CHUNKS: row["chunks"], POSTINGS: row["postings"]})
        if row["chunks"] == 0:
            return
        if on_batch is not None:
            await on_batch()


async def _delete_rows(conn: Connection, receipt_id: UUID, ids: list[UUID], object_keys: list[str]) -> None:
    """Delete emptied deleting sources (locked by the caller) and count them, with their objects."""
    if ids:
        left = await conn.fetchrow(QUERIES["delete_source_rows"], ids)
        assert left is not None
        citations = await conn.fetchval(QUERIES["count_source_citations"], ids)
        removed = await conn.fetchval(QUERIES["delete_sources_by_id"], ids)
        counts = {
            CHUNKS: left["chunks"],
            SOURCE_MODELS: left["source_models"],
            ATTEMPTS: left["attempts"],
            SOURCES: removed,
            CITATIONS: citations,
        }
    else:
        counts = {}
    if object_keys:
        counts[OBJECTS] = len(object_keys)
    await add_to_receipt(conn, receipt_id, counts, object_keys)


async def erase_organization_knowledge(
    db: Database,
    store: ObjectStore,
    organization_id: UUID,
    *,
    receipt_id: UUID,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: BatchHook | None = None,
) -> None:
    """Remove every knowledge row and object of one organization, counting each batch on `receipt_id`.

    Its sources become unsearchable first (one statement); then chunks, sources and objects go in batches,
    then its statistics, its settings row and its switchovers. Platform sources and other organizations'
    rows are untouched. Rerunnable after a crash until complete; a rerun never counts a row twice.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    while True:
        with translated():
            async with db.connection() as conn, conn.transaction():
                counts = await conn.fetchrow(QUERIES["organization_unsearchable_counts"], organization_id)
                assert counts is not None
                marked = await conn.fetch(QUERIES["mark_organization_deleting"], organization_id)
                await add_to_receipt(conn, receipt_id, _unsearchable(counts))
        await _delete_chunks(
            db, receipt_id, QUERIES["delete_organization_chunk_batch"], organization_id, batch_size, on_batch
        )
        while await _erase_source_batch(db, store, organization_id, receipt_id, batch_size):
            if on_batch is not None:
                await on_batch()
        if not marked:  # nothing arrived since the last pass: every source of the organization is gone
            break
    await _erase_statistics(db, organization_id, receipt_id, batch_size, on_batch)
    # Objects of versions replaced or superseded earlier whose delete a crash left queued (migrations/0098).
    await drain_object_deletes(db, store, scope=organization_id, receipt_id=receipt_id, batch_size=batch_size)
    with translated():
        async with db.connection() as conn, conn.transaction():
            row = await conn.fetchrow(QUERIES["delete_organization_settings"], organization_id)
            assert row is not None
            await add_to_receipt(conn, receipt_id, {SETTINGS: row["settings"], SWITCHES: row["switches"]})


async def _erase_source_batch(
    db: Database, store: ObjectStore, organization_id: UUID, receipt_id: UUID, batch_size: int
) -> bool:
    """Delete the objects, then the rows, of one batch of emptied sources; False when none was left."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["organization_source_batch"], organization_id, batch_size)
    if not rows:
        return False
    ids = [r["id"] for r in rows]
    keys = sorted({r["object_key"] for r in rows})
    async with db.connection() as conn:
        with translated():
            removable = [k for k in keys if not await conn.fetchval(QUERIES["object_key_shared"], k, ids)]
    for key in removable:  # before the rows: only the rows hold the keys; a rerun deletes a key again harmlessly
        await store.delete(key)
    with translated():
        async with db.connection() as conn, conn.transaction():
            held = [r["id"] for r in await conn.fetch(QUERIES["lock_deleting_sources"], ids)]
            await _delete_rows(conn, receipt_id, held, removable if held else [])
    return True


async def _erase_statistics(
    db: Database, organization_id: UUID, receipt_id: UUID, batch_size: int, on_batch: BatchHook | None
) -> None:
    """Delete the organization's lexical scopes: their lexeme rows in batches, then the scope rows."""
    with translated():
        async with db.connection() as conn:
            scopes = [r["id"] for r in await conn.fetch(QUERIES["organization_scopes"], organization_id)]
    if not scopes:
        return
    while True:
        with translated():
            async with db.connection() as conn, conn.transaction():
                n = await conn.fetchval(QUERIES["delete_scope_lexeme_batch"], scopes, batch_size)
                await add_to_receipt(conn, receipt_id, {LEXEMES: n})
        if not n:
            break
        if on_batch is not None:
            await on_batch()
    with translated():
        async with db.connection() as conn, conn.transaction():
            row = await conn.fetchrow(QUERIES["delete_scope_rows"], scopes)
            assert row is not None
            await add_to_receipt(
                conn, receipt_id, {
                    POSTINGS: row["postings"], SEARCHABLE: row["pairs"], SCOPES: row["scopes"],
                    LEXICAL_CHUNKS: row["lexical_chunks"], LEXICAL_SOURCES: row["lexical_sources"],
                    SOURCE_TERMS: row["source_terms"],
                },
            )  # fmt: skip
