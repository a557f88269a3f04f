"""The live model and its switchover: re-embed while the old model serves, flip one row, drop the old chunks."""

from __future__ import annotations

from uuid import UUID

import pytest

from knowledge.embedding.live_model import (
    begin_switch,
    cancel_switch,
    flip_live_model,
    live_model,
    switch_ready,
    switch_status,
)
from knowledge.embedding.registry import Embedder
from knowledge.errors import SwitchConflictError, SwitchNotReadyError
from knowledge.search import search
from knowledge.switchover import reembed_source
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit


async def _models(db: Database, source_id: UUID) -> set[str]:
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT DISTINCT embedding_model FROM agent.knowledge_chunks WHERE source_id = $1", source_id
        )
    return {r["embedding_model"] for r in rows}


async def _search_models(kit: Kit, org: UUID) -> set[str]:
    hits = await search(
        kit.db, org, "lifecycle stage", include_platform=True, include_organization=True, embedders=kit.lookup
    )
    assert hits, "the search must keep answering through the switchover"
    return {h.embedding_model for h in hits}


async def test_a_search_during_a_switchover_returns_old_model_results_until_the_flip_and_new_ones_after(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    own = await kit.ingest(org, "Our lifecycle stage names: lead, customer.")
    platform = await kit.ingest(None, "A lifecycle stage is where a company stands.")

    plan = await begin_switch(kit.db, org, FAKE2, dimensions=32)
    assert (plan.from_model, plan.to_model) == (FAKE, FAKE2)
    assert set(plan.source_ids) == {own, platform}  # an organization's switch covers the platform sources too
    assert not await switch_ready(kit.db, org, FAKE2)
    with pytest.raises(SwitchNotReadyError, match="0 of 2"):
        await flip_live_model(kit.db, org, FAKE2)
    assert await _search_models(kit, org) == {FAKE}

    await reembed_source(kit.db, kit.store, own, kit.lookup(FAKE2))
    assert await _search_models(kit, org) == {FAKE}  # half the scope is ready: still the old model, alone
    # A source added during the switch is wanted under the new model too, and holds the flip back.
    late = await kit.ingest(org, "A late lifecycle stage document.")
    assert await _models(kit.db, late) == {FAKE, FAKE2}
    await reembed_source(kit.db, kit.store, platform, kit.lookup(FAKE2))
    assert await switch_ready(kit.db, org, FAKE2)
    assert await _search_models(kit, org) == {FAKE}

    flipped = await flip_live_model(kit.db, org, FAKE2)
    assert (flipped.from_model, flipped.to_model) == (FAKE, FAKE2)
    assert await _search_models(kit, org) == {FAKE2}
    assert (await live_model(kit.db, org)).model_id == FAKE2
    assert (await live_model(kit.db, None)).model_id == FAKE  # the platform default did not move
    # The organization's old chunks are gone; the platform's stay, other tenants still search them.
    assert await _models(kit.db, own) == {FAKE2}
    assert await _models(kit.db, platform) == {FAKE, FAKE2}
    assert flipped.dropped_chunks == 2  # own + late, one chunk each


async def test_a_platform_switch_covers_platform_sources_and_organizations_without_their_own_row(
    kit: Kit, factory: Factory
) -> None:
    follower = await factory.organization()
    chooser = await factory.organization()
    async with kit.db.connection() as conn:
        await conn.execute(
            "INSERT INTO public.knowledge_settings (organization_id, active_embedding_model) VALUES ($1, $2)",
            chooser,
            FAKE,
        )
    follows = await kit.ingest(follower, "follower lifecycle")
    chose = await kit.ingest(chooser, "chooser lifecycle")
    platform = await kit.ingest(None, "platform lifecycle")

    plan = await begin_switch(kit.db, None, FAKE2, dimensions=32)
    assert set(plan.source_ids) == {follows, platform}
    for source in plan.source_ids:
        await reembed_source(kit.db, kit.store, source, kit.lookup(FAKE2))
    await flip_live_model(kit.db, None, FAKE2)

    assert await _search_models(kit, follower) == {FAKE2}
    assert await _search_models(kit, chooser) == {FAKE}  # its own row still names the old model
    assert await _models(kit.db, follows) == {FAKE2}
    assert await _models(kit.db, chose) == {FAKE}
    assert await _models(kit.db, platform) == {FAKE, FAKE2}  # the chooser still needs the old vectors


async def test_beginning_a_switch_twice_resumes_it_and_another_target_is_refused(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, "lifecycle")
    first = await begin_switch(kit.db, org, FAKE2, dimensions=32)
    again = await begin_switch(kit.db, org, FAKE2, dimensions=32)
    assert again.source_ids == first.source_ids and again.from_model == FAKE
    with pytest.raises(SwitchConflictError):
        await begin_switch(kit.db, org, "openai/text-embedding-3-small")
    assert (await begin_switch(kit.db, None, FAKE)).already_live


async def test_a_new_model_gets_its_own_partial_hnsw_index(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    async with kit.db.connection() as conn:
        indexdef = await conn.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunks' AND indexname = "
            "(SELECT index_name FROM agent.embedding_models WHERE model_id = $1)",
            FAKE2,
        )
    assert "USING hnsw" in indexdef and "vector(32)" in indexdef
    assert "embedding_model = 'test/hash-32'::text" in indexdef


async def test_a_failed_re_embed_holds_the_flip_back_until_it_is_retried(kit: Kit, factory: Factory) -> None:
    from knowledge.ingestion.steps import mark_failed
    from knowledge.ingestion.sweep import retry_source

    org = await factory.organization()
    source = await kit.ingest(org, "lifecycle")
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await mark_failed(kit.db, source, "provider down", model=FAKE2)
    status = await switch_status(kit.db, org, FAKE2)
    assert (status.total, status.failed, status.complete) == (1, 1, False)
    retried = await retry_source(kit.db, source, organization_id=org)
    assert retried.models == (FAKE2,) and retried.status == "ready"  # the source kept serving meanwhile
    await reembed_source(kit.db, kit.store, source, kit.lookup(FAKE2))
    await flip_live_model(kit.db, org, FAKE2)


async def test_cancelling_a_switch_drops_the_new_chunks_and_keeps_the_old_model(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "lifecycle")
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await reembed_source(kit.db, kit.store, source, kit.lookup(FAKE2))
    assert await cancel_switch(kit.db, org) == 1
    assert await _models(kit.db, source) == {FAKE}
    assert (await live_model(kit.db, org)).model_id == FAKE


async def test_a_flip_between_reading_the_model_and_searching_makes_the_search_embed_again(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "lifecycle stage")
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await reembed_source(kit.db, kit.store, source, kit.lookup(FAKE2))
    asked: list[str] = []

    class FlipWhileEmbedding:
        """Flips the live model the first time the old model embeds a query."""

        def __call__(self, model: str) -> Embedder:
            asked.append(model)
            return kit.lookup(model)

    lookup = FlipWhileEmbedding()
    original = kit.embedders[FAKE]

    class Flipper(type(original)):  # type: ignore[misc]
        async def embed(self, texts):  # type: ignore[no-untyped-def]
            vectors = await super().embed(texts)
            await flip_live_model(kit.db, org, FAKE2, drop_old=False)
            return vectors

    kit.embedders[FAKE] = Flipper()
    hits = await search(kit.db, org, "lifecycle", include_organization=True, embedders=lookup)
    assert asked == [FAKE, FAKE2]
    assert {h.embedding_model for h in hits} == {FAKE2}
