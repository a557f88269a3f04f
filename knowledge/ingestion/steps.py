"""The ingestion steps after registration: extract and chunk, embed a batch, mark ready, mark failed.

registered source -> extract text -> chunk -> embed -> insert chunks -> mark the source ready
(registration, the step before these, is `knowledge.ingestion.registration`)

Each step is small, idempotent and safe to run twice, takes ids, and returns a small frozen record of ids
and counts, so an Inngest function can wrap each one as a step. Marking a failure is `knowledge.ingestion.failing`'s
(re-exported here, beside the other marks). A source is pinned per chunk to a model and
becomes ready under a model only when every chunk of that model holds its vector, checked in the one
statement that marks it. This module must never search, never fetch a URL, and never mark a half-embedded
source ready.
"""

from __future__ import annotations

import asyncio
import time
from typing import NoReturn
from uuid import UUID

from pgvector import Vector

from knowledge._sql import QUERIES, translated
from knowledge.documents.chunk import (
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_MAX_CHUNKS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    chunk_text,
)
from knowledge.documents.extract import ExtractLimits, extract_limits, extract_text_async
from knowledge.documents.objects import ObjectStore
from knowledge.embedding.embedder import Embedder
from knowledge.errors import (
    EmbedderMismatchError,
    EmptyDocumentError,
    ModelNotWantedError,
    SourceNotFoundError,
)
from knowledge.ingestion._step_records import EmbeddedBatch, FailedMark, PreparedChunks, ReadyCheck
from knowledge.ingestion.failing import mark_failed, record_failure
from knowledge.ingestion.object_deletes import drain_quietly
from state.db import Connection, Database

__all__ = [
    "EmbeddedBatch",
    "FailedMark",
    "PreparedChunks",
    "ReadyCheck",
    "embed_batch",
    "mark_failed",
    "mark_ready",
    "model_wanted",
    "models_to_build",
    "prepare_chunks",
    "record_failure",
]


async def model_wanted(db: Database, source_id: UUID, model: str) -> bool:
    """Whether the source is still wanted under `model` (its scope's live model, or a running switch's target)."""
    with translated():
        async with db.connection() as conn:
            return bool(await conn.fetchval(QUERIES["model_wanted"], source_id, model))


async def models_to_build(db: Database, source_id: UUID) -> tuple[str, ...]:
    """The models a source still has to be made ready under (pending or failed readiness rows), in order."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["models_to_build"], source_id)
    return tuple(r["embedding_model"] for r in rows)


async def prepare_chunks(
    db: Database,
    store: ObjectStore,
    source_id: UUID,
    model: str,
    *,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    limits: ExtractLimits | None = None,
    max_chunks: int = DEFAULT_MAX_CHUNKS,
) -> PreparedChunks:
    """Write the chunk rows of a source under `model` (copied from another model's rows when complete).

    Only while the source is wanted under `model`: `ModelNotWantedError` otherwise (a switch toward it was
    cancelled), before anything is written.
    `limits` defaults to the settings' extraction bounds; the chunk cap is enforced while the text is read.
    """
    with translated():
        async with db.connection() as conn:
            async with conn.transaction():
                await conn.execute(QUERIES["lock_model_writes"], model)
                await conn.execute(QUERIES["add_wanted_model_row"], source_id, model)
                state = await conn.fetchrow(QUERIES["source_model_state"], source_id, model)
            if state is None:
                await _raise_gone(conn, source_id, model)
            if state["status"] == "ready" or (
                state["chunk_count"] is not None and state["rows"] == state["chunk_count"]
            ):
                return PreparedChunks(source_id, model, state["rows"], state["embedded_count"], "existing")
            donor = await conn.fetch(QUERIES["donor_chunks"], source_id, model)
            document = None if donor else await conn.fetchrow(QUERIES["source_document"], source_id)
    extract_s = chunk_s = 0.0
    if donor:
        chunks = [Chunk(ordinal=r["ordinal"], text=r["text"], tokens=r["tokens"]) for r in donor]
        origin = "copied"
    else:
        if document is None:
            raise SourceNotFoundError(f"no knowledge source {source_id}")
        started = time.perf_counter()
        data = await store.get(document["object_key"])
        bounds = (limits or extract_limits()).with_chunk_cap(max_chunks, chunk_tokens)
        extracted = await extract_text_async(
            data, media_type=document["media_type"], filename=document["filename"], limits=bounds
        )
        extract_s = time.perf_counter() - started
        started = time.perf_counter()
        chunks = await asyncio.to_thread(
            chunk_text, extracted.text, size=chunk_tokens, overlap=overlap_tokens, max_chunks=max_chunks
        )
        chunk_s = time.perf_counter() - started
        if not chunks:
            raise EmptyDocumentError.because("the document contains no text to chunk")
        origin = "extracted"
    started = time.perf_counter()
    with translated():
        async with db.connection() as conn, conn.transaction():
            await conn.execute(QUERIES["lock_model_writes"], model)
            if not await conn.fetchval(QUERIES["model_wanted"], source_id, model):
                await _raise_gone(conn, source_id, model)
            # Its readiness row again, if a cancel dropped it and a new switch toward the model wants it back.
            await conn.execute(QUERIES["add_wanted_model_row"], source_id, model)
            await conn.execute(
                QUERIES["upsert_chunks"],
                source_id,
                model,
                [c.ordinal for c in chunks],
                [c.text for c in chunks],
                [c.tokens for c in chunks],
            )
            await conn.execute(QUERIES["delete_chunks_from"], source_id, model, len(chunks))
            counts = await conn.fetchrow(QUERIES["record_chunk_count"], source_id, model, len(chunks))
    if counts is None:
        raise SourceNotFoundError(f"the knowledge source {source_id} was deleted while it was chunked")
    return PreparedChunks(
        source_id, model, counts["chunk_count"], counts["embedded_count"], origin,
        extract_s=extract_s, chunk_s=chunk_s, insert_s=time.perf_counter() - started,
    )  # fmt: skip


async def _raise_gone(conn: Connection, source_id: UUID, model: str) -> NoReturn:
    """Raise why a (source, model) cannot be written: the source is gone, or no longer wanted under the model."""
    document = await conn.fetchrow(QUERIES["source_document"], source_id)
    if document is None:
        raise SourceNotFoundError(f"no knowledge source {source_id}")
    if document["status"] == "deleting":
        raise SourceNotFoundError(f"the knowledge source {source_id} is being deleted; nothing was written")
    raise ModelNotWantedError(f"the source {source_id} is no longer wanted under {model}; nothing was written")


async def embed_batch(
    db: Database, source_id: UUID, embedder: Embedder, *, batch_size: int | None = None
) -> EmbeddedBatch:
    """Embed the next chunks of `embedder`'s model that have no vector yet, in ordinal order, and store them.

    Each batch first checks that the source is still wanted under the model, so a cancelled switch stops
    its re-embedding at the next batch (`ModelNotWantedError`) instead of paying for vectors nobody keeps.
    """
    model = embedder.model_id
    size = batch_size or embedder.batch_size
    with translated():
        async with db.connection() as conn:
            if not await conn.fetchval(QUERIES["model_wanted"], source_id, model):
                await _raise_gone(conn, source_id, model)
            dimensions = await conn.fetchval(QUERIES["model_dimensions"], model)
            rows = await conn.fetch(QUERIES["unembedded_chunks"], source_id, model, size)
    if dimensions != embedder.dimensions:
        raise EmbedderMismatchError(
            f"{model} is registered with {dimensions} dimensions; the embedder gives {embedder.dimensions}"
        )
    if not rows:
        return EmbeddedBatch(source_id, model, 0, 0)
    started = time.perf_counter()
    vectors = await embedder.embed([r["text"] for r in rows])
    embed_s = time.perf_counter() - started
    started = time.perf_counter()
    with translated():
        async with db.connection() as conn:
            result = await conn.fetchrow(
                QUERIES["store_embeddings"], source_id, model, [r["id"] for r in rows], [Vector(v) for v in vectors]
            )
    chunk_count = result["chunk_count"] if result is not None and result["chunk_count"] is not None else 0
    embedded = result["embedded_count"] if result is not None else 0
    return EmbeddedBatch(
        source_id, model, result["stored"] if result is not None else 0, max(chunk_count - embedded, 0),
        embed_s=embed_s, store_s=time.perf_counter() - started,
    )  # fmt: skip


async def mark_ready(db: Database, source_id: UUID, model: str, *, store: ObjectStore | None = None) -> ReadyCheck:
    """Mark (source, model) ready, and the source with it, only if every chunk row holds its vector.

    A new version of a URI that becomes ready replaces the old one in the same transaction; the old version's
    object is deleted after commit through `store` (without one, or if that fails, by the hourly sweep).
    """
    replaced: list[str] = []
    with translated():
        async with db.connection() as conn, conn.transaction():
            row = await conn.fetchrow(QUERIES["mark_model_ready"], source_id, model)
            if row is not None and row["source_became_ready"]:
                swapped = await conn.fetch(QUERIES["swap_replaced_sources"], [source_id])
                replaced = [r["object_key"] for r in swapped]
    if store is not None:
        await drain_quietly(db, store, replaced)
    assert row is not None  # the statement always answers one row of counts
    return ReadyCheck(source_id, model, row["ready"], row["source_became_ready"], row["total"], row["embedded"])
