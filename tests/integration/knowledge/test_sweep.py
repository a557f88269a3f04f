"""The pending sweep and the retry: a stuck source is failed within the hour, visibly, and can run again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from knowledge.embedding.live_model import begin_switch
from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.sources import list_sources
from knowledge.ingestion.sweep import retry_source, sweep_pending
from knowledge.reasons import in_vocabulary
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE2, Kit


async def _age(kit: Kit, source_id: UUID, minutes: int) -> None:
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET pending_since = now() - make_interval(mins => $2) WHERE id = $1",
            source_id,
            minutes,
        )


async def test_the_sweep_fails_sources_pending_over_an_hour_and_leaves_younger_ones(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    stuck = await kit.register(org, "stuck")
    young = await kit.register(org, "young")
    await _age(kit, stuck, 61)
    await _age(kit, young, 59)
    swept = await sweep_pending(kit.db)
    assert swept.failed_sources == (stuck,)
    views = {v.id: v for v in await list_sources(kit.db, org)}
    assert views[stuck].status == "failed" and views[young].status == "pending"
    reason = views[stuck].failure_reason or ""
    assert reason.startswith("ingestion_stalled: ingestion did not finish within 1 hour") and "Retry" in reason
    assert in_vocabulary(reason), reason
    assert (await sweep_pending(kit.db)).failed_sources == ()  # a second sweep changes nothing


async def test_a_retried_source_is_pending_again_and_ingests_to_ready(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    stuck = await kit.register(org, "stuck document about lifecycle")
    await _age(kit, stuck, 90)
    await sweep_pending(kit.db)
    retried = await retry_source(kit.db, stuck, organization_id=org)
    assert retried.reset and retried.status == "pending"
    view = (await list_sources(kit.db, org))[0]
    assert (view.status, view.failure_reason, view.attempts) == ("pending", None, 2)
    assert view.pending_since is not None
    outcome = await ingest_source(kit.ingestion(), stuck)
    assert outcome.failed_reason is None
    assert (await list_sources(kit.db, org))[0].status == "ready"


async def test_a_retry_from_another_organization_finds_no_source(kit: Kit, factory: Factory) -> None:
    owner = await factory.organization()
    other = await factory.organization()
    source = await kit.register(owner, "x")
    with pytest.raises(SourceNotFoundError):
        await retry_source(kit.db, source, organization_id=other)
    with pytest.raises(SourceNotFoundError):
        await retry_source(kit.db, source, organization_id=None)


async def test_a_stalled_re_embed_under_a_new_model_is_failed_too_without_failing_the_serving_source(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "lifecycle")
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    later = datetime.now(UTC) + timedelta(hours=2)
    swept = await sweep_pending(kit.db, now=later)
    assert swept.failed_sources == () and swept.failed_models == 1
    async with kit.db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT status, failure_reason FROM agent.knowledge_source_models WHERE source_id = $1 "
            "AND embedding_model = $2",
            source,
            FAKE2,
        )
    assert row["status"] == "failed" and "test/hash-32" in row["failure_reason"]
    assert (await list_sources(kit.db, org))[0].status == "ready"


async def test_the_sweep_refuses_a_non_positive_age() -> None:
    with pytest.raises(ValueError):
        await sweep_pending(None, older_than=timedelta(0))  # type: ignore[arg-type]
