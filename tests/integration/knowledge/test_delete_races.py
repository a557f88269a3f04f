"""A delete racing an ingestion never resurrects chunks: the in-flight steps end `deleted`, without error."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from context.models import ContextRequest, ContextSourceSpec, ContextSubject
from context.sources.knowledge import KnowledgeContextSource
from knowledge.embedding.live_model import begin_switch, switch_ready
from knowledge.embedding.registry import FakeEmbedder
from knowledge.ingestion.core import (
    Ingestion,
    Step,
    build_model_steps,
    build_source_model,
    ingest_source,
    ingest_source_steps,
)
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.registration import register_uri
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit
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


async def _drive(kit_ingestion: Ingestion, steps: Any, between: Any, n: int) -> tuple[Any, int]:
    """Run `steps` one by one, awaiting `between()` after the `n`-th; the sequence's result and steps run."""
    ran = 0
    try:
        step: Step = next(steps)
        while True:
            result = await step.fn(kit_ingestion)
            ran += 1
            if ran == n:
                await between()
            step = steps.send(result)
    except StopIteration as done:
        return done.value, ran


async def test_a_resync_racing_a_delete_of_its_source_ends_deleted_and_leaves_neither_version(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    uri = "https://help.example/zeppelin"
    old = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=GONE.encode(),
                             media_type="text/markdown")  # fmt: skip
    await ingest_source(kit.ingestion(), old.source_id)
    remote = ProviderShaped(batch_size=4)
    ingestion = Ingestion(kit.db, kit.store, lambda _model: remote, batch_size=4)
    for n in (1, 2, 3):
        new = await register_uri(kit.db, kit.store, organization_id=org, uri=uri,
                                 data=(GONE + f"\n\nrevision {n}").encode(), media_type="text/markdown")  # fmt: skip
        assert new.replaces == old.source_id

        async def delete_old(source_id: UUID = old.source_id) -> None:
            await delete_source(kit.db, kit.store, source_id, organization_id=org, operator=False,
                                requested_by="t")  # fmt: skip

        outcome, ran = await _drive(ingestion, ingest_source_steps(new.source_id), delete_old, n)
        assert str(outcome.status) == "deleted", (n, ran, outcome)
        assert await _rows_of(kit, new.source_id) == NOTHING, "the replacement is deleted with its source"
        assert await _rows_of(kit, old.source_id) == NOTHING
        old = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=GONE.encode(),
                                 media_type="text/markdown")  # fmt: skip
        await ingest_source(kit.ingestion(), old.source_id)
    await assert_consistent(kit.db)


async def test_a_switch_reembed_racing_a_delete_ends_deleted_and_the_switch_does_not_wait_for_it(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    kept = await kit.ingest(org, KEEP)
    doomed = await kit.ingest(org, GONE)
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await build_source_model(kit.db, kit.store, kept, kit.embedders[FAKE2])

    async def delete_doomed() -> None:
        await delete_source(kit.db, kit.store, doomed, organization_id=org, operator=False, requested_by="t")

    result, _ran = await _drive(kit.ingestion(), build_model_steps(doomed, FAKE2, one_step=False), delete_doomed, 1)
    assert result["deleted"] is True and result["ready"] is False
    assert await _rows_of(kit, doomed) == NOTHING, "no chunk of either model comes back"
    assert await switch_ready(kit.db, org, FAKE2), "a deleted source never holds a switch back"
    await assert_consistent(kit.db)


async def test_a_brief_never_quotes_a_deleted_source(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, KEEP)
    doomed = await kit.ingest(org, GONE)
    source = KnowledgeContextSource(kit.db, kit.lookup)
    request = ContextRequest(
        subject=ContextSubject.of_actor(org, None), query="zeppelin quartermaster ballast", entities=[]
    )
    spec = ContextSourceSpec(name="knowledge", token_budget=1500, options={"include_organization": True})
    assert any("zeppelin" in item.body for item in await source.retrieve(request, spec)), "seen before the delete"
    await delete_source(kit.db, kit.store, doomed, organization_id=org, operator=False, requested_by="t")
    assert not any("zeppelin" in item.body for item in await source.retrieve(request, spec))
