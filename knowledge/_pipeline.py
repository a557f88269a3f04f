"""The ingestion steps run in order, for the callers that do not need a durable step per call.

The demo, the benchmarks, the tests and the CLI run a source through its steps here; the Inngest functions
wrap the same steps one by one instead. A document that can never be read fails the source with the
reason; a failure that may pass (a provider outage) propagates and leaves the source pending, for a retry
or for the sweep; a model the source is no longer wanted under (a cancelled switch) stops at its next batch
and writes nothing more. This module must never mark a source ready by itself: only `mark_ready` decides.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from uuid import UUID

from knowledge.db_errors import ModelNotWantedError
from knowledge.embed import Embedder, get_embedder
from knowledge.errors import ExtractionError, KnowledgeInputError
from knowledge.ingest import (
    EmbeddedBatch,
    EmbedderLookup,
    ReadyCheck,
    embed_batch,
    mark_failed,
    mark_ready,
    models_to_build,
    prepare_chunks,
)
from knowledge.objects import ObjectStore
from state.db import Database

__all__ = ["IngestOutcome", "build_source_model", "ingest_source"]


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """Where a source stands after its steps ran."""

    source_id: UUID
    """The source."""
    ready_models: tuple[str, ...]
    """The models it became (or already was) ready under in this call."""
    failed_reason: str | None = None
    """Why it failed, when a step failed it."""
    chunk_count: int = 0
    """Chunk rows of the last model built."""


async def build_source_model(
    db: Database,
    store: ObjectStore,
    source_id: UUID,
    embedder: Embedder,
    *,
    batch_size: int | None = None,
    on_batch: Callable[[EmbeddedBatch], None] | None = None,
) -> ReadyCheck:
    """Chunk a source under the embedder's model, embed every chunk batch by batch, then mark it ready."""
    await prepare_chunks(db, store, source_id, embedder.model_id)
    while True:
        batch = await embed_batch(db, source_id, embedder, batch_size=batch_size)
        if on_batch is not None:
            on_batch(batch)
        if batch.embedded == 0 or batch.remaining == 0:
            break
    return await mark_ready(db, source_id, embedder.model_id)


async def ingest_source(
    db: Database,
    store: ObjectStore,
    source_id: UUID,
    *,
    embedders: EmbedderLookup = get_embedder,
    batch_size: int | None = None,
    models: Collection[str] | None = None,
) -> IngestOutcome:
    """Make a source ready under every model it is wanted under; fail it with the reason if it cannot be read.

    With `models`, only those of its models are built. A model the source stops being wanted under while it
    is built (a cancelled switch) is skipped: not ready, not failed.
    """
    ready: list[str] = []
    chunk_count = 0
    for model in await models_to_build(db, source_id):
        if models is not None and model not in models:
            continue
        try:
            check = await build_source_model(db, store, source_id, embedders(model), batch_size=batch_size)
        except ModelNotWantedError:
            continue
        except KnowledgeInputError as exc:
            reason = f"{exc.code}: {exc.message}"
            await mark_failed(db, source_id, reason, model=None if isinstance(exc, ExtractionError) else model)
            return IngestOutcome(source_id, tuple(ready), reason, chunk_count)
        chunk_count = check.chunk_count
        if check.ready:
            ready.append(model)
    return IngestOutcome(source_id, tuple(ready), None, chunk_count)
