"""`knowledge-model-switch` and `knowledge-reembed-source` over HTTP: the harness runs the re-embeds the
switch fans out while the switch sleeps between its checks, as the Inngest server would."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import inngest
from inngest.experimental import mocked

from functions.inngest.knowledge_ingest import EVENT_UPLOADED
from functions.inngest.knowledge_ingest import FUNCTION_ID as INGEST
from functions.inngest.knowledge_ingest import RETRIES as INGEST_RETRIES
from functions.inngest.knowledge_switch import (
    EVENT_REEMBED,
    EVENT_SWITCH,
    REEMBED_FUNCTION_ID,
    REEMBED_RETRIES,
    SWITCH_FUNCTION_ID,
    SWITCH_RETRIES,
    make_knowledge_switch,
)
from knowledge.embedding.live_model import SWITCH_PROBE_TEXT, begin_switch, live_model
from knowledge.embedding.registry import FakeEmbedder
from knowledge.errors import EmbeddingAuthError
from knowledge.ingestion.registration import register_upload
from knowledge.switchover import reembed_source
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, Service

NEW_MODEL = "test/hash-32"
DOCS = [
    ("pricing.md", "# Pricing\n\nThe pilot costs 48,000 EUR a year, billed quarterly, with onboarding included."),
    ("security.md", "# Security\n\nCustomer data is encrypted at rest and in transit; audits run every spring."),
    ("onboarding.md", "# Onboarding\n\nA new customer meets the success team within five working days."),
]


class Fake32(FakeEmbedder):
    model_id = NEW_MODEL
    dimensions = 32


class Local32(Fake32):
    """The 32-dimension fake declared local, so `knowledge-ingest` builds it in one step too."""

    pool_safe = True


class RevokedKey32(Fake32):
    """Answers the test call a switch makes before it opens, then refuses every re-embed (a key revoked mid-switch)."""

    async def _embed_batch(self, texts: list[str]) -> Any:
        if texts == [SWITCH_PROBE_TEXT]:
            return await super()._embed_batch(texts)
        raise EmbeddingAuthError("the provider refused the API key")


async def ingest(service: Service, org: UUID, name: str, text: str) -> UUID:
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=text.encode(), filename=name
    )
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": str(org)}}
    run = await service.executor.run(INGEST, event, retries=INGEST_RETRIES)
    assert run.status == "completed", run.output
    return registered.source_id


async def run_reembeds(service: Service, only: set[str] | None = None) -> None:
    """Run the re-embed events sent so far (those of `only` sources when given), once each."""
    pending = [e for e in service.inngest.sent if e.name == EVENT_REEMBED]
    for event in pending:
        if only is not None and event.data["source_id"] not in only:
            continue
        service.inngest.sent.remove(event)
        await service.executor.run(
            REEMBED_FUNCTION_ID, {"name": event.name, "data": dict(event.data)}, retries=REEMBED_RETRIES
        )


async def chunk_models(service: Service, sources: list[UUID]) -> set[str]:
    async with service.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT DISTINCT embedding_model FROM agent.knowledge_chunks WHERE source_id = ANY($1::uuid[])", sources
        )
    return {r["embedding_model"] for r in rows}


def switch_event(org: UUID | None) -> dict[str, Any]:
    return {"name": EVENT_SWITCH, "data": {"organization_id": str(org) if org else None, "model": NEW_MODEL}}


async def test_a_switchover_flips_only_after_every_source_is_ready(service: Service, factory: Factory) -> None:
    service.services.embedders.register(NEW_MODEL, Fake32, dimensions=32)
    org = await factory.organization()
    first = await ingest(service, org, *DOCS[0])
    second = await ingest(service, org, *DOCS[1])
    sources = [first, second]
    observed: list[str] = []

    async def meanwhile(sleep: str) -> None:
        observed.append((await live_model(service.db, org)).model_id)
        if sleep == "wait 0":
            sources.append(await ingest(service, org, *DOCS[2]))  # a source that appears during the switch
            await run_reembeds(service, only={str(first)})  # one of the two re-embeds finishes
        else:
            await run_reembeds(service)

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "completed", run.output
    assert observed and set(observed) == {FAKE_MODEL}, "the old model stays live until every source is ready"
    assert run.step_names.index("flip") > max(i for i, n in enumerate(run.step_names) if n.startswith("check"))
    assert run.step_names[-1] == "delete-old-chunks"
    assert (await live_model(service.db, org)).model_id == NEW_MODEL
    assert await chunk_models(service, sources) == {NEW_MODEL}, "the old chunks are deleted after the flip"
    assert run.output["flipped"] is True and run.output["dropped"] > 0


async def test_an_upload_during_a_switch_builds_each_local_model_in_its_own_step_with_the_same_chunks(
    service: Service, factory: Factory
) -> None:
    service.services.embedders.register(NEW_MODEL, Local32, dimensions=32)
    org = await factory.organization()
    await begin_switch(service.db, org, NEW_MODEL, dimensions=32)
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=DOCS[0][1].encode(), filename=DOCS[0][0]
    )
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": str(org)}}
    run = await service.executor.run(INGEST, event, retries=INGEST_RETRIES)

    assert run.status == "completed", run.output
    assert sorted(run.step_names[1:]) == sorted([f"ingest {FAKE_MODEL}", f"ingest {NEW_MODEL}"])
    async with service.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT embedding_model, array_agg(text ORDER BY ordinal) AS texts, bool_and(embedding IS NOT NULL) AS "
            "embedded FROM agent.knowledge_chunks WHERE source_id = $1 GROUP BY embedding_model",
            registered.source_id,
        )
        ready = await conn.fetch(
            "SELECT embedding_model, status FROM agent.knowledge_source_models WHERE source_id = $1",
            registered.source_id,
        )
    assert {r["embedding_model"] for r in rows} == {FAKE_MODEL, NEW_MODEL}, "each step built its own model"
    assert rows[0]["texts"] == rows[1]["texts"] and all(r["embedded"] for r in rows)
    for model in (FAKE_MODEL, NEW_MODEL):  # each step wrote its own model's chunks, not both at once
        assert run.step_outputs[f"ingest {model}"] == {"ready": True, "chunks": len(rows[0]["texts"])}
    assert {(r["embedding_model"], r["status"]) for r in ready} == {(FAKE_MODEL, "ready"), (NEW_MODEL, "ready")}


async def test_a_switchover_never_flips_when_one_source_fails(service: Service, factory: Factory) -> None:
    service.services.embedders.register(NEW_MODEL, RevokedKey32, dimensions=32)
    org = await factory.organization()
    sources = [await ingest(service, org, *DOCS[0]), await ingest(service, org, *DOCS[1])]

    async def meanwhile(_: str) -> None:
        await run_reembeds(service)

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "failed"
    assert "flip" not in run.step_names, "a failed re-embed stops the flip"
    assert "stays live" in run.output["message"] and "embedding_auth_failed" in run.output["message"]
    assert (await live_model(service.db, org)).model_id == FAKE_MODEL, "the old model stays live"
    assert FAKE_MODEL in await chunk_models(service, sources), "the old chunks keep serving"
    async with service.db.connection() as conn:
        reasons = await conn.fetch(
            "SELECT failure_reason FROM agent.knowledge_source_models WHERE embedding_model = $1", NEW_MODEL
        )
    assert reasons and all("embedding_auth_failed" in r["failure_reason"] for r in reasons), "the reason is visible"


def test_mocked_trigger_flips_a_scope_whose_sources_are_ready(service: Service, factory: Factory) -> None:
    service.services.embedders.register(NEW_MODEL, Fake32, dimensions=32)
    loop = asyncio.get_event_loop()
    org = loop.run_until_complete(factory.organization())
    source = loop.run_until_complete(ingest(service, org, *DOCS[0]))

    async def prepare() -> None:
        await begin_switch(service.db, org, NEW_MODEL, dimensions=32)
        await reembed_source(service.db, service.services.object_store, source, Fake32())

    loop.run_until_complete(prepare())
    client = mocked.Inngest(app_id="ac-context", is_production=False)
    fn = make_knowledge_switch(client, service.slot)
    result = mocked.trigger(fn, inngest.Event(name=EVENT_SWITCH, data=switch_event(org)["data"]), client)
    assert result.status is mocked.Status.COMPLETED, result.error
    assert result.output["flipped"] is True
    assert loop.run_until_complete(live_model(service.db, org)).model_id == NEW_MODEL

    bad = mocked.trigger(fn, inngest.Event(name=EVENT_SWITCH, data={"model": 7}), client)
    assert isinstance(bad.error, inngest.NonRetriableError)
