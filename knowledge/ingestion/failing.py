"""Marking a failure: the write that `knowledge.ingestion.failures` decides, for every ingestion path.

`record_failure` turns an error into the failure it means (the whole source for an unreadable document, else
the readiness row of the model it happened under) and writes it with `mark_failed`; the stored reason always
passes `stored_reason`. The steps, the bulk core and the in-process core all mark failures here. This module
must never decide what fails (that is `knowledge.ingestion.failures`), nor mark anything ready.
"""

from __future__ import annotations

from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.errors import KnowledgeError
from knowledge.ingestion._step_records import FailedMark
from knowledge.ingestion.failures import failure_of, stored_reason
from state.db import Database

__all__ = ["mark_failed", "record_failure"]


async def mark_failed(db: Database, source_id: UUID, reason: str, *, model: str | None = None) -> FailedMark:
    """Fail the not-ready rows of `model` (every model when None), and the source if it is still pending."""
    text = stored_reason(reason)
    with translated():
        async with db.connection() as conn, conn.transaction():
            models = await conn.fetch(QUERIES["mark_models_failed"], source_id, model, text)
            failed = await conn.fetchval(QUERIES["mark_source_failed"], source_id, text)
    return FailedMark(source_id, failed is not None, tuple(r["embedding_model"] for r in models))


async def record_failure(db: Database, source_id: UUID, exc: KnowledgeError, model: str | None) -> str:
    """Mark the failure `exc` means for a source built under `model` (`ingestion.failures`); returns its reason."""
    failure = failure_of(exc, model)
    await mark_failed(db, source_id, failure.reason, model=failure.model)
    return failure.reason
