"""The live embedding model per organization, and the switchover to a new one.

One `knowledge_settings` row names the live model of an organization that chose its own; exactly one
platform row names the default for everyone else. To change model:

1. `begin_switch`: check that the new model can embed (its key is present and one test call answers, so a
   mistyped or keyless model is refused before anything opens), register the model (and its partial HNSW
   index), record the running switch, and give
   every source in scope a pending readiness row under the new model; the old chunks keep serving.
2. re-embed each of those sources (`reembed_source`, or the Inngest fan-out), new sources included:
   a source registered during the switch is wanted under the new model too.
3. `flip_live_model`: one row, one instant, and only when `switch_ready` says every source in scope is
   ready under the new model; the database checks that in the same statement that flips.
4. `drop_unwanted_chunks`: delete the old chunks that no live model and no running switch still needs.

Scope: an organization's switch covers its own sources and the platform sources; the platform default's
switch covers the platform sources and those of every organization without its own row. This module must
never flip a model that is not ready, and never build an index name or a dimension from caller text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from knowledge._pipeline import build_source_model
from knowledge._sql import QUERIES, translated
from knowledge.db_errors import EmbeddingModelConflictError, NoLiveModelError, SwitchConflictError, SwitchNotReadyError
from knowledge.embed import EMBEDDING_MODELS, Embedder
from knowledge.errors import UnknownEmbeddingModelError
from knowledge.ingest import ReadyCheck
from knowledge.objects import ObjectStore
from state.db import Database

__all__ = [
    "SWITCH_PROBE_TEXT",
    "FlipResult",
    "LiveModel",
    "RunningSwitch",
    "SwitchPlan",
    "SwitchStatus",
    "begin_switch",
    "cancel_switch",
    "check_can_embed",
    "drop_unwanted_chunks",
    "flip_live_model",
    "live_model",
    "reembed_source",
    "register_embedding_model",
    "running_switch",
    "switch_ready",
    "switch_status",
]


@dataclass(frozen=True, slots=True)
class LiveModel:
    """The model every search of a scope embeds its query with and filters chunks to."""

    model_id: str
    """The model id, e.g. `local/wordllama-l2-supercat-256`."""
    dimensions: int
    """Its vector length."""
    platform_default: bool
    """True when the platform row answered (the organization has no row of its own)."""


@dataclass(frozen=True, slots=True)
class SwitchPlan:
    """A started (or resumed) switchover: the sources to re-embed under the new model."""

    organization_id: UUID | None
    """The scope: an organization, or None for the platform default."""
    from_model: str
    """The model live when the switch started."""
    to_model: str
    """The new model."""
    source_ids: tuple[UUID, ...]
    """The sources in scope not yet ready under the new model."""
    already_live: bool = False
    """True when the new model is already live for the scope (nothing to do)."""


@dataclass(frozen=True, slots=True)
class SwitchStatus:
    """How far a switchover is: the sources in scope and their readiness under the new model."""

    organization_id: UUID | None
    """The scope."""
    model: str
    """The new model."""
    total: int
    """Sources in scope (failed sources are outside every scope)."""
    ready: int
    """Ready under the new model."""
    pending: int
    """Still being embedded."""
    failed: int
    """Failed under the new model: retry them, or the switch never flips."""
    missing: int
    """In scope with no readiness row yet (run `begin_switch` again to add them)."""

    @property
    def complete(self) -> bool:
        """Every source in scope is ready under the new model."""
        return self.ready == self.total


@dataclass(frozen=True, slots=True)
class RunningSwitch:
    """The open switchover of a scope."""

    organization_id: UUID | None
    """The scope: an organization, or None for the platform default."""
    from_model: str
    """The model live when it started (still live)."""
    to_model: str
    """The model it switches to."""
    started_at: datetime
    """When it opened."""


@dataclass(frozen=True, slots=True)
class FlipResult:
    """A flipped live model."""

    organization_id: UUID | None
    """The scope."""
    from_model: str
    """The model live before."""
    to_model: str
    """The model live now."""
    dropped_chunks: int
    """Old chunks deleted after the flip."""


async def live_model(db: Database, organization_id: UUID | None) -> LiveModel:
    """The live model of an organization (its row, else the platform row); None asks for the platform's."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["live_model"], organization_id)
    if row is None:
        raise NoLiveModelError("no knowledge_settings row names a live embedding model, not even the platform row")
    return LiveModel(row["model_id"], row["dimensions"], row["platform_default"])


async def register_embedding_model(db: Database, model_id: str, *, dimensions: int | None = None) -> str:
    """Register a model (dimension from the embedder registry unless given) and build its partial HNSW index."""
    if dimensions is None:
        if model_id not in EMBEDDING_MODELS:
            raise UnknownEmbeddingModelError(f"unknown embedding model {model_id!r}")
        dimensions = EMBEDDING_MODELS[model_id]
    with translated():
        async with db.connection() as conn:
            stored = await conn.fetchval(QUERIES["register_embedding_model"], model_id, dimensions)
            if stored != dimensions:
                raise EmbeddingModelConflictError(
                    f"{model_id} is registered with {stored} dimensions, not {dimensions}"
                )
            index_name: str = await conn.fetchval(QUERIES["ensure_model_index"], model_id)
    return index_name


SWITCH_PROBE_TEXT = "Can this model embed before a switch opens?"
"""The one text a switch embeds to check its model before it opens."""


async def check_can_embed(embedder: Embedder) -> None:
    """One test call: return when the model embeds a text, raise its error (key missing, refused...) otherwise."""
    await embedder.embed([SWITCH_PROBE_TEXT])


async def begin_switch(
    db: Database,
    organization_id: UUID | None,
    new_model: str,
    *,
    dimensions: int | None = None,
    embedder: Embedder | None = None,
) -> SwitchPlan:
    """Start (or resume) the switch of a scope to `new_model`; returns the sources to re-embed.

    With `embedder` (the new model's), one test call runs first, so a model that cannot embed is refused
    before the switch opens.
    """
    if embedder is not None:
        if embedder.model_id != new_model:
            raise ValueError(f"the embedder is {embedder.model_id!r}, not {new_model!r}")
        await check_can_embed(embedder)
        dimensions = embedder.dimensions if dimensions is None else dimensions
    await register_embedding_model(db, new_model, dimensions=dimensions)
    live = await live_model(db, organization_id)
    with translated():
        async with db.connection() as conn, conn.transaction():
            running = await conn.fetchrow(QUERIES["running_switch"], organization_id)
            if running is not None and running["to_model"] != new_model:
                raise SwitchConflictError(
                    f"a switch of this scope to {running['to_model']} is running; cancel it before "
                    f"switching to {new_model}"
                )
            if running is None and live.model_id == new_model:
                return SwitchPlan(organization_id, live.model_id, new_model, (), already_live=True)
            if running is None:
                await conn.execute(QUERIES["start_switch"], organization_id, live.model_id, new_model)
            from_model = running["from_model"] if running is not None else live.model_id
            rows = await conn.fetch(QUERIES["add_scope_model_rows"], organization_id, new_model)
    return SwitchPlan(organization_id, from_model, new_model, tuple(sorted(r["source_id"] for r in rows)))


async def reembed_source(
    db: Database, store: ObjectStore, source_id: UUID, embedder: Embedder, *, batch_size: int | None = None
) -> ReadyCheck:
    """Chunk (copying another model's chunk texts when complete), embed and mark one source under a model."""
    return await build_source_model(db, store, source_id, embedder, batch_size=batch_size)


async def switch_status(db: Database, organization_id: UUID | None, new_model: str) -> SwitchStatus:
    """Count the sources in scope by their readiness under `new_model`, sources added during the switch included."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["switch_counts"], organization_id, new_model)
    assert row is not None  # an aggregate always answers one row
    return SwitchStatus(
        organization_id, new_model, row["total"], row["ready"], row["pending"], row["failed"], row["missing"]
    )


async def switch_ready(db: Database, organization_id: UUID | None, new_model: str) -> bool:
    """Whether every source in scope is ready under `new_model`."""
    return (await switch_status(db, organization_id, new_model)).complete


async def flip_live_model(
    db: Database, organization_id: UUID | None, new_model: str, *, drop_old: bool = True
) -> FlipResult:
    """Name `new_model` live for the scope in one row, only when every source in scope is ready under it."""
    before = await live_model(db, organization_id)
    with translated():
        async with db.connection() as conn, conn.transaction():
            flipped = await conn.fetchrow(QUERIES["flip_live_model"], organization_id, new_model)
            if flipped is None:
                status = await switch_status(db, organization_id, new_model)
                raise SwitchNotReadyError(
                    f"{status.ready} of {status.total} sources are ready under {new_model} "
                    f"({status.pending} pending, {status.failed} failed, {status.missing} missing); not flipped"
                )
            await conn.execute(QUERIES["finish_switch"], organization_id, "flipped")
    dropped = await drop_unwanted_chunks(db, before.model_id) if drop_old and before.model_id != new_model else 0
    return FlipResult(organization_id, before.model_id, new_model, dropped)


async def running_switch(db: Database, organization_id: UUID | None) -> RunningSwitch | None:
    """The open switchover of a scope (an organization, or None for the platform default), if any."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["running_switch"], organization_id)
    if row is None:
        return None
    return RunningSwitch(row["organization_id"], row["from_model"], row["to_model"], row["started_at"])


async def cancel_switch(db: Database, organization_id: UUID | None) -> int:
    """Stop the running switch of a scope and delete the new model's chunks nothing needs; returns them."""
    with translated():
        async with db.connection() as conn:
            switch = await conn.fetchrow(QUERIES["running_switch"], organization_id)
            if switch is None:
                return 0
            await conn.execute(QUERIES["finish_switch"], organization_id, "cancelled")
    return await drop_unwanted_chunks(db, switch["to_model"])


async def drop_unwanted_chunks(db: Database, model: str) -> int:
    """Delete the chunks of `model` that no live model and no running switch still needs; returns how many."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["drop_unwanted_chunks"], model)
    return int(row["chunks"]) if row is not None else 0
