"""Deleting the objects whose rows are gone: the queue of migrations/0098, drained after commit.

The re-sync swap and a superseded pending version delete a source row in a transaction; the trigger of
migrations/0098 queues its object key in the same statement. The object is deleted here, after commit: by
the re-sync itself right away, by the hourly sweep for anything a crash left, and by an organization's
erasure for its own keys (counted on its receipt). The object goes first, then its queue row, so a crash in
between only deletes a missing object again. This module must never delete an object a row still names, and
never hold a transaction across an object store call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final, Literal
from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.documents.objects import ObjectStore
from knowledge.errors import ObjectStoreError
from state.db import Database
from state.receipts import add_to_receipt

__all__ = ["ALL_SCOPES", "OBJECT_DELETES", "drain_object_deletes", "drain_quietly"]

OBJECT_DELETES: Final = "agent.knowledge_object_deletes"
"""The queue's table, as a receipt counts it."""
OBJECTS: Final = "objects"
"""The object store, as a receipt counts it."""

ALL_SCOPES: Final[Literal["all"]] = "all"
"""`scope` value: drain the queue of every organization and of the platform."""

_log = logging.getLogger(__name__)


async def drain_object_deletes(
    db: Database,
    store: ObjectStore,
    *,
    scope: UUID | Literal["all"] | None = ALL_SCOPES,
    keys: Sequence[str] | None = None,
    receipt_id: UUID | None = None,
    batch_size: int = 500,
) -> list[str]:
    """Delete queued objects (of `keys`, of one organization, None for the platform, or all) and their queue rows.

    Answers the keys deleted. With `receipt_id`, each batch adds the objects and queue rows it removed to that
    receipt. Store failures propagate and leave the queue rows for the next drain.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    one_scope = scope != ALL_SCOPES
    organization_id = scope if isinstance(scope, UUID) else None
    drained: list[str] = []
    while True:
        with translated():
            async with db.connection() as conn:
                rows = await conn.fetch(
                    QUERIES["queued_object_deletes"],
                    None if keys is None else list(keys),
                    one_scope,
                    organization_id,
                    batch_size,
                )
        batch = [r["object_key"] for r in rows]
        if not batch:
            return drained
        for key in batch:
            await store.delete(key)
        with translated():
            async with db.connection() as conn, conn.transaction():
                gone = [r["object_key"] for r in await conn.fetch(QUERIES["forget_object_deletes"], batch)]
                if receipt_id is not None:
                    await add_to_receipt(conn, receipt_id, {OBJECTS: len(gone), OBJECT_DELETES: len(gone)}, gone)
        drained.extend(gone)
        if len(batch) < batch_size:
            return drained


async def drain_quietly(db: Database, store: ObjectStore, keys: Sequence[str]) -> None:
    """Drain `keys` right after the commit that queued them; a store failure is logged and left to the sweep."""
    if not keys:
        return
    try:
        await drain_object_deletes(db, store, keys=keys)
    except ObjectStoreError:
        _log.warning("deleting %d replaced object(s) failed; the hourly sweep retries", len(keys), exc_info=True)
