"""The fusion belongs to the embedding model (migrations/0103): a search under a model mixes its two lists
as the model's record says, unless the caller names a fusion of its own; memory's relevance read takes the
same record's weights."""

from __future__ import annotations

from uuid import UUID

import pytest

from context.sources.memory_vectors import relevance_query
from knowledge.embedding.live_model import live_model
from knowledge.search import DEFAULT_FUSION, Fusion, search
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit


async def _calibrate(kit: Kit, method: str, dense: float, lexical: float) -> None:
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.embedding_models SET fusion_method = $2, dense_weight = $3, lexical_weight = $4, "
            "fusion_calibration = 'a test' WHERE model_id = $1",
            FAKE, method, dense, lexical,
        )  # fmt: skip


async def _world(kit: Kit, org: UUID) -> None:
    for n in range(4):
        await kit.ingest(org, f"Document {n}: the pump {'pump ' * n}sits in the basement room {n}.")


async def test_a_search_fuses_as_the_live_models_record_says(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await _world(kit, org)
    kwargs = {"include_organization": True, "embedders": kit.lookup, "min_relevance": 0.0, "per_source": None}
    assert DEFAULT_FUSION.dense is None and DEFAULT_FUSION.lexical is None and DEFAULT_FUSION.method is None
    await _calibrate(kit, "convex", 1.0, 0.0)
    hits = await search(kit.db, org, "pump basement", **kwargs)
    assert hits and all(h.lexical_rank is None and h.dense_rank is not None for h in hits)
    await _calibrate(kit, "convex", 0.0, 1.0)
    hits = await search(kit.db, org, "pump basement", **kwargs)
    assert hits and all(h.dense_rank is None and h.lexical_rank is not None for h in hits)
    await _calibrate(kit, "rrf", 0.5, 0.5)
    hits = await search(kit.db, org, "pump basement", **kwargs)
    for h in hits:
        expected = sum(0.5 / (60 + r) for r in (h.dense_rank, h.lexical_rank) if r is not None)
        assert h.score == pytest.approx(expected)
    # A caller's fusion replaces the model's for its one search.
    hits = await search(kit.db, org, "pump basement", fusion=Fusion(dense=1.0, lexical=0.0), **kwargs)
    assert all(h.lexical_rank is None for h in hits)


async def test_the_live_model_and_memorys_relevance_read_carry_the_records_weights(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await _calibrate(kit, "convex", 0.6, 0.4)
    live = await live_model(kit.db, org)
    assert (live.fusion_method, live.dense_weight, live.lexical_weight) == ("convex", 0.6, 0.4)
    query = await relevance_query(kit.db, org, "where is the pump", kit.lookup)
    assert (query.dense_weight, query.lexical_weight) == (0.6, 0.4) and query.model == FAKE


async def test_a_model_record_that_weighs_nothing_is_refused(kit: Kit) -> None:
    import asyncpg

    with pytest.raises(asyncpg.CheckViolationError):
        await _calibrate(kit, "convex", 0.0, 0.0)
    with pytest.raises(ValueError, match="both fusion weights or neither"):
        Fusion(dense=0.5)
