"""The durable steps that make one knowledge source ready under one model.

Two shapes, each returning only counts:
- the resumable chain, shared by `knowledge-ingest` and `knowledge-reembed-source`: `extract-and-chunk
  <model>`, one `embed <model> batch <n>` step per batch, then `mark-ready <model>`; a retry re-embeds only
  the batches not yet stored, which is what a paid, rate-limited provider needs;
- one step, `ingest <model>`, for a model that embeds on this machine (`knowledge-ingest` only): the bulk
  core extracts a large PDF over the process pool and writes chunks with their vectors in one COPY, and a
  retry redoes the whole source, which costs this machine's CPU and no provider's quota.

A non-retryable knowledge error (bad input) marks the source (or the model's readiness row) failed with its
reason at once and raises `NonRetriableError`; a retryable one propagates so the step is retried. A source
no longer wanted under the model (a switch toward it was cancelled) ends the chain at its next step with
`not_wanted`, neither ready nor failed. This module
must never hold ingestion logic beyond that sequencing.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from uuid import UUID

import inngest

from functions._services import Services, ServiceSlot
from knowledge.bulk import ingest_sources
from knowledge.db_errors import ModelNotWantedError
from knowledge.errors import ExtractionError, KnowledgeError
from knowledge.extract import extract_limits
from knowledge.ingest import embed_batch, mark_failed, mark_ready, model_wanted, prepare_chunks
from knowledge.pool import shared_pool

__all__ = [
    "SourceNotReadyError",
    "build_model_in_one_step",
    "build_model_steps",
    "embeds_locally",
    "fail_on_bad_input",
    "source_id_of",
]

T = TypeVar("T")


class SourceNotReadyError(KnowledgeError):
    """The source is not ready after every batch was embedded; the run retries."""

    code = "knowledge_source_not_ready"
    retryable = True


def source_id_of(data: object) -> UUID:
    """The `source_id` of an event's data, or a `NonRetriableError` (a bad event never becomes good)."""
    try:
        return UUID(str(data["source_id"]))  # type: ignore[index]
    except (KeyError, TypeError, ValueError) as exc:
        raise inngest.NonRetriableError(f"the event names no valid source_id: {exc}") from exc


async def fail_on_bad_input(
    services: Services, source_id: UUID, model: str | None, call: Callable[[], Awaitable[T]]
) -> T:
    """Run a core step; a non-retryable knowledge error fails the source with its reason and is not retried.

    `ModelNotWantedError` is no failure of the source (a switch toward the model was cancelled): it passes
    through for the step to end its chain.
    """
    try:
        return await call()
    except KnowledgeError as exc:
        if exc.retryable or isinstance(exc, ModelNotWantedError):
            raise
        reason = f"{exc.code}: {exc.message}"
        scope = None if isinstance(exc, ExtractionError) or model is None else model
        await mark_failed(services.db, source_id, reason, model=scope)
        services.metrics.ingestion_outcomes.labels(outcome="failed").inc()
        raise inngest.NonRetriableError(reason) from exc


async def build_model_steps(ctx: inngest.Context, slot: ServiceSlot, source_id: UUID, model: str) -> dict[str, Any]:
    """The steps of one model: extract and chunk, one step per embedding batch, mark ready.

    A step that finds the source no longer wanted under the model (a cancelled switch) ends the chain:
    nothing more is embedded or written, and the source is neither ready nor failed under the model.
    """

    async def extract_and_chunk() -> dict[str, Any]:
        services = slot.get()
        try:
            prepared = await fail_on_bad_input(
                services,
                source_id,
                model,
                lambda: prepare_chunks(
                    services.db,
                    services.object_store,
                    source_id,
                    model,
                    max_chunks=services.settings.max_chunks_per_source,
                    limits=extract_limits(services.settings),
                ),
            )
        except ModelNotWantedError:
            return {"not_wanted": True}
        batch_size = services.embedders.get(model).batch_size
        return {"chunks": prepared.chunk_count, "embedded": prepared.embedded_count, "batch_size": batch_size}

    prepared = await ctx.step.run(f"extract-and-chunk {model}", extract_and_chunk)
    if prepared.get("not_wanted"):
        return _not_wanted(model)
    remaining = prepared["chunks"] - prepared["embedded"]
    batches = math.ceil(remaining / max(prepared["batch_size"], 1))
    for n in range(batches + 1):  # one spare batch for rows a concurrent writer left behind
        if remaining <= 0:
            break

        async def embed() -> dict[str, Any]:
            services = slot.get()
            embedder = await fail_on_bad_input(
                services, source_id, model, _async(lambda: services.embedders.get(model))
            )
            try:
                batch = await fail_on_bad_input(
                    services, source_id, model, lambda: embed_batch(services.db, source_id, embedder)
                )
            except ModelNotWantedError:
                return {"not_wanted": True}
            return {"embedded": batch.embedded, "remaining": batch.remaining}

        result = await ctx.step.run(f"embed {model} batch {n}", embed)
        if result.get("not_wanted"):
            return _not_wanted(model)
        remaining = result["remaining"]

    async def ready() -> dict[str, Any]:
        db = slot.get().db
        check = await mark_ready(db, source_id, model)
        if not check.ready and not await model_wanted(db, source_id, model):
            return {"not_wanted": True}
        if not check.ready:
            raise SourceNotReadyError(
                f"{check.embedded_count} of {check.chunk_count} chunks of {model} hold a vector; embedding again"
            )
        return {"ready": True, "source_ready": check.source_ready, "chunks": check.chunk_count}

    marked = await ctx.step.run(f"mark-ready {model}", ready)
    if marked.get("not_wanted"):
        return _not_wanted(model)
    return {"model": model, "chunks": marked["chunks"], "ready": marked["ready"]}


def _not_wanted(model: str) -> dict[str, Any]:
    """What a chain stopped by a cancelled switch returns: not ready, not failed, nothing left written."""
    return {"model": model, "chunks": 0, "ready": False, "not_wanted": True}


def embeds_locally(services: Services, model: str) -> bool:
    """Whether `model` embeds on this machine (its embedder may run in the process pool).

    An unknown or unusable model answers False: the resumable chain fails the source with its reason.
    """
    try:
        return services.embedders.get(model).runs_in_pool()
    except KnowledgeError:
        return False


async def build_model_in_one_step(
    ctx: inngest.Context, slot: ServiceSlot, source_id: UUID, model: str
) -> dict[str, Any]:
    """One durable step, `ingest <model>`: the bulk core makes the source ready under a local model."""

    async def ingest() -> dict[str, Any]:
        services = slot.get()
        result = await ingest_sources(
            services.db, services.object_store, [source_id], embedders=services.embedders.get,
            pool=shared_pool(services.settings.ingest_workers),
            max_chunks=services.settings.max_chunks_per_source, models=(model,),
            limits=extract_limits(services.settings),
        )  # fmt: skip
        if not result.outcomes:
            raise inngest.NonRetriableError(f"no knowledge source {source_id}")
        outcome = result.outcomes[0]
        if outcome.status == "failed":
            services.metrics.ingestion_outcomes.labels(outcome="failed").inc()
            raise inngest.NonRetriableError(outcome.reason or "the source failed")
        if outcome.status == "pending":
            raise SourceNotReadyError(f"{source_id} is not ready under {model} after its ingestion; retrying")
        return {"ready": True, "chunks": outcome.chunks}

    built = await ctx.step.run(f"ingest {model}", ingest)
    return {"model": model, "chunks": built["chunks"], "ready": built["ready"]}


def _async(call: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    async def run() -> T:
        return call()

    return run
