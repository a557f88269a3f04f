"""Production-mode signatures on `/api/inngest`, the start-up guard of the client, and the hourly sweep."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import inngest
import pytest
from inngest.experimental import mocked

from functions.app import create_app
from functions.errors import InngestConfigError
from functions.inngest.client import create_client, is_dev_mode
from functions.inngest.knowledge_sweep import CRON, make_knowledge_sweep
from functions.inngest.knowledge_sweep import FUNCTION_ID as SWEEP
from knowledge.ingestion.registration import register_upload
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import new_signing_key

CRON_EVENT = {"name": "inngest/scheduled.timer", "data": {"cron": CRON}}


async def test_an_unsigned_or_wrongly_signed_request_is_refused_and_a_signed_one_runs(service: Service) -> None:
    unsigned = InngestExecutor(service.http, signing_key=None)
    refused = await unsigned.post(SWEEP, unsigned.body(CRON_EVENT, {}, [], run_id="r1", attempt=0, max_attempts=3))
    assert refused.status_code == 401, "production mode refuses a request without a signature"

    forged = InngestExecutor(service.http, signing_key=new_signing_key())
    assert (await forged.run(SWEEP, CRON_EVENT, retries=2)).status == "unauthorized"

    tampered_body = service.executor.body(CRON_EVENT, {}, [], run_id="r2", attempt=0, max_attempts=3)
    raw = json.dumps(tampered_body).encode()
    from inngest._internal import net

    signature = net.sign_request(raw, service.signing_key)
    tampered = await service.http.post(
        "/api/inngest",
        params={"fnId": "ac-context-knowledge-sweep-pending", "stepId": "step"},
        content=raw.replace(b'"r2"', b'"r3"'),
        headers={"x-inngest-signature": str(signature), "content-type": "application/json"},
    )
    assert tampered.status_code == 401, "a body changed after signing is refused"

    signed = await service.executor.run(SWEEP, CRON_EVENT, retries=2)
    assert signed.status == "completed" and signed.output == {
        "failed": 0, "failed_models": 0, "objects": 0, "receipts": 0,
    }  # fmt: skip


def test_production_without_a_signing_key_fails_at_start_with_a_message_saying_so(tmp_path: Path) -> None:
    with pytest.raises(InngestConfigError, match="INNGEST_SIGNING_KEY is not set"):
        create_client({})
    with pytest.raises(InngestConfigError, match="INNGEST_SIGNING_KEY"):
        create_client({"INNGEST_DEV": "0"})
    with pytest.raises(InngestConfigError, match="INNGEST_SIGNING_KEY"):
        create_app(load_settings(data_dir=tmp_path), environ={})
    assert create_client({"INNGEST_DEV": "1"}).is_production is False
    assert create_client({"INNGEST_SIGNING_KEY": new_signing_key()}).is_production is True
    assert is_dev_mode({}, inngest_mode="dev") and not is_dev_mode({"INNGEST_DEV": "false"})


async def test_the_sweep_function_fails_only_stale_sources(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    store = service.services.object_store
    stale = await register_upload(service.db, store, organization_id=org, data=b"# Old\n\nstuck", filename="old.md")
    fresh = await register_upload(service.db, store, organization_id=org, data=b"# New\n\nfresh", filename="new.md")
    async with service.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET pending_since = now() - interval '61 minutes' WHERE id = $1",
            stale.source_id,
        )
    run = await service.executor.run(SWEEP, CRON_EVENT, retries=2)
    assert run.status == "completed" and run.output["failed"] == 1
    async with service.db.connection() as conn:
        rows = {
            r["id"]: (r["status"], r["failure_reason"])
            for r in await conn.fetch("SELECT id, status, failure_reason FROM agent.knowledge_sources")
        }
    assert rows[stale.source_id][0] == "failed" and "within 1 hour" in rows[stale.source_id][1]
    assert rows[fresh.source_id] == ("pending", None), "a source pending for less than an hour is left alone"
    metrics = (await service.http.get("/metrics")).text
    assert "ac_context_sweep_failed_sources_total 1.0" in metrics


def test_mocked_trigger_sweeps_and_returns_the_count(service: Service, factory: Factory) -> None:
    loop = asyncio.get_event_loop()
    org = loop.run_until_complete(factory.organization())
    source = loop.run_until_complete(
        register_upload(
            service.db, service.services.object_store, organization_id=org, data=b"# A\n\nb", filename="a.md"
        )
    )
    loop.run_until_complete(
        service.db.fetchval(
            "UPDATE agent.knowledge_sources SET pending_since = now() - interval '2 hours' WHERE id = $1 RETURNING 1",
            source.source_id,
        )
    )
    client = mocked.Inngest(app_id="ac-context", is_production=False)
    result = mocked.trigger(make_knowledge_sweep(client, service.slot), inngest.Event(**CRON_EVENT), client)
    assert result.status is mocked.Status.COMPLETED and result.output["failed"] == 1


async def test_the_sweep_function_deletes_the_objects_a_crash_left_queued(service: Service, factory: Factory) -> None:
    """Rule: the hourly sweep drains `agent.knowledge_object_deletes` (a replaced object a crash stranded)."""
    from uuid import uuid4

    from knowledge.documents.objects import object_key_for

    org = await factory.organization()
    store = service.services.object_store
    stranded, kept = object_key_for(org, uuid4()), object_key_for(org, uuid4())
    for key in (stranded, kept):
        await store.put(key, b"# Old\n\nversion", content_type="text/markdown")
    async with service.db.connection() as conn:  # as the swap's trigger leaves it when the process dies after commit
        await conn.execute(
            "INSERT INTO agent.knowledge_object_deletes (object_key, organization_id) VALUES ($1, $2)", stranded, org
        )
    run = await service.executor.run(SWEEP, CRON_EVENT, retries=2)
    assert run.status == "completed" and run.output["objects"] == 1
    assert not await store.exists(stranded) and await store.exists(kept), "only the queued object goes"
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_object_deletes") == 0
