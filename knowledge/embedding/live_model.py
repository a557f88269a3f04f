"""The live embedding model per organization, and the switchover to a new one.

One `knowledge_settings` row names the live model of an organization that chose its own; exactly one
platform row names the default for everyone else. To change model:

1. `begin_switch`: check that the new model can embed (its key is present and one test call answers, so a
   mistyped or keyless model is refused before anything opens), register the model (and its partial HNSW
   index), record the running switch (its id is the handle of whoever runs it), and give every source in
   scope a pending readiness row under the new model; the old chunks keep serving.
2. re-embed each of those sources (`knowledge.switchover.reembed_source` or `run_switch`, or the Inngest
   fan-out), new sources included: a source registered during the switch is wanted under the new model
   too (`rescan_switch` lists it), so the flip waits for it.
3. `flip_live_model`: one row, one instant, only for the running switch and only when every source in
   scope is ready under the new model; the database checks that in the same statement that flips.
4. `drop_unwanted_chunks`: delete the old chunks that no live model and no running switch still needs.

`cancel_running_switch` closes a running switch and deletes the new model's chunks in one transaction under
the model's write lock (migrations/0073), which every write under a model takes, so no chunk of the
cancelled model survives; whoever runs the switch stops at its next batch (`ModelNotWantedError`) and ends
with `SwitchCancelledError`. A cancel and a flip of one switch happen one after the other, never both.

Scope: an organization's switch covers its own sources and the platform sources; the platform default's
switch covers the platform sources and those of every organization without its own row. This module must
never flip a model that is not ready, never reopen a cancelled switch, and never build an index name or a
dimension from caller text.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.embedding._switch_records import (
    FlipResult,
    LiveModel,
    RunningSwitch,
    SwitchPlan,
    SwitchStatus,
    WaitingSource,
)
from knowledge.embedding.registry import EMBEDDING_MODELS, Embedder, require_real_model
from knowledge.errors import (
    EmbeddingModelConflictError,
    NoLiveModelError,
    SwitchCancelledError,
    SwitchConflictError,
    SwitchNotReadyError,
    UnknownEmbeddingModelError,
)
from state.db import Database

__all__ = [
    "SWITCH_PROBE_TEXT",
    "FlipResult",
    "LiveModel",
    "RunningSwitch",
    "SwitchPlan",
    "SwitchStatus",
    "WaitingSource",
    "begin_switch",
    "cancel_running_switch",
    "cancel_switch",
    "check_can_embed",
    "drop_unwanted_chunks",
    "ensure_running",
    "flip_live_model",
    "live_model",
    "register_embedding_model",
    "rescan_switch",
    "running_switch",
    "switch_organizations",
    "switch_ready",
    "switch_state",
    "switch_status",
    "switch_waiting",
]


async def live_model(db: Database, organization_id: UUID | None) -> LiveModel:
    """The live model of an organization (its row, else the platform row); None asks for the platform's."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["live_model"], organization_id)
    if row is None:
        raise NoLiveModelError("no knowledge_settings row names a live embedding model, not even the platform row")
    return LiveModel(
        row["model_id"],
        row["dimensions"],
        row["platform_default"],
        fusion_method=row["fusion_method"],
        dense_weight=row["dense_weight"],
        lexical_weight=row["lexical_weight"],
    )


async def switch_organizations(db: Database, organization_id: UUID | None) -> list[UUID]:
    """The organizations whose live model a switch of the scope changes.

    An organization's switch changes its own; the platform default's (None) every organization without its own row.
    """
    if organization_id is not None:
        return [organization_id]
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["platform_following_organizations"])
    return [r["id"] for r in rows]


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
    require_real_model(new_model)  # a `test/*` model only in the test suite
    if embedder is not None:
        if embedder.model_id != new_model:
            raise ValueError(f"the embedder is {embedder.model_id!r}, not {new_model!r}")
        await check_can_embed(embedder)
        dimensions = embedder.dimensions if dimensions is None else dimensions
    await register_embedding_model(db, new_model, dimensions=dimensions)
    live = await live_model(db, organization_id)
    with translated():
        async with db.connection() as conn, conn.transaction():
            await conn.execute(QUERIES["lock_model_writes"], new_model)  # after a cancel's delete, never during
            running = await conn.fetchrow(QUERIES["running_switch"], organization_id)
            if running is None and live.model_id == new_model:
                return SwitchPlan(organization_id, live.model_id, new_model, (), already_live=True)
            if running is None:
                await conn.execute(QUERIES["start_switch"], organization_id, live.model_id, new_model)
                running = await conn.fetchrow(QUERIES["running_switch"], organization_id)  # ours, or a rival's
            if running is None or running["to_model"] != new_model:
                target = "another model" if running is None else running["to_model"]
                raise SwitchConflictError(
                    f"a switch of this scope to {target} is running; cancel it before switching to {new_model}"
                )
            rows = await conn.fetch(QUERIES["add_scope_model_rows"], organization_id, new_model)
    sources = tuple(sorted(r["source_id"] for r in rows))
    return SwitchPlan(organization_id, running["from_model"], new_model, sources, switch_id=running["id"])


async def rescan_switch(db: Database, switch_id: UUID) -> SwitchPlan:
    """The sources a running switch still has to re-embed, those added since it began included.

    Never reopens a switch: `SwitchCancelledError` when it was cancelled; `already_live` when it flipped.
    """
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["switch_by_id"], switch_id)
            if row is None:
                raise SwitchCancelledError(f"no switch {switch_id}; it was cancelled and its scope deleted")
            async with conn.transaction():
                await conn.execute(QUERIES["lock_model_writes"], row["to_model"])
                row = await conn.fetchrow(QUERIES["switch_by_id"], switch_id)  # read again under the lock
                if row is None or row["status"] != "running":
                    return _closed_plan(row, switch_id)
                rows = await conn.fetch(QUERIES["add_scope_model_rows"], row["organization_id"], row["to_model"])
    sources = tuple(sorted(r["source_id"] for r in rows))
    return SwitchPlan(row["organization_id"], row["from_model"], row["to_model"], sources, switch_id=switch_id)


async def switch_state(db: Database, switch_id: UUID) -> str:
    """`running`, `flipped` or `cancelled` (a switch whose row is gone went with its organization)."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["switch_by_id"], switch_id)
    return "cancelled" if row is None else str(row["status"])


async def ensure_running(db: Database, switch_id: UUID) -> None:
    """Return while the switch runs; `SwitchCancelledError` once it was cancelled (or flipped by another run)."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["switch_by_id"], switch_id)
    if row is None or row["status"] != "running":
        raise _closed_error(row, switch_id)


def _closed_plan(row: Any, switch_id: UUID) -> SwitchPlan:
    if row is not None and row["status"] == "flipped":
        return SwitchPlan(row["organization_id"], row["from_model"], row["to_model"], (), True, switch_id)
    raise _closed_error(row, switch_id)


def _closed_error(row: Any, switch_id: UUID) -> SwitchCancelledError:
    if row is None:
        return SwitchCancelledError(f"no switch {switch_id}; it was cancelled and its scope deleted")
    if row["status"] == "flipped":
        return SwitchCancelledError(f"the switch to {row['to_model']} was flipped by another run; nothing left to do")
    return SwitchCancelledError(
        f"the switch to {row['to_model']} was cancelled while it ran: {row['from_model']} stays live and the "
        f"chunks written under {row['to_model']} were deleted"
    )


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


async def switch_waiting(
    db: Database, organization_id: UUID | None, new_model: str, *, limit: int = 5
) -> list[WaitingSource]:
    """The sources in scope the flip waits for (not ready under `new_model`): failed first, then oldest pending."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["switch_waiting"], organization_id, new_model, limit)
    return [
        WaitingSource(
            r["source_id"],
            r["title"],
            r["source_status"],
            r["status"] or "missing",
            r["failure_reason"],
            r["pending_since"],
        )
        for r in rows
    ]


async def flip_live_model(
    db: Database,
    organization_id: UUID | None,
    new_model: str,
    *,
    drop_old: bool = True,
    switch_id: UUID | None = None,
) -> FlipResult:
    """Name `new_model` live for the scope in one row, only when every source in scope is ready under it.

    Only the running switch toward `new_model` (`switch_id`'s, when given) flips: a cancelled one raises
    `SwitchCancelledError`, and a cancel and a flip of one switch happen one after the other, never both.
    """
    before = await live_model(db, organization_id)
    with translated():
        async with db.connection() as conn, conn.transaction():
            switch = await conn.fetchrow(QUERIES["lock_running_switch"], organization_id, new_model)
            if switch is None or (switch_id is not None and switch["id"] != switch_id):
                if switch_id is None:
                    raise SwitchCancelledError(f"no switch of this scope to {new_model} is running; not flipped")
                row = await conn.fetchrow(QUERIES["switch_by_id"], switch_id)
                if row is not None and row["status"] == "flipped":
                    return FlipResult(organization_id, row["from_model"], new_model, 0)
                raise _closed_error(row, switch_id)
            flipped = await conn.fetchrow(QUERIES["flip_live_model"], organization_id, new_model)
            if flipped is None:
                status = await switch_status(db, organization_id, new_model)
                raise SwitchNotReadyError(
                    f"{status.ready} of {status.total} sources are ready under {new_model} "
                    f"({status.pending} pending, {status.failed} failed, {status.missing} missing); not flipped"
                )
            await conn.execute(QUERIES["finish_switch"], switch["id"], "flipped")
    dropped = await drop_unwanted_chunks(db, before.model_id) if drop_old and before.model_id != new_model else 0
    return FlipResult(organization_id, before.model_id, new_model, dropped)


async def running_switch(db: Database, organization_id: UUID | None) -> RunningSwitch | None:
    """The open switchover of a scope (an organization, or None for the platform default), if any."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["running_switch"], organization_id)
    if row is None:
        return None
    return RunningSwitch(row["organization_id"], row["from_model"], row["to_model"], row["started_at"], row["id"])


async def cancel_running_switch(db: Database, organization_id: UUID | None) -> tuple[RunningSwitch, int] | None:
    """Cancel the running switch of a scope; returns it and the new model's chunks deleted, or None if none ran.

    One transaction under the new model's write lock held exclusive: every write in flight under it has
    landed before the delete, and none lands after, so no chunk of the cancelled model stays where nothing
    wants it (the scope's sources, and the platform sources embedded for it).
    """
    switch = await running_switch(db, organization_id)
    if switch is None:
        return None
    with translated():
        async with db.connection() as conn, conn.transaction():
            await conn.execute(QUERIES["lock_model_drop"], switch.to_model)
            if await conn.fetchval(QUERIES["finish_switch"], switch.switch_id, "cancelled") is None:
                return None  # it flipped (or was cancelled) meanwhile
            row = await conn.fetchrow(QUERIES["drop_unwanted_chunks"], switch.to_model)
    return switch, int(row["chunks"]) if row is not None else 0


async def cancel_switch(db: Database, organization_id: UUID | None) -> int:
    """Stop the running switch of a scope and delete the new model's chunks nothing needs; returns them."""
    cancelled = await cancel_running_switch(db, organization_id)
    return 0 if cancelled is None else cancelled[1]


async def drop_unwanted_chunks(db: Database, model: str) -> int:
    """Delete the chunks of `model` that no live model and no running switch still needs; returns how many."""
    with translated():
        async with db.connection() as conn, conn.transaction():
            await conn.execute(QUERIES["lock_model_drop"], model)
            row = await conn.fetchrow(QUERIES["drop_unwanted_chunks"], model)
    return int(row["chunks"]) if row is not None else 0
