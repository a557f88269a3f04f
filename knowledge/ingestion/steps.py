"""The ingestion steps: register, extract and chunk, embed a batch, mark ready, mark failed.

upload or sync -> extract text -> chunk -> embed -> insert chunks -> mark the source ready

Each step is small, idempotent and safe to run twice, takes ids, and returns a small frozen record of ids
and counts, so an Inngest function can wrap each one as a step. A source is pinned per chunk to a model and
becomes ready under a model only when every chunk of that model holds its vector, checked in the one
statement that marks it. This module must never search, never fetch a URL, and never mark a half-embedded
source ready.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from typing import Any, NoReturn
from uuid import UUID

from pgvector import Vector

from knowledge._ingest_records import EmbeddedBatch, FailedMark, PreparedChunks, ReadyCheck, RegisteredSource
from knowledge._sql import QUERIES, translated
from knowledge.chunk import DEFAULT_CHUNK_TOKENS, DEFAULT_MAX_CHUNKS, DEFAULT_OVERLAP_TOKENS, Chunk, chunk_text
from knowledge.db_errors import EmbedderMismatchError, ModelNotWantedError, SourceNotFoundError
from knowledge.embed import Embedder
from knowledge.errors import EmptyDocumentError, KnowledgeError, SourceDeletingError
from knowledge.extract import ExtractLimits, extract_limits, extract_text_async
from knowledge.failures import failure_of, stored_reason
from knowledge.object_deletes import drain_quietly
from knowledge.objects import ObjectStore, object_key_for
from knowledge.review import Review, checked_review
from state.db import Connection, Database
from state.erasure_marks import guard_writes

__all__ = [
    "Announce",
    "EmbeddedBatch",
    "EmbedderLookup",
    "FailedMark",
    "PreparedChunks",
    "ReadyCheck",
    "RegisteredSource",
    "embed_batch",
    "mark_failed",
    "mark_ready",
    "model_wanted",
    "models_to_build",
    "prepare_chunks",
    "record_failure",
    "register_upload",
    "register_uri",
]

EmbedderLookup = Callable[[str], Embedder]
"""Model id -> embedder, e.g. `knowledge.embed.get_embedder`."""
Announce = Callable[[Connection, RegisteredSource], Awaitable[None]]
"""Called inside the registration's transaction for a pending source, so its event commits with it (the
service writes the ingestion event to the outbox, `state.outbox`)."""


async def register_upload(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    data: bytes,
    filename: str,
    title: str | None = None,
    media_type: str | None = None,
    owner: str | None = None,
    review_by: date | None = None,
    announce: Announce | None = None,
) -> RegisteredSource:
    """Store an uploaded document and register it; the same content twice in one scope is one source.

    `owner` and `review_by` (None: none, or keep what the source holds) follow the re-upload rule: the same
    content again with either sets it on the source it lands on.
    """
    return await _register(
        db, store, organization_id=organization_id, kind="upload", uri=None, data=data,
        filename=filename, title=title, media_type=media_type, review=checked_review(owner, review_by),
        announce=announce,
    )  # fmt: skip


async def register_uri(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    uri: str,
    data: bytes,
    title: str | None = None,
    media_type: str | None = None,
    filename: str | None = None,
    owner: str | None = None,
    review_by: date | None = None,
    announce: Announce | None = None,
) -> RegisteredSource:
    """Store the fetched bytes of a URI and register it; the same URI twice in one scope is one source.

    A new version carries over the live one's owner and review date unless `owner` or `review_by` is given.
    """
    if not uri.strip():
        raise ValueError("a URI-backed source needs a URI")
    review = checked_review(owner, review_by)
    name = filename or PurePosixPath(uri.split("?", 1)[0].rstrip("/")).name or "document"
    return await _register(
        db, store, organization_id=organization_id, kind="uri", uri=uri, data=data,
        filename=name, title=title, media_type=media_type, review=review, announce=announce,
    )  # fmt: skip


async def _register(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    kind: str,
    uri: str | None,
    data: bytes,
    filename: str,
    title: str | None,
    media_type: str | None,
    review: Review,
    announce: Announce | None = None,
) -> RegisteredSource:
    digest = hashlib.sha256(data).hexdigest()
    label = (title or PurePosixPath(filename).stem or uri or "document").strip()[:500] or "document"
    identity = uri if uri is not None else f"sha256:{digest}"
    new_id = uuid.uuid4()
    key = object_key_for(organization_id, new_id)
    args = (organization_id, kind, label, uri, key, digest, media_type, filename, len(data))
    # The object is written in the transaction that makes the row naming it (under the erasure guard), and
    # only when a row may be made: the same content again lands on its row without a write. A row made
    # concurrently sends the transaction back for it.
    stored = not await _already_registered(db, organization_id, identity, digest)
    superseded: list[str] = []
    put = _Put(store, key, data, media_type or "application/octet-stream")
    while True:
        try:
            registered, superseded = await _register_row(
                db, organization_id, identity, digest, args, review, new_id=new_id, put=put if stored else None,
                announce=announce,
            )  # fmt: skip
        except _ObjectNeeded:
            stored = True
            continue
        except BaseException:
            if stored:  # no row names the object: a refusal (e.g. `source_deleting`) leaves nothing behind
                await store.delete(key)
            raise
        break
    if stored and registered.source_id != new_id:  # the content landed on a row made meanwhile: ours is unused
        await store.delete(key)
    await drain_quietly(db, store, superseded)
    return registered


class _ObjectNeeded(Exception):
    """The registration must make a row, and its object was not written (rolled back, then retried)."""


@dataclass(frozen=True, slots=True)
class _Put:
    """The object a registration writes with its row."""

    store: ObjectStore
    key: str
    data: bytes
    content_type: str


async def _already_registered(db: Database, organization_id: UUID | None, identity: str, digest: str) -> bool:
    """Whether `identity` is registered with this content (live, or as its pending new version)."""
    with translated():
        async with db.connection() as conn:
            live = await conn.fetchrow(QUERIES["existing_version"], organization_id, identity)
    return live is not None and digest in (live["content_sha256"], live["next_sha256"])


async def _register_row(
    db: Database,
    organization_id: UUID | None,
    identity: str,
    digest: str,
    args: tuple[object, ...],
    review: Review,
    *,
    new_id: UUID,
    put: _Put | None,
    announce: Announce | None,
) -> tuple[RegisteredSource, list[str]]:
    """Make or find the row of one registration (writing `put` with it); answers it and superseded versions' keys."""
    superseded: list[str] = []
    stored = put is not None
    with translated():
        async with db.connection() as conn, conn.transaction():
            if organization_id is not None:  # the put too, under the erasure guard (state.erasure_marks)
                await guard_writes(conn, organization_id)
            inserted = None
            if put is not None:
                await put.store.put(put.key, put.data, content_type=put.content_type)
                inserted = await conn.fetchrow(QUERIES["insert_source"], *args, review.owner, review.review_by, new_id)
            outcome, replaces = "created", None
            if inserted is None:
                row, outcome, replaces = await _existing_or_new_version(
                    conn, organization_id, identity, digest, args, review,
                    new_id=new_id, stored=stored, superseded=superseded,
                )  # fmt: skip
                if outcome != "resync":  # the row this document landed on already existed
                    await conn.execute(QUERIES["set_sources_review"], [row["id"]], [review.owner], [review.review_by])
            else:
                row = {"id": inserted["id"], "status": inserted["status"]}
            if row["status"] != "failed":
                await conn.execute(QUERIES["ensure_wanted_models"], row["id"])
            models = tuple(r["embedding_model"] for r in await conn.fetch(QUERIES["models_to_build"], row["id"]))
            registered = RegisteredSource(
                source_id=row["id"], created=outcome in ("created", "resync"), status=row["status"], models=models,
                outcome=outcome, replaces=replaces,
            )  # fmt: skip
            if announce is not None and registered.status == "pending":
                await announce(conn, registered)
    return registered, superseded


async def _existing_or_new_version(
    conn: Connection,
    organization_id: UUID | None,
    identity: str,
    digest: str,
    args: tuple[object, ...],
    review: Review,
    *,
    new_id: UUID,
    stored: bool,
    superseded: list[str],
) -> tuple[dict[str, Any], str, UUID | None]:
    """The registered source of `identity`; for a URI whose content changed, a new version replacing it.

    The object keys of pending versions it drops are appended to `superseded` (queued by migrations/0098).
    """
    await conn.execute(QUERIES["lock_versions_of_identity"], organization_id, identity)  # a delete commits first
    live = await conn.fetchrow(QUERIES["existing_version"], organization_id, identity)
    if live is None:  # deleted between the conflict and the read, or never registered
        if not stored:
            raise _ObjectNeeded
        raise SourceNotFoundError(f"the source {identity!r} vanished while it was registered")
    if live["status"] == "deleting":
        raise SourceDeletingError(f"the knowledge source {live['id']} is being deleted; register it again afterwards")
    if live["content_sha256"] == digest:
        if live["next_id"] is not None:  # the latest sync says the live text: a pending newer one is stale
            superseded += [r["object_key"] for r in await conn.fetch(QUERIES["delete_replacement"], live["next_id"])]
        return {"id": live["id"], "status": live["status"]}, "unchanged", None
    if live["next_id"] is not None:
        if live["next_sha256"] == digest:  # this version is already registered
            return {"id": live["next_id"], "status": live["next_status"]}, "resync_pending", live["id"]
    if not stored:
        raise _ObjectNeeded
    if live["next_id"] is not None:  # a newer version supersedes the pending one
        superseded += [r["object_key"] for r in await conn.fetch(QUERIES["delete_replacement"], live["next_id"])]
    row = await conn.fetchrow(QUERIES["insert_replacement"], *args, live["id"], review.owner, review.review_by, new_id)
    assert row is not None
    return {"id": row["id"], "status": row["status"]}, "resync", live["id"]


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


async def mark_failed(db: Database, source_id: UUID, reason: str, *, model: str | None = None) -> FailedMark:
    """Fail the not-ready rows of `model` (every model when None), and the source if it is still pending."""
    text = stored_reason(reason)
    with translated():
        async with db.connection() as conn, conn.transaction():
            models = await conn.fetch(QUERIES["mark_models_failed"], source_id, model, text)
            failed = await conn.fetchval(QUERIES["mark_source_failed"], source_id, text)
    return FailedMark(source_id, failed is not None, tuple(r["embedding_model"] for r in models))


async def record_failure(db: Database, source_id: UUID, exc: KnowledgeError, model: str | None) -> str:
    """Mark the failure `exc` means for a source built under `model` (`knowledge.failures`); returns its reason."""
    failure = failure_of(exc, model)
    await mark_failed(db, source_id, failure.reason, model=failure.model)
    return failure.reason
