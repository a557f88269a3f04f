"""Bulk ingestion: many sources planned, extracted, chunked, embedded and written in a few statements.

    plan (one query) -> per wave of documents: read the bytes -> extract and chunk (the pool's workers, or
    one thread) -> embed (spread over the workers when the model allows) -> one transaction: COPY chunks
    and vectors into a staging table, merge them into place under the unique key, mark ready

A source is ready only when the statement that marks it finds every staged chunk in place with its vector;
chunks and vectors arrive together, so no chunk row is ever rewritten by an UPDATE. A crash anywhere
loses at most the wave in flight, whose transaction rolls back; a rerun merges under the unique key, so no
chunk is duplicated or lost. A document that can never be read fails itself with its reason, never its
wave; a fault that may pass (the database, the object store, a provider outage) propagates and leaves the
sources pending for a retry or the sweep (`knowledge.ingestion.failures` tells one from the other, on every path). A
write takes the model's write lock and writes only the sources still wanted under the model (a switch
cancelled meanwhile wants none), so a cancel never races it into leaving chunks behind. This module must never
mark a source ready except through `mark_staged_ready`, and never search.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.documents.chunk import DEFAULT_CHUNK_TOKENS, DEFAULT_MAX_CHUNKS, chunk_text
from knowledge.documents.extract import ExtractLimits, extract_limits
from knowledge.documents.objects import ObjectStore
from knowledge.embedding.embedder import Embedder, EmbedderLookup, Embeddings
from knowledge.errors import EmptyDocumentError, KnowledgeError, KnowledgeInputError
from knowledge.ingestion._step_records import BulkResult, SourceOutcome
from knowledge.ingestion.failing import record_failure
from knowledge.ingestion.failures import fails_document
from knowledge.ingestion.object_deletes import drain_quietly
from knowledge.ingestion.pool import (
    POOLED_PDF_BYTES,
    Failure,
    IngestPool,
    Prepared,
    extract_pooled,
    prepare_document,
    prepare_documents,
)
from state.db import Database

__all__ = ["BulkResult", "Progress", "SourceOutcome", "ingest_sources"]

Progress = Callable[[int, int], None]
"""Called after each written wave with (documents finished so far, chunks written so far)."""

_STAGING_COLUMNS = ("source_id", "ordinal", "text", "tokens", "embedding")
IN_PROCESS_BYTES = 4 * 1024 * 1024
"""A document larger than this that is not a paged PDF is prepared in a thread here, not in a worker: the
pool would pickle and unpickle its bytes (two more copies in memory) for no parallelism."""
WRITE_CHUNKS = 1_000
"""Chunks per write transaction (a source's chunks are never split): parts of a wave write concurrently."""


def _parts(prepared: dict[UUID, Prepared], limit: int) -> list[dict[UUID, Prepared]]:
    """`prepared` cut in order into groups of whole sources holding about `limit` chunks each."""
    parts: list[dict[UUID, Prepared]] = [{}]
    size = 0
    for source_id, p in prepared.items():
        if size and size + len(p.texts) > limit:
            parts.append({})
            size = 0
        parts[-1][source_id] = p
        size += len(p.texts)
    return [part for part in parts if part]


async def ingest_sources(
    db: Database,
    store: ObjectStore,
    source_ids: Sequence[UUID],
    *,
    embedders: EmbedderLookup,
    pool: IngestPool | None = None,
    max_chunks: int = DEFAULT_MAX_CHUNKS,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    limits: ExtractLimits | None = None,
    wave_documents: int = 500,
    on_progress: Progress | None = None,
    models: Collection[str] | None = None,
) -> BulkResult:
    """Make many sources ready under every model they need; each unreadable one fails with its own reason.

    With `models`, only those of the needed models are built; a source that needs none of them is
    `unchanged` here (its other models are another run's work). `limits` defaults to the settings' bounds.
    """
    with translated():
        async with db.connection() as conn:
            planned = await conn.fetch(QUERIES["bulk_plan"], list(dict.fromkeys(source_ids)))
    # A source being deleted (`knowledge.ingestion.delete`) is no work: it answers no outcome, as a deleted one.
    rows = {r["id"]: r for r in planned if r["status"] != "deleting"}
    result = BulkResult()
    final: dict[UUID, SourceOutcome] = {}
    by_model: dict[str, list[Any]] = {}
    for row in rows.values():
        needed = [m for m in row["models"] if models is None or m in models]
        if row["status"] == "failed":
            final[row["id"]] = SourceOutcome(row["id"], "failed", row["failure_reason"])
        elif not needed:
            done = row["status"] == "ready" or models is not None
            final[row["id"]] = SourceOutcome(row["id"], "unchanged" if done else "pending")
        for model in needed if row["status"] != "failed" else ():
            by_model.setdefault(model, []).append(row)
    bounds = (limits or extract_limits()).with_chunk_cap(max_chunks, chunk_tokens)
    run = _Run(db, store, pool, result, final, max_chunks, chunk_tokens, bounds, on_progress)
    for model, model_rows in by_model.items():
        await run.model(model, model_rows, embedders, wave_documents)
    result.outcomes = [
        final.get(sid) or SourceOutcome(sid, "pending") for sid in dict.fromkeys(source_ids) if sid in rows
    ]
    return result


@dataclass
class _Run:
    db: Database
    store: ObjectStore
    pool: IngestPool | None
    result: BulkResult
    final: dict[UUID, SourceOutcome]
    max_chunks: int
    chunk_tokens: int
    limits: ExtractLimits
    on_progress: Progress | None
    done: int = 0
    chunks: int = 0

    async def model(self, model: str, rows: list[Any], embedders: EmbedderLookup, wave_documents: int) -> None:
        try:
            embedder = embedders(model)
        except KnowledgeInputError as exc:  # an unknown model; a keyless one (a runtime error) stops the run
            for row in rows:
                await self.fail(row["id"], exc, model)
            return
        # Writes overlap the next waves' extraction and embedding; one write per worker may run at once, so
        # the HNSW inserts of two waves use two cores once the embedding is done.
        writing: list[asyncio.Task[None]] = []
        in_flight = self.pool.workers if self.pool is not None else 1
        try:
            for start in range(0, len(rows), wave_documents):
                wave = rows[start : start + wave_documents]
                prepared = await self.prepare(wave)
                vectors = await self.embed(embedder, prepared)
                for part in _parts(prepared, WRITE_CHUNKS):
                    while len(writing) >= in_flight:
                        await writing.pop(0)
                    writing.append(asyncio.create_task(self.write(model, part, vectors)))
            while writing:
                await writing.pop(0)
        finally:
            for task in writing:
                task.cancel()

    async def prepare(self, wave: list[Any]) -> dict[UUID, Prepared]:
        started = time.perf_counter()
        gate = asyncio.Semaphore(16)

        async def read(key: str) -> bytes:
            async with gate:
                return await self.store.get(key)

        blobs = await asyncio.gather(*(read(row["object_key"]) for row in wave))
        results: dict[UUID, Prepared | Failure] = {}
        small: list[tuple[Any, bytes]] = []
        for row, data in zip(wave, blobs, strict=True):
            if self.pool is not None and b"%PDF-" in data[:1024] and len(data) >= POOLED_PDF_BYTES:
                results[row["id"]] = await self.prepare_large_pdf(row, data)
            elif self.pool is not None and len(data) > IN_PROCESS_BYTES:
                # One core chunks one document either way; a worker would only add two copies of it.
                results[row["id"]] = await asyncio.to_thread(
                    prepare_document, data, row["media_type"], row["filename"],
                    self.limits, self.chunk_tokens, self.max_chunks,
                )  # fmt: skip
            else:
                small.append((row, data))
        docs = [(data, row["media_type"], row["filename"]) for row, data in small]
        args = (self.limits, self.chunk_tokens, self.max_chunks)
        if self.pool is None:
            outs = await asyncio.to_thread(prepare_documents, docs, *args)
        else:
            step = max(1, min(64, -(-len(docs) // (self.pool.workers * 2))))
            parts = await asyncio.gather(
                *(self.pool.run(prepare_documents, docs[i : i + step], *args) for i in range(0, len(docs), step))
            )
            outs = [out for part in parts for out in part]
        for (row, _), out in zip(small, outs, strict=True):
            results[row["id"]] = out
        prepared: dict[UUID, Prepared] = {}
        for source_id, out in results.items():
            if isinstance(out, Failure):
                error = out.raised()
                if not fails_document(error):
                    raise error
                await self.fail(source_id, error, None)
            else:
                prepared[source_id] = out
        self.result.extract_s += time.perf_counter() - started
        return prepared

    async def prepare_large_pdf(self, row: Any, data: bytes) -> Prepared | Failure:
        try:
            extracted = await extract_pooled(
                self.pool, data, media_type=row["media_type"], filename=row["filename"], limits=self.limits
            )
            chunks = await asyncio.to_thread(
                chunk_text, extracted.text, size=self.chunk_tokens, max_chunks=self.max_chunks
            )
        except KnowledgeInputError as exc:
            return Failure.of(exc)
        if not chunks:
            return Failure.of(EmptyDocumentError.because("the document contains no text to chunk"))
        return Prepared([c.text for c in chunks], [c.tokens for c in chunks])

    async def embed(self, embedder: Embedder, prepared: dict[UUID, Prepared]) -> dict[UUID, Embeddings]:
        started = time.perf_counter()
        texts = [text for p in prepared.values() for text in p.texts]
        try:
            flat = await (self.pool.embed(embedder, texts) if self.pool else embedder.embed(texts))
        except KnowledgeError as exc:
            if not fails_document(exc):
                raise
            return await self.embed_one_by_one(embedder, prepared)  # find the source that cannot be embedded
        vectors: dict[UUID, Embeddings] = {}
        offset = 0
        for source_id, p in prepared.items():
            vectors[source_id] = flat[offset : offset + len(p.texts)]
            offset += len(p.texts)
        self.result.embed_s += time.perf_counter() - started
        return vectors

    async def embed_one_by_one(self, embedder: Embedder, prepared: dict[UUID, Prepared]) -> dict[UUID, Embeddings]:
        vectors: dict[UUID, Embeddings] = {}
        for source_id, p in list(prepared.items()):
            try:
                vectors[source_id] = await embedder.embed(p.texts)
            except KnowledgeError as exc:
                if not fails_document(exc):
                    raise
                del prepared[source_id]
                await self.fail(source_id, exc, embedder.model_id)
        return vectors

    async def write(self, model: str, prepared: dict[UUID, Prepared], vectors: dict[UUID, Embeddings]) -> None:
        started = time.perf_counter()
        records = [
            (source_id, ordinal, text, tokens, vectors[source_id][ordinal])
            for source_id, p in prepared.items()
            if source_id in vectors
            for ordinal, (text, tokens) in enumerate(zip(p.texts, p.tokens, strict=True))
        ]
        ready: list[UUID] = []
        unwanted: list[UUID] = []
        replaced: list[str] = []
        if records:
            with translated():
                async with self.db.connection() as conn, conn.transaction():
                    await conn.execute(QUERIES["lock_model_writes"], model)
                    await conn.execute(QUERIES["create_chunk_staging"])
                    await conn.copy_records_to_table(
                        "knowledge_chunk_staging", records=records, columns=_STAGING_COLUMNS
                    )
                    # A cancel stopped wanting these under the model while they were embedded: write none.
                    staged = list(prepared)
                    gone = await conn.fetch(QUERIES["drop_unwanted_staged"], model, staged)
                    unwanted = [r["source_id"] for r in gone]
                    await conn.execute(QUERIES["merge_staged_chunks"], model)
                    await conn.execute(QUERIES["delete_unstaged_chunks"], model)
                    marked = await conn.fetchrow(QUERIES["mark_staged_ready"], model)
                    assert marked is not None  # the statement always answers one row
                    ready = list(marked["models_ready"])
                    if marked["sources_ready"]:
                        swapped = await conn.fetch(QUERIES["swap_replaced_sources"], list(marked["sources_ready"]))
                        replaced = [r["object_key"] for r in swapped]
            await drain_quietly(self.db, self.store, replaced)  # the replaced versions' objects, after commit
        for source_id in ready:
            self.final[source_id] = SourceOutcome(source_id, "ready", None, len(prepared[source_id].texts))
        for source_id in unwanted:  # not ready and not failed: another model may have made it ready already
            self.final.setdefault(source_id, SourceOutcome(source_id, "unchanged"))
        self.done += len(prepared)
        self.chunks += len(records)
        self.result.write_s += time.perf_counter() - started
        if self.on_progress is not None:
            self.on_progress(self.done, self.chunks)

    async def fail(self, source_id: UUID, exc: KnowledgeError, model: str | None) -> None:
        reason = await record_failure(self.db, source_id, exc, model)  # the one taxonomy: knowledge.ingestion.failures
        self.final[source_id] = SourceOutcome(source_id, "failed", reason)
        self.done += 1
