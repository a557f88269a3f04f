"""A delete racing an ingestion never resurrects chunks: the in-flight steps end `deleted`, without error."""

from __future__ import annotations

from uuid import UUID

from knowledge.delete import delete_source
from knowledge.embed import FakeEmbedder
from knowledge.ingestion import Ingestion, Step, ingest_source_steps
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.integration.knowledge.lexical import assert_consistent
from tests.integration.knowledge.test_delete import GONE, KEEP, _by_model, _rows_of


class ProviderShaped(FakeEmbedder):
    """The fake model as a provider's would run: the resumable steps, one embed step per paid batch."""


NOTHING = {"chunks": 0, "models": 0, "searchable": 0, "sources": 0}


async def _drive_with_delete_after(
    kit: Kit, kit_ingestion: Ingestion, source_id: UUID, org: UUID, n: int
) -> tuple[str, int]:
    """Run the ingestion steps one by one; delete the source after the `n`-th; the outcome's status, steps run."""
    steps = ingest_source_steps(source_id)
    ran = 0
    try:
        step: Step = next(steps)
        while True:
            result = await step.fn(kit_ingestion)
            ran += 1
            if ran == n:
                await delete_source(kit.db, kit.store, source_id, organization_id=org, operator=False,
                                    requested_by="t", batch_size=2)  # fmt: skip
            step = steps.send(result)
    except StopIteration as done:
        return str(done.value.status), ran


async def test_a_delete_between_any_two_ingestion_steps_leaves_nothing_and_the_steps_end_deleted(
    kit: Kit, factory: Factory
) -> None:
    org, twin = await factory.organization(), await factory.organization()
    await kit.ingest(org, KEEP)
    await kit.ingest(twin, KEEP)
    # A provider-shaped model (the resumable steps, one embed step per batch of 4): plan, extract, embeds, mark.
    remote = ProviderShaped(batch_size=4)
    assert not remote.runs_in_pool()
    ingestion = Ingestion(kit.db, kit.store, lambda _model: remote, batch_size=4)
    for n in range(1, 6):  # plan, extract-and-chunk, two embed batches, mark-ready
        source_id = await kit.register(org, GONE + f"\n\nvariant {n}")
        status, ran = await _drive_with_delete_after(kit, ingestion, source_id, org, n)
        assert status == ("deleted" if n < ran else "done"), (n, ran, status)
        assert await _rows_of(kit, source_id) == NOTHING
        async with kit.db.connection() as conn:
            failed = await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE status = 'failed'")
        assert failed == 0
    stats = await assert_consistent(kit.db)
    assert _by_model(stats, org) == _by_model(stats, twin)


async def test_a_source_deleted_before_its_run_starts_ends_deleted_not_missing(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source_id = await kit.register(org, GONE)
    await delete_source(kit.db, kit.store, source_id, organization_id=org, operator=False, requested_by="t")
    status, ran = await _drive_with_delete_after(kit, kit.ingestion(), source_id, org, 0)
    assert (status, ran) == ("deleted", 1)


async def test_a_write_to_a_deleting_source_never_makes_it_ready_again(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source_id = await kit.embedded_pending(org, GONE)  # every vector stored, only mark-ready left
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'deleting', pending_since = NULL WHERE id = $1", source_id
        )
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'ready' WHERE id = $1", source_id
        )  # what mark_ready's statement does
        status = await conn.fetchval("SELECT status FROM agent.knowledge_sources WHERE id = $1", source_id)
        wanted = await conn.fetchval("SELECT agent.knowledge_model_wanted($1, $2)", source_id, FAKE)
        listed = await conn.fetchval("SELECT count(*) FROM agent.knowledge_searchable WHERE source_id = $1", source_id)
    assert (status, wanted, listed) == ("deleting", False, 0)
