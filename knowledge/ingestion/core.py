"""The one ingestion core: every caller makes sources ready through these sequences of named steps.

    ingest_source_steps:  plan -> per model: `ingest <model>` (a model that embeds on this machine: the
                          bulk core, one step) or `extract-and-chunk <model>`, `embed <model> batch <n>`...,
                          `mark-ready <model>` (a provider's model: resumable, one step per paid batch)
    build_model_steps:    one model of one source, either shape (a switchover's re-embed)
    ingest_batch_steps:   `ingest`: the bulk core over many sources at once (the CLI, the batch function)

Each sequence is a generator of `Step`s: it yields a step (a name and an async function of the
`Ingestion`), receives the step's small JSON result (ids and counts) or has its error thrown in, and
returns an outcome. Whoever drives it runs the steps: `run_steps` awaits each one here (`ingest_source`
and `ingest_batch`: the CLI, the in-process switchover, the benchmarks, the tests); the Inngest functions
drive the same generators with `ctx.step.run`, so each step is memoized and retried on its own, and a
step's code is entered from the driver, never from the core calling back into the interface.

Failures follow `knowledge.ingestion.failures` on every path: a non-retryable error is marked (the whole source for
an unreadable document, else the model's readiness row) and raised as `SourceFailedError` from the step;
thrown back into the sequence, it ends it with the outcome `failed` and the stored reason (a durable
driver makes it non-retriable instead). A retryable error propagates; a model no longer wanted (a
cancelled switch) ends its steps with `not_wanted`; a source deleted (or being deleted, `knowledge.ingestion.delete`)
while its steps run ends them with the outcome `deleted`, recording no failure. With `durable=True`, a
source left not ready raises `SourceNotReadyError` inside its step, for the engine to retry. This module
must never import Inngest, hold SQL, or mark a source ready except through `mark_ready` and the bulk core.
Every step runs in one span, `step_span` (`state.telemetry`), on either driver.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar
from uuid import UUID

from opentelemetry.trace import Span

from knowledge.documents.objects import ObjectStore
from knowledge.embedding.embedder import Embedder, EmbedderLookup
from knowledge.errors import KnowledgeError, ModelNotWantedError, SourceNotFoundError
from knowledge.ingestion._core_records import (
    BatchOutcome,
    Ingestion,
    IngestOutcome,
    Json,
    SourceNotReadyError,
    Step,
    Steps,
)
from knowledge.ingestion.bulk import BulkResult, Progress, ingest_sources
from knowledge.ingestion.delete import was_deleted
from knowledge.ingestion.failures import SourceFailedError, fails_document
from knowledge.ingestion.sources import get_source
from knowledge.ingestion.steps import (
    ReadyCheck,
    embed_batch,
    mark_ready,
    model_wanted,
    models_to_build,
    prepare_chunks,
    record_failure,
)
from state import telemetry
from state.db import Database

__all__ = [
    "BatchOutcome",
    "IngestOutcome",
    "Ingestion",
    "SourceNotReadyError",
    "Step",
    "Steps",
    "build_model_steps",
    "build_source_model",
    "builds_in_one_step",
    "ingest_batch",
    "ingest_batch_steps",
    "ingest_source",
    "ingest_source_steps",
    "run_steps",
    "step_span",
]

T = TypeVar("T")
R = TypeVar("R")


def builds_in_one_step(embedders: EmbedderLookup, model: str) -> bool:
    """Whether `model` embeds on this machine (the bulk core, one step); else the resumable shape.

    An unknown or unusable model answers False: the resumable shape fails the model with its reason.
    """
    try:
        return embedders(model).runs_in_pool()
    except KnowledgeError:
        return False


async def run_steps(steps: Steps[R], kit: Ingestion, *, record: list[str] | None = None) -> R:
    """Drive a sequence here: await each step at once (its error thrown back in); return the outcome."""
    try:
        step = next(steps)
        while True:
            if record is not None:
                record.append(step.name)
            try:
                with step_span(step.name):
                    result = await step.fn(kit)
            except Exception as exc:  # the sequence decides; what it does not catch leaves through `throw`
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def step_span(name: str) -> AbstractContextManager[Span]:
    """The span of one ingestion step, whoever drives it: `ingest_step <verb>` with the step's full name."""
    return telemetry.span(f"ingest_step {name.split(' ', 1)[0]}", {"ac.ingest.step": name})


def ingest_source_steps(
    source_id: UUID, *, models: Collection[str] | None = None, durable: bool = False
) -> Steps[IngestOutcome]:
    """Make a source ready under every model it still needs (only `models`, when given); see the module doc."""

    async def plan(k: Ingestion) -> Json:
        try:
            source = await get_source(k.db, source_id)
        except SourceNotFoundError:
            deleted = await was_deleted(k.db, source_id)
            return {"status": "deleted" if deleted else "missing", "models": []}
        if source.status == "deleting":
            return {"status": "deleted", "models": []}
        if source.status == "failed":
            return {"status": "failed", "models": []}
        wanted = [m for m in await models_to_build(k.db, source_id) if models is None or m in models]
        # Decided here, so every replay of a durable run takes the same steps.
        one_step = [m for m in wanted if builds_in_one_step(k.embedders, m)]
        return {"status": source.status, "models": wanted, "one_step": one_step}

    planned = yield Step("plan", plan)
    if planned["status"] == "deleted":
        return IngestOutcome(source_id, (), status="deleted")
    if planned["status"] in ("missing", "failed"):
        return IngestOutcome(source_id, (), status="skipped" if planned["status"] == "failed" else "missing")
    built: list[Json] = []
    try:
        for model in planned["models"]:
            one_step = model in planned.get("one_step", ())  # a run planned before the list existed has none
            built.append((yield from build_model_steps(source_id, model, one_step=one_step, durable=durable)))
            if built[-1].get("deleted"):
                return IngestOutcome(source_id, (), status="deleted", built=tuple(built))
    except SourceFailedError as exc:
        ready = tuple(b["model"] for b in built if b["ready"])
        return IngestOutcome(source_id, ready, exc.message, status="failed", built=tuple(built))
    ready = tuple(b["model"] for b in built if b["ready"])
    return IngestOutcome(source_id, ready, None, built[-1]["chunks"] if built else 0, built=tuple(built))


async def ingest_source(
    kit: Ingestion, source_id: UUID, *, models: Collection[str] | None = None, record: list[str] | None = None
) -> IngestOutcome:
    """`ingest_source_steps` run here; `record` collects the names of the steps run."""
    return await run_steps(ingest_source_steps(source_id, models=models), kit, record=record)


def build_model_steps(source_id: UUID, model: str, *, one_step: bool, durable: bool = False) -> Steps[Json]:
    """Make one source ready under one model, in one bulk step or the resumable steps."""
    if one_step:
        return (yield from _one_step(source_id, model, durable))
    return (yield from _resumable(source_id, model, durable))


async def _failing(k: Ingestion, source_id: UUID, model: str, call: Callable[[], Awaitable[T]]) -> T:
    """`call()`; an error that fails the document is marked (`knowledge.ingestion.failures`) and raised as failed."""
    try:
        return await call()
    except KnowledgeError as exc:
        if not fails_document(exc):
            raise
        raise SourceFailedError(await record_failure(k.db, source_id, exc, model)) from exc


async def _embedder(k: Ingestion, source_id: UUID, model: str) -> Embedder:
    async def lookup() -> Embedder:
        return k.embedders(model)

    return await _failing(k, source_id, model, lookup)


def _deleted(model: str) -> Json:
    """What a build stopped by a delete of its source returns: not ready, not failed, nothing to keep."""
    return {"model": model, "chunks": 0, "ready": False, "deleted": True}


async def _gone(k: Ingestion, source_id: UUID) -> bool:
    """Whether the source is deleted or being deleted (`knowledge.ingestion.delete`)."""
    try:
        return (await get_source(k.db, source_id)).status == "deleting"
    except SourceNotFoundError:
        return True


def _not_wanted(model: str) -> Json:
    """What a build stopped by a cancelled switch returns: not ready, not failed, nothing left written."""
    return {"model": model, "chunks": 0, "ready": False, "not_wanted": True}


def _resumable(source_id: UUID, model: str, durable: bool) -> Steps[Json]:
    """`extract-and-chunk`, one `embed ... batch <n>` per batch, `mark-ready`: a retry redoes only what is left."""

    async def extract_and_chunk(k: Ingestion) -> Json:
        try:
            prepared = await _failing(
                k, source_id, model,
                lambda: prepare_chunks(k.db, k.store, source_id, model, max_chunks=k.max_chunks, limits=k.limits),
            )  # fmt: skip
        except ModelNotWantedError:
            return {"not_wanted": True}
        except SourceNotFoundError:
            return {"deleted": True}
        batch_size = k.batch_size or (await _embedder(k, source_id, model)).batch_size
        return {"chunks": prepared.chunk_count, "embedded": prepared.embedded_count, "batch_size": batch_size}

    async def embed(k: Ingestion) -> Json:
        embedder = await _embedder(k, source_id, model)
        try:
            batch = await _failing(
                k, source_id, model, lambda: embed_batch(k.db, source_id, embedder, batch_size=k.batch_size)
            )
        except ModelNotWantedError:
            return {"not_wanted": True}
        except SourceNotFoundError:
            return {"deleted": True}
        return {"embedded": batch.embedded, "remaining": batch.remaining}

    async def ready(k: Ingestion) -> Json:
        check = await mark_ready(k.db, source_id, model, store=k.store)
        if not check.source_ready and await _gone(k, source_id):
            return {"deleted": True}
        if not check.ready and not await model_wanted(k.db, source_id, model):
            return {"not_wanted": True}
        if not check.ready and durable:
            raise SourceNotReadyError(
                f"{check.embedded_count} of {check.chunk_count} chunks of {model} hold a vector; embedding again"
            )
        return {"ready": check.ready, "source_ready": check.source_ready, "chunks": check.chunk_count}

    prepared = yield Step(f"extract-and-chunk {model}", extract_and_chunk)
    if prepared.get("deleted"):
        return _deleted(model)
    if prepared.get("not_wanted"):
        return _not_wanted(model)
    remaining = prepared["chunks"] - prepared["embedded"]
    batches = math.ceil(remaining / max(prepared["batch_size"], 1))
    for n in range(batches + 1):  # one spare batch for rows a concurrent writer left behind
        if remaining <= 0:
            break
        result = yield Step(f"embed {model} batch {n}", embed)
        if result.get("deleted"):
            return _deleted(model)
        if result.get("not_wanted"):
            return _not_wanted(model)
        remaining = result["remaining"]
    marked = yield Step(f"mark-ready {model}", ready)
    if marked.get("deleted"):
        return _deleted(model)
    if marked.get("not_wanted"):
        return _not_wanted(model)
    return {"model": model, "chunks": marked["chunks"], "ready": marked["ready"]}


def _one_step(source_id: UUID, model: str, durable: bool) -> Steps[Json]:
    """One step, `ingest <model>`: the bulk core makes the source ready under a model that embeds here."""

    async def build_model_in_one_step(k: Ingestion) -> Json:
        result = await ingest_sources(
            k.db, k.store, [source_id], embedders=k.embedders, pool=k.pool, max_chunks=k.max_chunks,
            models=(model,), limits=k.limits,
        )  # fmt: skip
        if not result.outcomes or (result.outcomes[0].status != "ready" and await _gone(k, source_id)):
            return {"deleted": True}  # deleted since the plan (or while it was written): nothing to mark
        outcome = result.outcomes[0]
        if outcome.status == "failed":  # the bulk core marked it, through the same taxonomy
            raise SourceFailedError(outcome.reason or "ingestion failed")
        if outcome.status == "pending":
            if durable:
                raise SourceNotReadyError(f"{source_id} is not ready under {model} after its ingestion; retrying")
            return {"ready": False, "chunks": 0}
        return {"ready": True, "chunks": outcome.chunks}

    built = yield Step(f"ingest {model}", build_model_in_one_step)
    if built.get("deleted"):
        return _deleted(model)
    return {"model": model, "chunks": built["chunks"], "ready": built["ready"]}


async def build_source_model(
    db: Database, store: ObjectStore, source_id: UUID, embedder: Embedder, *, batch_size: int | None = None
) -> ReadyCheck:
    """The resumable steps of one source under `embedder`'s model, run here; what marking it ready found."""
    kit = Ingestion(db, store, lambda _model: embedder, batch_size=batch_size)
    await run_steps(_resumable(source_id, embedder.model_id, False), kit)
    return await mark_ready(db, source_id, embedder.model_id, store=store)  # idempotent: answers the row as it stands


def ingest_batch_steps(
    source_ids: Sequence[UUID], *, durable: bool = False, on_progress: Progress | None = None
) -> Steps[BatchOutcome]:
    """One step, `ingest`: the bulk core over many sources; each unreadable one fails with its own reason."""
    held: list[BulkResult] = []

    async def ingest(k: Ingestion) -> Json:
        result = await ingest_sources(
            k.db, k.store, source_ids, embedders=k.embedders, pool=k.pool, max_chunks=k.max_chunks,
            limits=k.limits, on_progress=on_progress,
        )  # fmt: skip
        held.append(result)
        counts = {status: result.count(status) for status in ("ready", "failed", "unchanged", "pending")}
        if counts["pending"] and durable:
            raise SourceNotReadyError(f"{counts['pending']} source(s) are not ready after the batch; retrying")
        seconds = {"extract": result.extract_s, "embed": result.embed_s, "write": result.write_s}
        return {**counts, "seconds": {stage: round(value, 3) for stage, value in seconds.items()}}

    out = dict((yield Step("ingest", ingest)))
    seconds = out.pop("seconds")
    return BatchOutcome(out, seconds, held[-1] if held else None)


async def ingest_batch(
    kit: Ingestion, source_ids: Sequence[UUID], *, on_progress: Progress | None = None
) -> BatchOutcome:
    """`ingest_batch_steps` run here."""
    return await run_steps(ingest_batch_steps(source_ids, on_progress=on_progress), kit)
