"""Read-your-writes for every write (issue 44): with standbys configured, every mutating `/v1/` route of the
OpenAPI schema answers `AC-Consistency-Token` and records its write for the organization it wrote in (or the
platform); the POSTs that only read answer none; a token with trailing text is refused; a standby failing at
connection setup, whatever asyncpg raises, costs a counted fallback, not a 500. A console write is a platform
write.

A "standby" here is the primary itself (the router sees it promoted and reads run on the primary): the
middleware only needs standbys configured. The real standby's tests are `test_standby_writes_and_failures.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

import httpx
import pytest

from functions.api._consistency import READS
from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key
from state.replicas import ReadRouter, parse_consistency_token, parse_lsn
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN as OPERATOR_TOKEN
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code
from tests.integration.functions.test_console import sign_in
from tests.support import free_port

TOKEN = "AC-Consistency-Token"
Written = Literal["organization", "platform"]


@dataclass
class World:
    """An organization with a person, a run, a failed source and a memory, and one to erase."""

    org: UUID
    user: UUID
    invocation: dict[str, str]
    failed_source: UUID
    deleted_source: UUID
    memory: UUID
    key_id: str
    doomed: UUID
    other: UUID
    definition: UUID
    spare_user: UUID
    spare_agent: UUID
    running_run: UUID


@pytest.fixture
async def routed(service: Service) -> ReadRouter:
    """Standbys configured (the primary standing in for one)."""
    return service.db.use_standbys([service.db.url], load_settings())


@pytest.fixture
async def world(service: Service, factory: Factory, routed: ReadRouter) -> World:
    tenant = await factory.tenant(users=1)
    org = tenant.id
    definition = await factory.definition(org)
    run = await factory.run(org, definition_id=definition, user_id=tenant.user)
    invocation = {"organization_id": str(org), "definition_id": str(definition), "run_id": str(run),
                  "user_id": str(tenant.user)}  # fmt: skip
    sources = []
    for name in ("failed.md", "deleted.md"):
        registered = await register_upload(
            service.db, service.services.object_store, organization_id=org, data=f"# {name}".encode(), filename=name
        )
        sources.append(registered.source_id)
    async with service.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'x', pending_since = NULL"
            " WHERE id = $1",
            sources[0],
        )
    arguments = {"attribute": "preference.language", "text": "Write in Scots", "scope": "user"}
    remembered = await service.http.post(
        "/v1/memory/remember", headers=service.auth, json={"invocation": invocation, "arguments": arguments}
    )
    assert remembered.status_code == 200, remembered.text
    key = await mint_key(service.db, organization_id=org, name="to revoke")
    return World(
        org=org, user=tenant.user, invocation=invocation, failed_source=sources[0], deleted_source=sources[1],
        memory=UUID(remembered.json()["memory_id"]), key_id=key.key.id, doomed=await factory.organization(),
        other=await factory.organization(), definition=definition, spare_user=await factory.user(org),
        spare_agent=await factory.definition(org),
        running_run=await factory.run(org, definition_id=definition, user_id=tenant.user, status="running"),
    )  # fmt: skip


Call = Callable[[httpx.AsyncClient, dict[str, str], World], Awaitable[httpx.Response]]


async def _import_own_export(http: httpx.AsyncClient, auth: dict[str, str], world: World) -> httpx.Response:
    """Export the organization's memories and import them back: every chain exists, but the receipt is a write."""
    exported = await http.get("/v1/memory/export", headers=auth, params={"organization_id": str(world.org)})
    assert exported.status_code == 200, exported.text
    files = {"file": ("memories.jsonl", exported.content)}
    return await http.post("/v1/memory/imports", headers=auth, files=files, data={"organization_id": str(world.org)})


def _calls() -> dict[tuple[str, str], tuple[Written, Call]]:
    """One valid request of every mutating route, and where its write is recorded."""
    md = {"file": ("note.md", b"# Note\n\nThe pilot costs 48,000 EUR.")}
    return {
        ("POST", "/v1/organizations"): (
            "platform", lambda h, a, w: h.post("/v1/organizations", headers=a, json={"name": "Tokened"})
        ),
        ("POST", "/v1/keys"): ("organization", lambda h, a, w: h.post(
            "/v1/keys", headers=a, json={"scope": "organization", "organization_id": str(w.org)})),
        ("DELETE", "/v1/keys/{key_id}"): ("platform", lambda h, a, w: h.delete(f"/v1/keys/{w.key_id}", headers=a)),
        ("POST", "/v1/knowledge/sources"): ("organization", lambda h, a, w: h.post(
            "/v1/knowledge/sources", headers=a, files=md, data={"organization_id": str(w.org)})),
        ("POST", "/v1/knowledge/sources:batch"): ("organization", lambda h, a, w: h.post(
            "/v1/knowledge/sources:batch", headers=a,
            json={"organization_id": str(w.org), "items": [{"filename": "b.md", "content": "# Batch"}]})),
        ("POST", "/v1/knowledge/sources/{source_id}/retry"): ("organization", lambda h, a, w: h.post(
            f"/v1/knowledge/sources/{w.failed_source}/retry", headers=a, params={"organization_id": str(w.org)})),
        ("DELETE", "/v1/knowledge/sources/{source_id}"): ("organization", lambda h, a, w: h.delete(
            f"/v1/knowledge/sources/{w.deleted_source}", headers=a, params={"organization_id": str(w.org)})),
        ("DELETE", "/v1/knowledge/switch"): ("organization", lambda h, a, w: h.delete(
            "/v1/knowledge/switch", headers=a, params={"organization_id": str(w.org)})),
        ("POST", "/v1/memory/remember"): ("organization", lambda h, a, w: h.post(
            "/v1/memory/remember", headers=a, json={"invocation": w.invocation, "arguments": {
                "attribute": "preference.tone", "text": "Be brief", "scope": "user"}})),
        ("POST", "/v1/memory/forget"): ("organization", lambda h, a, w: h.post(
            "/v1/memory/forget", headers=a,
            json={"invocation": w.invocation, "arguments": {"memory_id": str(w.memory)}})),
        ("POST", "/v1/organizations/{organization_id}/users"): ("organization", lambda h, a, w: h.post(
            f"/v1/organizations/{w.org}/users", headers=a, json={"email": "tokened@example.test"})),
        ("DELETE", "/v1/organizations/{organization_id}/users/{user_id}"): ("organization", lambda h, a, w: h.delete(
            f"/v1/organizations/{w.org}/users/{w.spare_user}", headers=a)),
        ("POST", "/v1/organizations/{organization_id}/agents"): ("organization", lambda h, a, w: h.post(
            f"/v1/organizations/{w.org}/agents", headers=a, json={"name": "Tokened"})),
        ("POST", "/v1/organizations/{organization_id}/runs"): ("organization", lambda h, a, w: h.post(
            f"/v1/organizations/{w.org}/runs", headers=a,
            json={"agent_id": str(w.definition), "user_id": str(w.user)})),
        ("POST", "/v1/organizations/{organization_id}/runs/{run_id}/finish"): ("organization", lambda h, a, w: h.post(
            f"/v1/organizations/{w.org}/runs/{w.running_run}/finish", headers=a, json={})),
        ("PATCH", "/v1/organizations/{organization_id}/agents/{agent_id}"): ("organization", lambda h, a, w: h.patch(
            f"/v1/organizations/{w.org}/agents/{w.spare_agent}", headers=a, json={"status": "archived"})),
        ("DELETE", "/v1/organizations/{organization_id}/agents/{agent_id}"): ("organization", lambda h, a, w: h.delete(
            f"/v1/organizations/{w.org}/agents/{w.spare_agent}", headers=a)),
        ("POST", "/v1/memory/imports"): ("organization", _import_own_export),
        ("POST", "/v1/erasures/users"): ("organization", lambda h, a, w: h.post(
            "/v1/erasures/users", headers=a, json={"organization_id": str(w.org), "user_id": str(w.user)})),
        ("POST", "/v1/erasures/organizations"): ("organization", lambda h, a, w: h.post(
            "/v1/erasures/organizations", headers=a, json={"organization_id": str(w.doomed)})),
    }  # fmt: skip


def _written_in(world: World, written: Written, method: str, path: str) -> UUID | None:
    if written == "platform":
        return None
    return world.doomed if path == "/v1/erasures/organizations" else world.org


def _mutating_routes(schema: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        if path.startswith("/v1/")
        for method in operations
        if method.upper() not in {"GET", "HEAD", "OPTIONS"}
    }


async def test_every_mutating_route_answers_a_token_and_records_its_write_where_it_wrote(
    service: Service, world: World, routed: ReadRouter
) -> None:
    mutating = _mutating_routes(service.app.openapi())
    calls = _calls()
    assert READS <= mutating, f"a declared read that is no route: {READS - mutating}"
    assert mutating - READS == set(calls), "every mutating route has a call here (a new one: add it)"
    for (method, path), (written, call) in calls.items():
        answer = await call(service.http, service.auth, world)
        assert 200 <= answer.status_code < 300, (method, path, answer.text)
        assert TOKEN in answer.headers, f"{method} {path} answered no consistency token"
        lsn = parse_consistency_token(answer.headers[TOKEN])
        organization = _written_in(world, written, method, path)
        assert routed.required_lsn(organization) >= lsn, f"{method} {path}: its own reads wait for it"
        if organization is None:
            assert routed.required_lsn(world.other) >= lsn, f"{method} {path}: a platform write, every org waits"
        else:
            assert routed.required_lsn(world.other) < lsn, f"{method} {path}: no other organization waits for it"


async def test_the_posts_that_only_read_answer_no_token_and_make_no_read_wait(
    service: Service, world: World, routed: ReadRouter
) -> None:
    bodies = {
        "/v1/context/briefs": {"organization_id": str(world.org), "user_id": str(world.user), "query": "tone"},
        "/v1/context/policies/validate": {"policy": {"sources": [], "total_token_budget": 100}},
        "/v1/knowledge/search": {"organization_id": str(world.org), "query": "pilot"},
    }
    assert {("POST", path) for path in bodies} == READS
    waited = routed.required_lsn(world.org)
    for path, body in bodies.items():
        answer = await service.http.post(path, headers=service.auth, json=body)
        assert answer.status_code == 200, (path, answer.text)
        assert TOKEN not in answer.headers, f"{path} only reads"
    assert routed.required_lsn(world.org) == waited, "a read makes the next read wait for nothing"


async def test_an_organization_keys_write_is_recorded_for_its_organization(
    service: Service, world: World, routed: ReadRouter
) -> None:
    key = (await mint_key(service.db, organization_id=world.org, name="writer")).secret
    arguments = {"attribute": "preference.format", "text": "Use tables", "scope": "user"}
    answer = await service.http.post(
        "/v1/memory/remember",
        headers={"Authorization": f"Bearer {key}"},
        json={"invocation": world.invocation, "arguments": arguments},
    )
    assert answer.status_code == 200, answer.text
    lsn = parse_consistency_token(answer.headers[TOKEN])
    assert routed.required_lsn(world.org) >= lsn > routed.required_lsn(world.other)


@pytest.mark.parametrize("token", ["lsn:16/B374D848x", "lsn:16/B374D848/0", "xlsn:16/B374D848", "lsn:16/"])
async def test_a_token_with_trailing_or_other_text_is_refused(
    service: Service, world: World, routed: ReadRouter, token: str
) -> None:
    body = {"organization_id": str(world.org), "user_id": str(world.user), "query": "tone"}
    answer = await service.http.post("/v1/context/briefs", headers={**service.auth, TOKEN: token}, json=body)
    assert answer.status_code == 400 and error_code(answer) == "invalid_consistency_token", answer.text
    good = await service.http.post("/v1/context/briefs", headers={**service.auth, TOKEN: "lsn:0/1"}, json=body)
    assert good.status_code == 200, good.text


@asynccontextmanager
async def _peer(reply: bytes | None) -> AsyncIterator[str]:
    """A standby URL: nothing listening (`None`), or a peer answering `reply` to the connection's first message."""
    if reply is None:
        yield f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
        return

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.write(reply)
        await writer.drain()
        await reader.read(1024)  # until the client hangs up
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres?sslmode=disable"
    finally:
        server.close()


@pytest.mark.parametrize(
    "reply",
    [None, b"R\x00\x00\x00\x02"],
    ids=["nothing listens", "a truncated authentication message (asyncpg: InternalClientError)"],
)
async def test_a_standby_failing_at_connection_setup_costs_a_counted_fallback_not_a_500(
    service: Service, world: World, reply: bytes | None
) -> None:
    o = str(world.org)
    async with _peer(reply) as url:
        router = service.db.use_standbys([url], load_settings())
        brief = await service.http.post(
            "/v1/context/briefs", headers=service.auth, json={"organization_id": o, "user_id": str(world.user)}
        )
        body = {"organization_id": o, "query": "pilot"}
        search = await service.http.post("/v1/knowledge/search", headers=service.auth, json=body)
        listed = await service.http.get("/v1/knowledge/sources", headers=service.auth, params={"organization_id": o})
        await router.close()
    assert brief.status_code == search.status_code == listed.status_code == 200, (brief.text, search.text)
    assert router.fallbacks["standby_down"] >= 1 and not router.served, router.fallbacks
    assert router.standbys[0].state == "down"


async def test_a_console_write_is_a_platform_write_every_organizations_reads_wait_for(
    service: Service, world: World, routed: ReadRouter
) -> None:
    _, console = await sign_in(service.http, OPERATOR_TOKEN)
    assert console is not None
    before = parse_lsn(await service.db.fetchval("SELECT pg_current_wal_insert_lsn()::text"))
    cancelled = await console.post("/console/health/switch/cancel", {"organization_id": str(world.org)})
    assert cancelled.status_code == 303, cancelled.text
    assert routed.required_lsn(world.other) >= before, "the console's write is recorded for every organization"
