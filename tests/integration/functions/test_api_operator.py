"""The operator over HTTP: organizations, one 404 for an unknown one, switch status and cancel, explain mode."""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID, uuid4

import pytest

from functions.inngest.knowledge_ingest import EVENT_UPLOADED
from functions.inngest.knowledge_ingest import FUNCTION_ID as INGEST
from functions.inngest.knowledge_ingest import RETRIES as INGEST_RETRIES
from functions.inngest.knowledge_switch import EVENT_SWITCH, SWITCH_FUNCTION_ID, SWITCH_RETRIES
from knowledge.embedding.live_model import begin_switch, running_switch
from knowledge.embedding.registry import FakeEmbedder
from knowledge.errors import EmbeddingAuthError, EmbeddingProviderError
from knowledge.ingestion.registration import register_upload
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, Service
from tests.integration.functions.support import error_code as code

UNKNOWN = "00000000-0000-4000-8000-00000000dead"
BROKEN = "test/broken-32"
SOURCE = str(uuid4())
INVOCATION = {"organization_id": UNKNOWN, "definition_id": SOURCE, "run_id": SOURCE, "user_id": SOURCE}

# Every organization-scoped route, named with the unknown organization where it takes one.
SCOPED: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/context/briefs", {"json": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/context/dossier", {"params": {"organization_id": UNKNOWN}}),
    ("POST", "/v1/knowledge/sources", {"files": {"file": ("a.md", b"# A")}, "data": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/knowledge/sources", {"params": {"organization_id": UNKNOWN}}),
    (
        "POST",
        "/v1/knowledge/sources:batch",
        {"json": {"organization_id": UNKNOWN, "items": [{"filename": "a.md", "content": "# A"}]}},
    ),
    ("POST", "/v1/knowledge/sources/{source_id}/retry", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/knowledge/sources/{source_id}", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/knowledge/sources/{source_id}/chunks", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/knowledge/sources/{source_id}/progress", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/knowledge/sources/{source_id}/attempts", {"params": {"organization_id": UNKNOWN}}),
    ("DELETE", "/v1/knowledge/sources/{source_id}", {"params": {"organization_id": UNKNOWN}}),
    ("POST", "/v1/knowledge/search", {"json": {"organization_id": UNKNOWN, "query": "pricing"}}),
    ("GET", "/v1/knowledge/switch", {"params": {"organization_id": UNKNOWN}}),
    ("DELETE", "/v1/knowledge/switch", {"params": {"organization_id": UNKNOWN}}),
    ("POST", "/v1/memory/remember", {"json": {"invocation": INVOCATION, "arguments": {}}}),
    ("POST", "/v1/memory/forget", {"json": {"invocation": INVOCATION, "arguments": {"memory_id": SOURCE}}}),
    ("GET", "/v1/memory/memories", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/memory/memories/{memory_id}/chain", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/organizations/{organization_id}", {}),
    ("POST", "/v1/keys", {"json": {"scope": "organization", "organization_id": UNKNOWN}}),
    ("GET", "/v1/keys", {"params": {"organization_id": UNKNOWN}}),
    ("POST", "/v1/erasures/users", {"json": {"organization_id": UNKNOWN, "user_id": SOURCE}}),
    ("POST", "/v1/erasures/organizations", {"json": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/receipts", {"params": {"organization_id": UNKNOWN}}),
    ("GET", "/v1/receipts/{receipt_id}", {"params": {"organization_id": UNKNOWN}}),
    ("POST", "/v1/organizations/{organization_id}/users", {"json": {"email": "ada@example.test"}}),
    ("GET", "/v1/organizations/{organization_id}/users", {}),
    ("DELETE", "/v1/organizations/{organization_id}/users/{user_id}", {}),
    ("POST", "/v1/organizations/{organization_id}/agents", {"json": {"name": "Assistant"}}),
    ("GET", "/v1/organizations/{organization_id}/agents", {}),
    ("PATCH", "/v1/organizations/{organization_id}/agents/{agent_id}", {"json": {"status": "archived"}}),
    ("DELETE", "/v1/organizations/{organization_id}/agents/{agent_id}", {}),
    ("POST", "/v1/organizations/{organization_id}/runs", {"json": {"agent_id": SOURCE, "user_id": SOURCE}}),
    ("GET", "/v1/organizations/{organization_id}/runs", {}),
    ("POST", "/v1/organizations/{organization_id}/runs/{run_id}/finish", {"json": {}}),
    ("GET", "/v1/memory/export", {"params": {"organization_id": UNKNOWN}}),
    ("POST", "/v1/memory/imports", {"files": {"file": ("m.jsonl", b"")}, "data": {"organization_id": UNKNOWN}}),
]
UNSCOPED = {
    ("DELETE", "/v1/keys/{key_id}"),
    ("GET", "/v1/organizations"),
    ("POST", "/v1/organizations"),
    ("POST", "/v1/context/policies/validate"),
    ("GET", "/v1/memory/tools"),
}


class Broken32(FakeEmbedder):
    model_id = BROKEN
    dimensions = 32

    async def _embed_batch(self, texts: list[str]) -> Any:
        raise EmbeddingProviderError("the provider is gone", retryable=False)


class Keyless32(FakeEmbedder):
    model_id = "test/keyless-32"
    dimensions = 32

    def __init__(self) -> None:
        raise EmbeddingAuthError("test/keyless-32 needs an API key: set TEST_KEY", retryable=False)


async def test_an_unknown_organization_answers_404_on_every_organization_scoped_route(service: Service) -> None:
    paths = service.app.openapi()["paths"]
    routes = {(method.upper(), path) for path, ops in paths.items() if path.startswith("/v1/") for method in ops}
    assert routes - UNSCOPED == {(m, p) for m, p, _ in SCOPED}, "every organization-scoped route is checked here"
    for method, path, kwargs in SCOPED:
        url = path.format(
            source_id=SOURCE, organization_id=UNKNOWN, receipt_id=SOURCE, memory_id=SOURCE,
            user_id=SOURCE, agent_id=SOURCE, run_id=SOURCE,
        )  # fmt: skip
        response = await service.http.request(method, url, headers=service.auth, **kwargs)
        assert response.status_code == 404 and code(response) == "organization_not_found", (method, path, response.text)
        assert UNKNOWN in response.json()["error"]["message"]
        anonymous = await service.http.request(method, url, **kwargs)
        assert anonymous.status_code == 401, "the token is checked before the organization"
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources") == 0, "nothing was written"


async def test_organizations_are_created_listed_and_shown(service: Service) -> None:
    created = await service.http.post("/v1/organizations", json={"name": "Acme"}, headers=service.auth)
    assert created.status_code == 201, created.text
    org = created.json()["id"]
    listed = (await service.http.get("/v1/organizations", headers=service.auth)).json()["organizations"]
    assert [o["name"] for o in listed if o["id"] == org] == ["Acme"]
    shown = await service.http.get(f"/v1/organizations/{org}", headers=service.auth)
    assert shown.json()["name"] == "Acme"
    blank = await service.http.post("/v1/organizations", json={"name": "  "}, headers=service.auth)
    assert blank.status_code == 422 and code(blank) == "invalid_request"
    found = await service.http.get("/v1/knowledge/sources", params={"organization_id": org}, headers=service.auth)
    assert found.status_code == 200
    assert found.json() == {"items": [], "sources": [], "total": 0, "next_cursor": None, "prev_cursor": None}


async def ingest(service: Service, org: UUID, name: str, text: str) -> Any:
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=text.encode(), filename=name
    )
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": str(org)}}
    return await service.executor.run(INGEST, event, retries=INGEST_RETRIES)


async def test_a_running_switch_is_cancelled_over_http_and_ingestion_works_again(
    service: Service, factory: Factory
) -> None:
    service.services.embedders.register(BROKEN, Broken32, dimensions=32)
    org = await factory.organization()
    await begin_switch(service.db, org, BROKEN, dimensions=32)  # as a switch opened before the probe existed
    failed = await ingest(service, org, "one.md", "# One\n\nFirst text.")
    assert failed.status == "failed", "while the switch runs, ingestion also builds the broken model"

    params = {"organization_id": str(org)}
    status = (await service.http.get("/v1/knowledge/switch", params=params, headers=service.auth)).json()
    assert status["running"] and status["to_model"] == BROKEN and status["live_model"] == FAKE_MODEL
    cancelled = await service.http.delete("/v1/knowledge/switch", params=params, headers=service.auth)
    assert cancelled.status_code == 200 and cancelled.json()["cancelled"] is True
    assert await running_switch(service.db, org) is None
    assert (await ingest(service, org, "two.md", "# Two\n\nSecond text.")).status == "completed"
    again = await service.http.delete("/v1/knowledge/switch", params=params, headers=service.auth)
    assert again.json()["cancelled"] is False
    neither = await service.http.get("/v1/knowledge/switch", headers=service.auth)
    assert neither.status_code == 422 and code(neither) == "scope_required"


async def test_a_switch_to_a_model_that_cannot_embed_is_refused_before_it_opens(
    service: Service, factory: Factory
) -> None:
    service.services.embedders.register("test/keyless-32", Keyless32, dimensions=32)
    service.services.embedders.register(BROKEN, Broken32, dimensions=32)
    org = await factory.organization()
    for model in ("test/keyless-32", BROKEN):
        event = {"name": EVENT_SWITCH, "data": {"organization_id": str(org), "model": model}}
        run = await service.executor.run(SWITCH_FUNCTION_ID, event, retries=SWITCH_RETRIES)
        assert run.status == "failed" and "flip" not in run.step_names, run.output
        assert run.output["code"] == "non_retriable_error" and "embedding_" in run.output["message"]
        assert await running_switch(service.db, org) is None, f"no switch opened for {model}"
    with pytest.raises(EmbeddingProviderError):
        await begin_switch(service.db, org, BROKEN, embedder=Broken32())
    assert await running_switch(service.db, org) is None


async def test_explain_mode_answers_beside_an_unchanged_brief_and_logs_nothing(
    service: Service, factory: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    tenant = await factory.tenant(companies=2)
    body = {
        "organization_id": str(tenant.id),
        "entities": [{"kind": "crm.company", "id": str(c)} for c in tenant.companies],
        "policy": {"sources": [{"name": "application", "token_budget": 40}], "total_token_budget": 500},
    }
    plain = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
    with caplog.at_level(logging.DEBUG):
        explained = await service.http.post("/v1/context/briefs", json=body | {"explain": True}, headers=service.auth)
    assert plain.status_code == explained.status_code == 200, explained.text
    assert plain.json()["explanation"] is None
    assert explained.json()["brief"] == plain.json()["brief"], "explain mode changes nothing in the brief"
    explanation = explained.json()["explanation"]
    reasons = {e["reason"] for e in explanation["items"]}
    assert "kept" in reasons and "source_budget_spent" in reasons, explanation
    assert explanation["sources"][0]["budget"] == 40
    for entry in explanation["items"]:
        assert all(entry["message"] not in r.getMessage() for r in caplog.records if entry["reason"] != "kept")


async def test_explain_mode_names_a_knowledge_chunk_the_relevance_floor_cut(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    assert (
        await ingest(service, org, "deal.md", "The deal pipeline holds every open opportunity.")
    ).status == "completed"
    assert (await ingest(service, org, "junk.md", "/// --- /// --- ///")).status == "completed"
    policy = {"sources": [{"name": "knowledge", "token_budget": 400, "options": {"include_organization": True}}],
              "total_token_budget": 500}  # fmt: skip
    body = {"organization_id": str(org), "query": "which deal is in the pipeline", "policy": policy, "explain": True}
    answer = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
    assert answer.status_code == 200, answer.text
    cut = answer.json()["explanation"]["cut"]
    assert [(c["source"], c["rule"], c["title"]) for c in cut] == [("knowledge", "relevance_floor", "junk (part 1)")]
    assert "relevance floor" in cut[0]["message"] and len(answer.json()["brief"]["items"]) == 1
