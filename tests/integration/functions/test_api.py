"""HTTP tests of every `/v1/` endpoint: the answer, the auth failures, and each bad-input code."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from context.builder import ContextBuilder
from context.errors import RequiredContextSourceError
from context.models import ContextBrief, ContextPolicy, ContextRequest
from context.policies import FRONT_DOOR
from functions.events import EVENT_BATCH
from functions.inngest.knowledge_ingest import EVENT_RETRY, EVENT_UPLOADED
from functions.inngest.knowledge_ingest import FUNCTION_ID as INGEST
from functions.inngest.knowledge_ingest import RETRIES as INGEST_RETRIES
from state import outbox
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.integration.functions.support import error_code as code
from tests.support import eventually

ENCRYPTED = (
    Path(__file__).resolve().parents[3].parent
    / "shared/corpus/pdf/py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf"
)
NOTE = b"# Pricing\n\nThe Contoso pilot costs 48,000 EUR a year, billed quarterly."

V1_ROUTES: list[tuple[str, str]] = [
    ("POST", "/v1/context/briefs"),
    ("GET", "/v1/context/dossier"),
    ("POST", "/v1/context/policies/validate"),
    ("POST", "/v1/knowledge/sources"),
    ("GET", "/v1/knowledge/sources"),
    ("POST", f"/v1/knowledge/sources/{uuid4()}/retry"),
    ("POST", "/v1/knowledge/search"),
    ("POST", "/v1/memory/remember"),
    ("POST", "/v1/memory/forget"),
    ("GET", "/v1/memory/tools"),
]


class SpyBuilder:
    """Records what each build was asked for, and optionally fails like a required source."""

    def __init__(self, inner: ContextBuilder, *, fail: list[str] | None = None) -> None:
        self.inner, self.fail = inner, fail
        self.calls: list[tuple[ContextRequest, ContextPolicy]] = []

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        self.calls.append((request, policy))
        if self.fail:
            raise RequiredContextSourceError(self.fail)
        return await self.inner.build(request, policy)


# --- auth -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), V1_ROUTES)
async def test_every_v1_route_refuses_a_missing_or_wrong_token(service: Service, method: str, path: str) -> None:
    missing = await service.http.request(method, path)
    assert missing.status_code == 401 and code(missing) == "auth_missing"
    wrong = await service.http.request(method, path, headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401 and code(wrong) == "auth_invalid"
    basic = await service.http.request(method, path, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert basic.status_code == 401 and code(basic) == "auth_missing"


async def test_v1_refuses_every_call_when_no_token_is_configured(db: Database, tmp_path: Path) -> None:
    from functions.app import create_app

    key = new_signing_key()
    app = create_app(
        load_settings(data_dir=tmp_path),
        db=db,
        inngest_client=RecordingInngest(app_id="ac-context", is_production=True, signing_key=key),
    )
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        response = await http.get("/v1/memory/tools", headers={"Authorization": "Bearer anything"})
        assert response.status_code == 503 and code(response) == "auth_not_configured"
        assert (await http.get("/healthz")).status_code == 200


# --- operations -------------------------------------------------------------------------------------------


async def test_health_readiness_metrics_and_openapi_need_no_token(service: Service) -> None:
    assert (await service.http.get("/healthz")).json() == {"status": "ok"}
    ready = await service.http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    metrics = await service.http.get("/metrics")
    assert metrics.status_code == 200 and "ac_context_brief_tokens" in metrics.text
    spec = (await service.http.get("/openapi.json")).json()
    for _, path in V1_ROUTES:
        if "/retry" not in path:
            assert path in spec["paths"], f"{path} is missing from the OpenAPI document"


async def test_readyz_reports_pending_migrations_in_the_error_envelope(service: Service) -> None:
    async with service.db.connection() as conn:
        last = await conn.fetchval(
            "DELETE FROM public.schema_migrations WHERE name = (SELECT max(name) FROM public.schema_migrations) "
            "RETURNING name"
        )
    ready = await service.http.get("/readyz")
    assert ready.status_code == 503, ready.text
    assert set(ready.json()) == {"error"}, "a 503 is the one error envelope"
    error = ready.json()["error"]
    assert error["code"] == "migrations_pending" and last in error["message"]
    assert error["details"] == {"status": "migrations_pending", "database": True, "pending_migrations": [last]}


# --- context ----------------------------------------------------------------------------------------------


async def test_a_front_door_brief_uses_the_actor_subject_and_the_front_door_policy(
    service: Service, factory: Factory
) -> None:
    tenant = await factory.tenant(users=1)
    company = await factory.company(tenant.id, name="Contoso Robotics", lifecycle_stage="opportunity")
    conversation = await factory.conversation(tenant.id, user_id=tenant.user)
    await factory.message(tenant.id, conversation, "What stage is Contoso in? SECRET-QUERY-TEXT")
    spy = SpyBuilder(service.services.builder)
    service.services.builder = spy
    body = {
        "organization_id": str(tenant.id),
        "user_id": str(tenant.user),
        "query": "What stage is Contoso in? SECRET-QUERY-TEXT",
        "entities": [{"kind": "crm.company", "id": str(company)}],
        "conversation_id": str(conversation),
    }
    response = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)

    assert response.status_code == 200, response.text
    assert response.json()["policy"] == "front_door"
    brief = response.json()["brief"]
    assert "Contoso Robotics" in brief["text"] and brief["tokens"] > 0
    request, policy = spy.calls[0]
    assert policy == FRONT_DOOR
    subject = request.subject
    assert (subject.organization_id, subject.user_id) == (tenant.id, tenant.user)
    assert subject.definition_id is None and subject.trigger_id is None and request.run_id is None, (
        "a front door turn never mints a principal: no definition, no trigger, no run"
    )
    metrics = (await service.http.get("/metrics")).text
    assert 'ac_context_brief_tokens_count{route="front_door"} 1.0' in metrics
    assert "SECRET-QUERY-TEXT" not in metrics and "Contoso" not in metrics, "metrics never hold prompt text"


async def test_a_caller_policy_passes_the_publish_check_before_anything_is_read(
    service: Service, factory: Factory
) -> None:
    spy = SpyBuilder(service.services.builder)
    service.services.builder = spy
    org = str(await factory.organization())
    bad = {"sources": [{"name": "knowledge", "token_budget": 0, "options": {"organization_id": org}}]}
    refused = await service.http.post(
        "/v1/context/briefs", json={"organization_id": org, "policy": bad}, headers=service.auth
    )
    assert refused.status_code == 422 and code(refused) == "policy_invalid"
    locs = [tuple(d["loc"]) for d in refused.json()["error"]["details"]]
    assert ["sources", 0, "options", "organization_id"] in [list(loc) for loc in locs]
    assert ["sources", 0, "token_budget"] in [list(loc) for loc in locs]
    assert spy.calls == [], "a policy that fails the publish check reads nothing"

    good = {"sources": [{"name": "dossier", "token_budget": 300}], "total_token_budget": 500}
    accepted = await service.http.post(
        "/v1/context/briefs", json={"organization_id": org, "policy": good}, headers=service.auth
    )
    assert accepted.status_code == 200 and accepted.json()["policy"] == "caller"


async def test_a_brief_answers_each_bad_input_and_a_required_failure_with_its_code(
    service: Service, factory: Factory
) -> None:
    org = str(await factory.organization())
    not_uuid = await service.http.post("/v1/context/briefs", json={"organization_id": "acme"}, headers=service.auth)
    assert not_uuid.status_code == 422 and code(not_uuid) == "invalid_request"
    extra = await service.http.post(
        "/v1/context/briefs", json={"organization_id": org, "principal": {}}, headers=service.auth
    )
    assert extra.status_code == 422 and code(extra) == "invalid_request"
    service.services.builder = SpyBuilder(service.services.builder, fail=["conversation"])
    failed = await service.http.post("/v1/context/briefs", json={"organization_id": org}, headers=service.auth)
    assert failed.status_code == 503 and code(failed) == "required_context_source_failed"
    assert failed.json()["error"]["details"] == {"sources": ["conversation"]}


async def test_the_dossier_endpoint_serves_what_the_model_reads(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    await factory.insert(
        "org_company_profiles", organization_id=org, company_name="Acme Demo", description="We sell robots"
    )
    response = await service.http.get("/v1/context/dossier", params={"organization_id": str(org)}, headers=service.auth)
    assert response.status_code == 200, response.text
    assert "Acme Demo" in response.json()["text"]
    bad = await service.http.get("/v1/context/dossier", params={"organization_id": "x"}, headers=service.auth)
    assert bad.status_code == 422 and code(bad) == "invalid_request"


async def test_policy_validation_answers_with_every_problem_and_its_path(service: Service) -> None:
    ok = await service.http.post(
        "/v1/context/policies/validate", json={"policy": FRONT_DOOR.model_dump(mode="json")}, headers=service.auth
    )
    assert ok.status_code == 200 and ok.json()["valid"] is True
    twice = {
        "sources": [{"name": "memory", "token_budget": 10}, {"name": "memory", "token_budget": "10"}],
        "total_token_budget": 0,
    }
    refused = await service.http.post("/v1/context/policies/validate", json={"policy": twice}, headers=service.auth)
    assert refused.status_code == 422 and code(refused) == "policy_invalid"
    assert ["sources", 1, "token_budget"] in [d["loc"] for d in refused.json()["error"]["details"]]
    malformed = await service.http.post("/v1/context/policies/validate", json={"policy": []}, headers=service.auth)
    assert malformed.status_code == 422 and code(malformed) == "invalid_request"


# --- knowledge --------------------------------------------------------------------------------------------


def upload_form(org: UUID | None, data: bytes = NOTE, name: str = "pricing.md", **fields: str) -> dict[str, Any]:
    form = {"organization_id": str(org)} if org else {}
    return {"files": {"file": (name, data, "text/markdown")}, "data": {**form, **fields}}


async def test_an_upload_registers_once_per_organization_and_sends_the_ingestion_event(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    first = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org))
    assert first.status_code == 202 and first.json()["created"] is True and first.json()["event_status"] == "sent"
    source_id = first.json()["source_id"]
    assert [(e.name, e.data["source_id"]) for e in service.inngest.sent] == [(EVENT_UPLOADED, source_id)]

    await service.executor.run(
        INGEST, {"name": EVENT_UPLOADED, "data": dict(service.inngest.sent[0].data)}, retries=INGEST_RETRIES
    )
    again = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org))
    assert again.status_code == 200 and again.json() == {
        "source_id": source_id, "created": False, "status": "ready", "event_id": None, "event_status": None,
        "event_error": None, "outcome": "unchanged", "replaces": None,
    }  # fmt: skip
    assert len(service.inngest.sent) == 1, "a ready source is not ingested again"
    other = await factory.organization()
    elsewhere = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(other))
    assert elsewhere.json()["created"] is True, "the idempotency boundary is the organization"

    listed = await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)}, headers=service.auth)
    assert [(s["id"], s["status"], s["failure_reason"]) for s in listed.json()["sources"]] == [
        (source_id, "ready", None)
    ]

    hits = await service.http.post(
        "/v1/knowledge/search", json={"organization_id": str(org), "query": "pilot price"}, headers=service.auth
    )
    assert hits.status_code == 200 and hits.json()["hits"][0]["source_id"] == source_id


async def test_a_synced_uri_registers_by_its_uri(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    body = {
        "organization_id": str(org),
        "uri": "https://wiki.example/pricing",
        "content": NOTE.decode(),
        "media_type": "text/markdown",
    }
    first = await service.http.post("/v1/knowledge/sources", json=body, headers=service.auth)
    second = await service.http.post("/v1/knowledge/sources", json={**body, "content": "changed"}, headers=service.auth)
    assert first.status_code == 202 and second.status_code == 202
    assert second.json()["outcome"] == "resync" and second.json()["replaces"] == first.json()["source_id"]
    same = await service.http.post("/v1/knowledge/sources", json=body, headers=service.auth)
    assert same.json()["source_id"] == first.json()["source_id"] and same.json()["outcome"] == "unchanged"
    platform = {k: v for k, v in body.items() if k != "organization_id"} | {"platform": True}
    shared = await service.http.post("/v1/knowledge/sources", json=platform, headers=service.auth)
    assert shared.status_code == 202 and shared.json()["source_id"] != first.json()["source_id"]


async def test_an_upload_answers_each_bad_input_with_its_code(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    post = service.http.post
    limit = service.services.settings.max_upload_bytes
    cases: list[tuple[dict[str, Any], int, str]] = [
        (upload_form(org, b"x" * (limit + 1)), 413, "document_too_large"),
        (upload_form(org, b""), 422, "document_empty"),
        (upload_form(None), 422, "scope_required"),
        (upload_form(org, platform="true"), 422, "scope_ambiguous"),
        (
            {"data": {"organization_id": str(org)}, "files": {"other": ("a.md", b"x", "text/plain")}},
            422,
            "file_missing",
        ),
        (upload_form(None, organization_id="acme"), 422, "invalid_request"),
        ({"content": b"plain", "headers": {"content-type": "text/plain"}}, 415, "unsupported_media_type"),
        ({"json": {"organization_id": str(org), "content": "x"}}, 422, "invalid_request"),
    ]
    for kwargs, status, expected in cases:
        headers = {**service.auth, **kwargs.pop("headers", {})}
        response = await post("/v1/knowledge/sources", headers=headers, **kwargs)
        assert (response.status_code, code(response)) == (status, expected), response.text
    huge = await post("/v1/knowledge/sources", headers={**service.auth, "content-length": str(10 * limit)}, content=b"")
    assert huge.status_code == 413 and code(huge) == "document_too_large"
    assert service.inngest.sent == [], "no bad input sends an event"


async def test_an_upload_whose_event_cannot_be_sent_waits_in_the_outbox_and_is_sent_once_inngest_answers(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    service.inngest.fail_sends = True
    queued = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org))
    body = queued.json()
    assert queued.status_code == 202, "a send failure is not the client's problem: the event waits"
    assert body["status"] == "pending" and body["event_status"] == "queued", body
    assert "ConnectionError" in body["event_error"] and body["event_id"]
    assert service.inngest.sent == []
    service.inngest.fail_sends = False  # the server is back: the service's drainer sends the event itself

    async def sent() -> bool:
        return bool(service.inngest.sent)

    await eventually(sent, "the drainer sent the queued event")
    (event,) = service.inngest.sent
    assert event.id == body["event_id"], "the event carries its outbox id, so a resend is deduplicated"
    assert event.name == EVENT_UPLOADED and event.data["source_id"] == body["source_id"]
    (row,) = await outbox.rows(service.db, [UUID(body["event_id"])])
    assert row.delivered_by == "inngest" and row.sent_at is not None
    await service.app.state.outbox.drain_once()
    assert len(service.inngest.sent) == 1, "a sent event is never sent again"
    again = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org))
    assert again.status_code == 200 and again.json()["status"] == "pending" and again.json()["event_status"] == "sent"


async def test_a_batch_whose_events_cannot_be_sent_is_registered_and_queued(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    service.inngest.fail_sends = True
    items = [{"uri": f"https://example.com/q{n}", "content": f"queued batch document {n}"} for n in range(3)]
    queued = await service.http.post(
        "/v1/knowledge/sources:batch", headers=service.auth, json={"organization_id": str(org), "items": items}
    )
    body = queued.json()
    assert queued.status_code == 202 and body["event_status"] == "queued", body
    assert [s["status"] for s in body["sources"]] == ["pending"] * 3
    waiting = await outbox.rows(service.db, [UUID(i) for i in body["event_ids"]])
    assert [r.name for r in waiting] == [EVENT_BATCH] and waiting[0].sent_at is None
    assert waiting[0].organization_id == org


async def test_a_failed_source_is_listed_with_its_reason_and_can_be_retried(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    files = {"file": ("locked.pdf", ENCRYPTED.read_bytes(), "application/pdf")}
    created = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth, files=files, data={"organization_id": str(org)}
    )
    source_id = created.json()["source_id"]
    await service.executor.run(
        INGEST, {"name": EVENT_UPLOADED, "data": dict(service.inngest.sent[0].data)}, retries=INGEST_RETRIES
    )
    listed = await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)}, headers=service.auth)
    (source,) = listed.json()["sources"]
    assert source["status"] == "failed" and source["failure_reason"].startswith("pdf_encrypted:")

    retried = await service.http.post(
        f"/v1/knowledge/sources/{source_id}/retry", params={"organization_id": str(org)}, headers=service.auth
    )
    assert retried.status_code == 202 and retried.json()["reset"] is True and retried.json()["status"] == "pending"
    assert service.inngest.sent[-1].name == EVENT_RETRY and service.inngest.sent[-1].data["source_id"] == source_id

    service.inngest.fail_sends = True  # a retry whose event cannot be sent waits in the outbox, never stranded
    await service.executor.run(
        INGEST, {"name": EVENT_RETRY, "data": dict(service.inngest.sent[-1].data)}, retries=INGEST_RETRIES
    )
    failed_again = (
        await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)}, headers=service.auth)
    ).json()["sources"][0]
    assert failed_again["status"] == "failed", failed_again
    queued = await service.http.post(
        f"/v1/knowledge/sources/{source_id}/retry", params={"organization_id": str(org)}, headers=service.auth
    )
    assert queued.status_code == 202 and queued.json()["event_status"] == "queued", queued.text
    assert queued.json()["reset"] is True and queued.json()["event_error"]
    (waiting,) = await outbox.rows(service.db, [UUID(queued.json()["event_id"])])
    assert (waiting.name, waiting.sent_at, waiting.data["source_id"]) == (EVENT_RETRY, None, source_id)
    service.inngest.fail_sends = False

    other = await factory.organization()
    foreign = await service.http.post(
        f"/v1/knowledge/sources/{source_id}/retry", params={"organization_id": str(other)}, headers=service.auth
    )
    assert foreign.status_code == 404 and code(foreign) == "knowledge_source_not_found"
    no_scope = await service.http.post(f"/v1/knowledge/sources/{source_id}/retry", headers=service.auth)
    assert no_scope.status_code == 422 and code(no_scope) == "scope_required"


async def test_retrying_a_ready_source_is_refused(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    created = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org))
    await service.executor.run(
        INGEST, {"name": EVENT_UPLOADED, "data": dict(service.inngest.sent[0].data)}, retries=INGEST_RETRIES
    )
    ready = await service.http.post(
        f"/v1/knowledge/sources/{created.json()['source_id']}/retry",
        params={"organization_id": str(org)},
        headers=service.auth,
    )
    assert ready.status_code == 409 and code(ready) == "source_not_failed"


async def test_search_answers_bad_input_with_its_code(service: Service, factory: Factory) -> None:
    org = str(await factory.organization())
    for body in (
        {"organization_id": org, "query": ""},
        {"organization_id": org, "query": "x", "limit": 0},
        {"organization_id": org, "query": "x", "keep_top": -1},
        {"organization_id": org, "query": "x", "keep_top": "8"},
        {"query": "x"},
    ):
        response = await service.http.post("/v1/knowledge/search", json=body, headers=service.auth)
        assert response.status_code == 422 and code(response) == "invalid_request"
    listed = await service.http.get(
        "/v1/knowledge/sources", params={"limit": 0, "platform": "true"}, headers=service.auth
    )
    assert listed.status_code == 422 and code(listed) == "invalid_request"


# --- memory -----------------------------------------------------------------------------------------------


async def test_remember_and_forget_run_the_memory_tools(service: Service, factory: Factory) -> None:
    tenant = await factory.tenant(users=1)
    definition = await factory.definition(tenant.id)
    run = await factory.run(tenant.id, definition_id=definition, user_id=tenant.user)
    invocation = {
        "organization_id": str(tenant.id),
        "definition_id": str(definition),
        "run_id": str(run),
        "user_id": str(tenant.user),
    }
    arguments = {"attribute": "preference.language", "text": "Write in British English", "scope": "user"}

    def call(tool: str, args: dict[str, Any], inv: dict[str, Any] = invocation) -> Any:
        return service.http.post(
            f"/v1/memory/{tool}", json={"invocation": inv, "arguments": args}, headers=service.auth
        )

    remembered = await call("remember", arguments)
    assert remembered.status_code == 200, remembered.text
    memory_id = remembered.json()["memory_id"]
    duplicate = await call("remember", arguments)
    assert duplicate.status_code == 409 and code(duplicate) == "memory_duplicate"
    smuggled = await call("remember", {**arguments, "subject_key": "user:x:preference.language"})
    assert smuggled.status_code == 422 and code(smuggled) == "invalid_input"
    assert smuggled.json()["error"]["details"], "invalid_input lists the offending fields"
    namespace = await call("remember", {**arguments, "attribute": "lifecycle_stage"})
    assert namespace.status_code == 422 and code(namespace) == "invalid_input", "an application field is refused"
    trigger_run = {**invocation, "user_id": None, "trigger_id": str(uuid4())}
    user_scope = await call("remember", arguments, trigger_run)
    assert user_scope.status_code == 422 and code(user_scope) == "memory_user_scope_for_trigger"
    both = await call("remember", arguments, {**invocation, "trigger_id": str(uuid4())})
    assert both.status_code == 422 and code(both) == "invalid_invocation"

    forgotten = await call("forget", {"memory_id": memory_id})
    assert forgotten.status_code == 200 and forgotten.json()["forgotten"] is True
    again = await call("forget", {"memory_id": memory_id})
    assert again.status_code in (404, 409) and code(again).startswith("memory_")
    tools = await service.http.get("/v1/memory/tools", headers=service.auth)
    assert {t["name"] for t in tools.json()["tools"]} == {"memory.remember", "memory.forget"}


async def test_readyz_reports_an_event_key_inngest_rejects(service: Service, factory: Factory) -> None:
    from inngest._internal.errors import SendEventsError  # what the SDK raises for Inngest's 401 answer

    org = await factory.organization()
    service.inngest.fail_sends = True
    service.inngest.failure = SendEventsError("Event key not found", [])
    queued = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org))
    assert queued.json()["event_status"] == "queued" and "Event key not found" in queued.json()["event_error"]
    fresh = await service.http.get("/readyz")
    assert fresh.status_code == 200 and fresh.json()["events"]["waiting"] == 1, "a send that just failed may recover"
    async with service.db.connection() as conn:
        await conn.execute("UPDATE agent.event_outbox SET created_at = now() - interval '10 minutes'")
    one = await service.http.get("/readyz")
    assert one.status_code == 200 and one.json()["outbox"]["stuck"] == 1, "one stuck event may be that event's fault"
    second = await service.http.post("/v1/knowledge/sources", headers=service.auth, **upload_form(org, b"# Other"))
    assert second.json()["event_status"] == "queued"
    async with service.db.connection() as conn:
        await conn.execute("UPDATE agent.event_outbox SET created_at = now() - interval '10 minutes'")
    stuck = await service.http.get("/readyz")
    error = stuck.json()["error"]
    body = error["details"]
    assert stuck.status_code == 503 and error["code"] == body["status"] == "events_undeliverable", error
    assert "Event key not found" in error["message"] == body["reason"] and body["events"]["waiting"] == 2
    assert body["outbox"]["stuck"] == 2


async def test_readyz_waits_for_the_database_only_as_long_as_the_readiness_setting_allows(
    db: Database, tmp_path: Path
) -> None:
    from functions.app import create_app
    from tests.integration.functions.conftest import TOKEN, fake_embedders

    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    for timeout_s, ready in ((1e-9, False), (300.0, True)):  # no database answers within a nanosecond
        settings = load_settings(api_token=TOKEN, data_dir=tmp_path, readiness_timeout_s=timeout_s)
        app = create_app(settings, db=db, inngest_client=client, embedders=fake_embedders())
        async with app.router.lifespan_context(app), asgi_client(app) as http:
            answer = await http.get("/readyz")
        assert (answer.status_code == 200) is ready, answer.text
        if not ready:
            assert answer.json()["error"]["code"] == "database_unavailable"
