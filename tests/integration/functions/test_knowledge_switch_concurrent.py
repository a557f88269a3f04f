"""`knowledge-model-switch` and `knowledge-reembed-source` end clean (issue 21), played over HTTP: a cancel
sent over `DELETE /v1/knowledge/switch` while a re-embed is in flight stops the re-embeds at their next
batch, leaves no chunk of the cancelled model (the organization's, or the platform documents embedded for
it) and ends the switch `knowledge_switch_cancelled`; uploads during a switch are built under the new model
by their own ingestion while `GET /v1/knowledge/switch` names what the flip waits for, and the switch flips;
an unreadable pending source fails on its own and the switch flips without it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

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
)
from knowledge.embedding.live_model import live_model, running_switch
from knowledge.ingestion.registration import register_upload
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, Service
from tests.integration.knowledge.helpers import GATE, GateEmbedder, chunk_counts, ensure_gate_registered

NOTHING = {"chunks": 0, "rows": 0, "unwanted": 0}


@pytest.fixture
def gate(service: Service) -> type[GateEmbedder]:
    GateEmbedder.reset()
    ensure_gate_registered(service.services.embedders)
    return GateEmbedder


async def upload(service: Service, org: UUID | None, name: str, data: bytes, *, run: bool = True) -> UUID:
    """Register a document (as the upload endpoint does) and, with `run`, play its `knowledge-ingest` run."""
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=data, filename=name
    )
    if run:
        scope = None if org is None else str(org)
        event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": scope}}
        played = await service.executor.run(INGEST, event, retries=INGEST_RETRIES)
        assert played.status == "completed", played.output
    return registered.source_id


async def run_reembeds(service: Service) -> list[Any]:
    """Play every re-embed event sent so far, once each, in the order sent."""
    runs = []
    while events := [e for e in service.inngest.sent if e.name == EVENT_REEMBED]:
        service.inngest.sent.remove(events[0])
        event = {"name": events[0].name, "data": dict(events[0].data)}
        runs.append(await service.executor.run(REEMBED_FUNCTION_ID, event, retries=REEMBED_RETRIES))
    return runs


def switch_event(org: UUID) -> dict[str, Any]:
    return {"name": EVENT_SWITCH, "data": {"organization_id": str(org), "model": GATE}}


async def statuses(service: Service, sources: list[UUID]) -> dict[UUID, str]:
    async with service.db.connection() as conn:
        rows = await conn.fetch("SELECT id, status FROM agent.knowledge_sources WHERE id = ANY($1::uuid[])", sources)
    return {r["id"]: r["status"] for r in rows}


async def test_a_cancel_over_http_stops_the_reembeds_at_the_next_batch_and_the_switch_ends_cancelled(
    service: Service, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    sources = [
        await upload(service, org, f"doc{n}.md", f"# Doc {n}\n\nLifecycle stage {n}.".encode()) for n in range(5)
    ]
    sources += [
        await upload(service, None, f"page{n}.md", f"# Page {n}\n\nPlatform pricing {n}.".encode()) for n in (1, 2)
    ]
    answered: list[dict[str, Any]] = []

    async def cancel() -> None:  # another caller, while the third of seven re-embeds embeds its batch
        params = {"organization_id": str(org)}
        answered.append((await service.http.delete("/v1/knowledge/switch", params=params, headers=service.auth)).json())

    gate.actions[3] = cancel
    reembeds: list[Any] = []

    async def meanwhile(_: str) -> None:
        reembeds.extend(await run_reembeds(service))

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "completed", run.output
    assert run.output["code"] == "knowledge_switch_cancelled" and run.output["flipped"] is False, run.output
    assert "flip" not in run.step_names and "delete-old-chunks" not in run.step_names
    assert answered and answered[0]["cancelled"] is True and answered[0]["dropped_chunks"] >= 1
    assert len(reembeds) == 7 and all(r.status == "completed" for r in reembeds), "a stopped re-embed is no failure"
    assert sum(bool(r.output.get("not_wanted")) for r in reembeds) == 5, "each later one stopped at its next step"
    assert gate.batches() == 3, "no batch embedded after the cancel"
    assert await chunk_counts(service.db, GATE) == NOTHING, "no chunk of the cancelled model, platform pages included"
    assert set((await statuses(service, sources)).values()) == {"ready"}, "no source failed"
    assert (await live_model(service.db, org)).model_id == FAKE_MODEL
    assert await running_switch(service.db, org) is None


async def test_uploads_during_a_switch_keep_the_flip_waiting_with_a_clear_status_and_then_it_flips(
    service: Service, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    sources = [await upload(service, org, f"doc{n}.md", f"# Doc {n}\n\nRenewal {n}.".encode()) for n in range(3)]
    late: list[UUID] = []
    seen: list[dict[str, Any]] = []

    async def meanwhile(sleep: str) -> None:
        if sleep == "wait 0":  # uploads arrive; their ingestion has not run yet
            for n in range(6):
                late.append(await upload(service, org, f"late{n}.md", f"# Late {n}\n\nTerms {n}.".encode(), run=False))
            params = {"organization_id": str(org)}
            seen.append((await service.http.get("/v1/knowledge/switch", params=params, headers=service.auth)).json())
            for source in late:  # each upload's own knowledge-ingest builds both models
                event = {"name": EVENT_UPLOADED, "data": {"source_id": str(source), "organization_id": str(org)}}
                assert (await service.executor.run(INGEST, event, retries=INGEST_RETRIES)).status == "completed"
        await run_reembeds(service)

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "completed" and run.output["flipped"] is True, run.output
    status = seen[0]
    assert status["phase"] == "embedding" and status["pending"] == 9 and status["failed"] == 0, status
    waiting = {UUID(w["source_id"]): w for w in status["waiting_for"]}
    assert len(waiting) == 5 and all(w["status"] == "pending" for w in waiting.values()), status["waiting_for"]
    assert sum(w["source_status"] == "pending" for w in waiting.values()) >= 2, "the uploads show as uploads"
    after = await service.http.get("/v1/knowledge/switch", params={"organization_id": str(org)}, headers=service.auth)
    assert after.json()["running"] is False and after.json()["live_model"] == GATE, "closed, no error left on it"
    assert set((await statuses(service, sources + late)).values()) == {"ready"}
    async with service.db.connection() as conn:
        models = await conn.fetch(
            "SELECT DISTINCT embedding_model FROM agent.knowledge_chunks WHERE source_id = ANY($1::uuid[])", late
        )
    assert {r["embedding_model"] for r in models} == {GATE}


async def test_an_unreadable_pending_source_fails_on_its_own_and_the_switch_flips_without_it(
    service: Service, factory: Factory, gate: type[GateEmbedder]
) -> None:
    org = await factory.organization()
    await upload(service, org, "good.md", b"# Good\n\nA readable document.")
    broken = await upload(service, org, "broken.pdf", b"%PDF-1.4 this is not a PDF", run=False)

    async def meanwhile(_: str) -> None:
        await run_reembeds(service)

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "completed" and run.output["flipped"] is True, run.output
    assert (await live_model(service.db, org)).model_id == GATE
    async with service.db.connection() as conn:
        row = await conn.fetchrow("SELECT status, failure_reason FROM agent.knowledge_sources WHERE id = $1", broken)
    assert row["status"] == "failed" and row["failure_reason"].startswith("document_malformed"), dict(row)
