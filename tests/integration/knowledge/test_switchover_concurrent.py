"""Switchovers that end clean (issue 21): a cancel stops the re-embedding at the next batch and leaves no chunk
of the cancelled model; uploads made during a switch are built under the new model too, so it flips; a
pending source that cannot be read fails on its own and never stops the switch. The gate embedder acts
while one of its batches is in flight, as another process would."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from knowledge._sql import QUERIES
from knowledge.embedding.live_model import (
    begin_switch,
    cancel_running_switch,
    cancel_switch,
    flip_live_model,
    live_model,
    rescan_switch,
    running_switch,
    switch_state,
)
from knowledge.errors import ModelNotWantedError, SwitchCancelledError
from knowledge.ingestion.bulk import ingest_sources
from knowledge.ingestion.registration import register_upload
from knowledge.ingestion.steps import prepare_chunks
from knowledge.search import search
from knowledge.switchover import run_switch
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, GATE, GateEmbedder, Kit, chunk_counts
from tests.support import eventually

NOTHING = {"chunks": 0, "rows": 0, "unwanted": 0}
BROKEN_PDF = b"%PDF-1.4 this is not a PDF"


@pytest.fixture
def gate(kit: Kit) -> type[GateEmbedder]:
    GateEmbedder.reset()
    kit.embedders[GATE] = GateEmbedder()
    return GateEmbedder


async def _scope(kit: Kit, org: UUID, *, own: int = 6, platform: int = 2) -> list[UUID]:
    """An organization's ready documents and platform ones, one chunk each (so one gate batch each)."""
    sources = [await kit.ingest(org, f"Lifecycle stage {n}: the account moves on.") for n in range(own)]
    return sources + [await kit.ingest(None, f"Platform pricing page {n}.") for n in range(platform)]


async def _models(db: Database, sources: list[UUID]) -> dict[UUID, set[str]]:
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT source_id, array_agg(DISTINCT embedding_model) AS models FROM agent.knowledge_chunks "
            "WHERE source_id = ANY($1::uuid[]) GROUP BY source_id",
            sources,
        )
    return {r["source_id"]: set(r["models"]) for r in rows}


async def _status(db: Database, source: UUID) -> tuple[str, str | None]:
    async with db.connection() as conn:
        row = await conn.fetchrow("SELECT status, failure_reason FROM agent.knowledge_sources WHERE id = $1", source)
    assert row is not None
    return row["status"], row["failure_reason"]


async def _until_blocked(db: Database, task: asyncio.Task[object]) -> None:
    """Wait until `task`'s statement waits on a lock (or the task ended, when nothing made it wait)."""

    async def blocked_or_done() -> bool:
        if task.done():
            return True
        async with db.connection() as conn:
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        return bool(waiting)

    await eventually(blocked_or_done, "the statement neither waited on a lock nor finished")


async def test_a_cancel_during_a_switch_stops_it_at_the_next_batch_and_leaves_no_chunk_of_the_cancelled_model(
    kit: Kit, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    sources = await _scope(kit, org)
    plan = await begin_switch(kit.db, org, GATE, embedder=kit.lookup(GATE))
    cancelled: list[object] = []

    async def cancel() -> None:  # while the third of eight re-embeds is in flight
        cancelled.append(await cancel_running_switch(kit.db, org))

    gate.actions[3] = cancel
    with pytest.raises(SwitchCancelledError, match="cancelled while it ran"):
        await run_switch(kit.db, kit.store, plan, embedders=kit.lookup)

    assert cancelled and cancelled[0] is not None
    assert gate.batches() == 3, "the batch in flight at the cancel is the last one embedded"
    assert await chunk_counts(kit.db, GATE) == NOTHING, "no chunk or readiness row of the cancelled model"
    assert await _models(kit.db, sources) == {s: {FAKE} for s in sources}, "the old chunks keep serving"
    assert (await live_model(kit.db, org)).model_id == FAKE
    assert await switch_state(kit.db, plan.switch_id) == "cancelled"  # type: ignore[arg-type]
    with pytest.raises(SwitchCancelledError):
        await rescan_switch(kit.db, plan.switch_id)  # type: ignore[arg-type]
    assert await running_switch(kit.db, org) is None, "a rescan never reopens a cancelled switch"


async def test_uploads_during_a_switch_are_built_under_the_new_model_too_and_the_switch_flips(
    kit: Kit, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    sources = await _scope(kit, org, own=4, platform=1)
    plan = await begin_switch(kit.db, org, GATE, embedder=kit.lookup(GATE))
    late: list[UUID] = []

    async def uploads() -> None:  # twenty uploads arrive while the second re-embed is in flight
        for n in range(20):
            late.append(await kit.register(org, f"Upload {n} during the switch: renewal terms {n}."))

    gate.actions[2] = uploads
    flipped = await run_switch(kit.db, kit.store, plan, embedders=kit.lookup)

    assert (flipped.from_model, flipped.to_model, flipped.dropped_chunks) == (FAKE, GATE, 24)
    assert await switch_state(kit.db, plan.switch_id) == "flipped"  # type: ignore[arg-type]
    assert await running_switch(kit.db, org) is None, "the switch is closed, not left open"
    assert (await live_model(kit.db, org)).model_id == GATE
    assert len(late) == 20 and all([await _status(kit.db, s) == ("ready", None) for s in late])
    models = await _models(kit.db, sources + late)
    assert all(models[s] == {GATE} for s in sources[:4] + late), "the organization's old chunks are deleted"
    assert models[sources[4]] == {FAKE, GATE}, "the platform keeps the old model for everyone else"
    hits = await search(kit.db, org, "renewal terms", include_organization=True, embedders=kit.lookup)
    assert hits and {h.embedding_model for h in hits} == {GATE} and hits[0].source_id in late


async def test_a_pending_source_that_cannot_be_read_fails_on_its_own_and_the_switch_flips(
    kit: Kit, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    await _scope(kit, org, own=3, platform=0)

    async def broken(name: str) -> UUID:
        registered = await register_upload(
            kit.db, kit.store, organization_id=org, data=BROKEN_PDF + name.encode(), filename=name,
            media_type="application/pdf",
        )  # fmt: skip
        return registered.source_id

    unreadable = [await broken("before.pdf")]  # pending when the switch begins
    plan = await begin_switch(kit.db, org, GATE, embedder=kit.lookup(GATE))
    assert unreadable[0] in plan.source_ids

    async def upload_broken() -> None:
        unreadable.append(await broken("during.pdf"))

    gate.actions[1] = upload_broken
    flipped = await run_switch(kit.db, kit.store, plan, embedders=kit.lookup)

    assert flipped.to_model == GATE and (await live_model(kit.db, org)).model_id == GATE
    for source in unreadable:
        status, reason = await _status(kit.db, source)
        assert status == "failed" and reason and reason.startswith("document_malformed"), reason
    assert await _models(kit.db, unreadable) == {}


async def test_a_cancel_waits_for_a_write_in_flight_under_its_model_and_deletes_what_it_wrote(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "A document being re-embedded when the cancel comes.")
    await begin_switch(kit.db, org, GATE, dimensions=32)
    async with kit.db.connection() as writer:
        write = writer.transaction()
        await write.start()  # what prepare_chunks does: the lock, the check, then its rows
        await writer.execute(QUERIES["lock_model_writes"], GATE)
        assert await writer.fetchval(QUERIES["model_wanted"], source, GATE)
        await writer.execute(QUERIES["upsert_chunks"], source, GATE, [0], ["a chunk written meanwhile"], [6])
        cancel = asyncio.create_task(cancel_running_switch(kit.db, org))
        await _until_blocked(kit.db, cancel)  # type: ignore[arg-type]
        await write.commit()
    assert await cancel is not None
    assert await chunk_counts(kit.db, GATE) == NOTHING, "the cancel deleted the write that was in flight"


async def test_a_write_that_starts_during_a_cancel_waits_for_it_and_writes_nothing(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "A document whose re-embed starts while the cancel deletes.")
    plan = await begin_switch(kit.db, org, GATE, dimensions=32)
    async with kit.db.connection() as canceller:
        cancel = canceller.transaction()
        await cancel.start()  # what cancel_running_switch does, held open
        await canceller.execute(QUERIES["lock_model_drop"], GATE)
        await canceller.execute(QUERIES["finish_switch"], plan.switch_id, "cancelled")
        await canceller.execute(QUERIES["drop_unwanted_chunks"], GATE)
        prepare = asyncio.create_task(prepare_chunks(kit.db, kit.store, source, GATE))
        await _until_blocked(kit.db, prepare)  # type: ignore[arg-type]
        await cancel.commit()
    with pytest.raises(ModelNotWantedError):
        await prepare
    assert await chunk_counts(kit.db, GATE) == NOTHING


async def test_only_the_running_switch_flips_so_a_cancelled_one_never_does(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()  # nothing in scope: the readiness check alone would let it flip
    plan = await begin_switch(kit.db, org, GATE, dimensions=32)
    assert await cancel_switch(kit.db, org) == 0
    with pytest.raises(SwitchCancelledError):
        await flip_live_model(kit.db, org, GATE, switch_id=plan.switch_id)
    with pytest.raises(SwitchCancelledError):
        await flip_live_model(kit.db, org, GATE)
    assert (await live_model(kit.db, org)).model_id == FAKE


async def test_an_upload_ingested_in_bulk_while_the_switch_is_cancelled_writes_nothing_of_the_cancelled_model(
    kit: Kit, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    await begin_switch(kit.db, org, GATE, dimensions=32)
    uploads = [await kit.register(org, f"Upload {n} of the bulk run.") for n in range(3)]

    async def cancel() -> None:  # after the new model's vectors are embedded, before they are written
        await cancel_running_switch(kit.db, org)

    gate.actions[3] = cancel
    result = await ingest_sources(kit.db, kit.store, uploads, embedders=kit.lookup)

    assert [o.status for o in result.outcomes] == ["ready"] * 3, "each upload is ready under the live model"
    assert await chunk_counts(kit.db, GATE) == NOTHING, "the cancelled model's staged chunks were not written"
    assert await _models(kit.db, uploads) == {s: {FAKE} for s in uploads}
