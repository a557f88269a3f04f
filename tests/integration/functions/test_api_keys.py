"""API keys with a scope (issue 21): an organization key works inside its organization only, never names
another one (wherever the request can name it), never lists organizations, never touches the platform
scope and never brings its own policy; revoked and unknown keys are refused; the operator token still
works; organization creation is rate-limited; every `/v1/` route declares exactly one scope."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import pytest
from fastapi import APIRouter, FastAPI

from context.builder import ContextBuilder
from context.models import ContextBrief, ContextPolicy, ContextRequest
from context.policies import FRONT_DOOR
from functions.api._scopes import route_scopes, undeclared_routes
from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key, revoke_key
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service
from tests.integration.functions.support import RecordingInngest, new_signing_key
from tests.integration.functions.support import error_code as code

NOTE = b"# Pricing\n\nThe Contoso pilot costs 48,000 EUR a year."

EXPECTED_SCOPES = {
    ("POST", "/v1/organizations"): ["operator"],
    ("GET", "/v1/organizations"): ["operator"],
    ("GET", "/v1/organizations/{organization_id}"): ["organization"],
    ("POST", "/v1/keys"): ["operator"],
    ("GET", "/v1/keys"): ["operator"],
    ("DELETE", "/v1/keys/{key_id}"): ["operator"],
    ("POST", "/v1/context/briefs"): ["organization"],
    ("GET", "/v1/context/dossier"): ["organization"],
    ("POST", "/v1/context/policies/validate"): ["any"],
    ("POST", "/v1/knowledge/sources"): ["organization"],
    ("POST", "/v1/knowledge/sources:batch"): ["organization"],
    ("GET", "/v1/knowledge/sources"): ["organization"],
    ("POST", "/v1/knowledge/sources/{source_id}/retry"): ["organization"],
    ("DELETE", "/v1/knowledge/sources/{source_id}"): ["organization"],
    ("POST", "/v1/knowledge/search"): ["organization"],
    ("GET", "/v1/knowledge/switch"): ["organization"],
    ("DELETE", "/v1/knowledge/switch"): ["operator"],
    ("GET", "/v1/knowledge/sources/{source_id}"): ["organization"],
    ("GET", "/v1/knowledge/sources/{source_id}/chunks"): ["organization"],
    ("GET", "/v1/knowledge/sources/{source_id}/progress"): ["organization"],
    ("GET", "/v1/knowledge/sources/{source_id}/attempts"): ["organization"],
    ("POST", "/v1/memory/remember"): ["organization"],
    ("POST", "/v1/memory/forget"): ["organization"],
    ("GET", "/v1/memory/tools"): ["any"],
    ("GET", "/v1/memory/memories"): ["organization"],
    ("GET", "/v1/memory/memories/{memory_id}/chain"): ["organization"],
    ("POST", "/v1/erasures/users"): ["organization"],
    ("POST", "/v1/erasures/organizations"): ["operator"],
    ("GET", "/v1/receipts/{receipt_id}"): ["organization"],
    ("GET", "/v1/receipts"): ["organization"],
    ("POST", "/v1/organizations/{organization_id}/users"): ["organization"],
    ("GET", "/v1/organizations/{organization_id}/users"): ["organization"],
    ("DELETE", "/v1/organizations/{organization_id}/users/{user_id}"): ["organization"],
    ("POST", "/v1/organizations/{organization_id}/agents"): ["organization"],
    ("GET", "/v1/organizations/{organization_id}/agents"): ["organization"],
    ("PATCH", "/v1/organizations/{organization_id}/agents/{agent_id}"): ["organization"],
    ("DELETE", "/v1/organizations/{organization_id}/agents/{agent_id}"): ["organization"],
    ("POST", "/v1/organizations/{organization_id}/runs"): ["organization"],
    ("GET", "/v1/organizations/{organization_id}/runs"): ["organization"],
    ("POST", "/v1/organizations/{organization_id}/runs/{run_id}/finish"): ["organization"],
    ("GET", "/v1/memory/export"): ["organization"],
    ("POST", "/v1/memory/imports"): ["organization"],
}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class World:
    """Two organizations with data, a key bound to the first, and an operator key."""

    own: UUID
    other: UUID
    key: str
    operator_key: str
    definition: UUID
    run: UUID
    user: UUID
    sources: dict[UUID, UUID]
    """A failed source of each organization."""

    @property
    def auth(self) -> dict[str, str]:
        return bearer(self.key)


@pytest.fixture
async def world(service: Service, factory: Factory) -> World:
    own_tenant = await factory.tenant(users=1)
    own, other = own_tenant.id, await factory.organization()
    sources: dict[UUID, UUID] = {}
    for org in (own, other):
        registered = await register_upload(
            service.db, service.services.object_store, organization_id=org, data=NOTE + str(org).encode(),
            filename="pricing.md",
        )  # fmt: skip
        sources[org] = registered.source_id
    async with service.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'x', pending_since = NULL"
        )
    definition = await factory.definition(own)
    run = await factory.run(own, definition_id=definition, user_id=own_tenant.user)
    return World(
        own=own,
        other=other,
        key=(await mint_key(service.db, organization_id=own, name="own service")).secret,
        operator_key=(await mint_key(service.db, organization_id=None, name="ops")).secret,
        definition=definition,
        run=run,
        user=own_tenant.user,
        sources=sources,
    )


def family_requests(w: World, org: UUID) -> list[tuple[str, str, str, dict[str, Any], int]]:
    """One request of every route family naming `org`, and what the request answers when `org` is the key's own."""
    o = str(org)
    source = w.sources.get(org, uuid4())
    invocation = {
        "organization_id": o,
        "definition_id": str(w.definition),
        "run_id": str(w.run),
        "user_id": str(w.user),
    }
    memory = {"attribute": "preference.language", "text": "Write in British English", "scope": "user"}
    two_files = [("file", ("a.md", b"# A " + o.encode())), ("file", ("b.md", b"# B " + o.encode()))]
    return [
        ("brief", "POST", "/v1/context/briefs", {"json": {"organization_id": o}}, 200),
        ("dossier", "GET", "/v1/context/dossier", {"params": {"organization_id": o}}, 200),
        ("search", "POST", "/v1/knowledge/search", {"json": {"organization_id": o, "query": "pilot"}}, 200),
        ("sources list", "GET", "/v1/knowledge/sources", {"params": {"organization_id": o}}, 200),
        ("source show", "GET", f"/v1/knowledge/sources/{source}", {"params": {"organization_id": o}}, 200),
        ("source retry", "POST", f"/v1/knowledge/sources/{source}/retry", {"params": {"organization_id": o}}, 202),
        (
            "upload",
            "POST",
            "/v1/knowledge/sources",
            {"files": {"file": ("n.md", b"# N " + o.encode())}, "data": {"organization_id": o}},
            202,
        ),
        (
            "synced uri",
            "POST",
            "/v1/knowledge/sources",
            {"json": {"organization_id": o, "uri": f"https://x.test/{o}", "content": "# U"}},
            202,
        ),
        (
            "batch json",
            "POST",
            "/v1/knowledge/sources:batch",
            {"json": {"organization_id": o, "items": [{"filename": "j.md", "content": f"# J {o}"}]}},
            202,
        ),
        (
            "batch multipart",
            "POST",
            "/v1/knowledge/sources:batch",
            {"files": two_files, "data": {"organization_id": o}},
            202,
        ),
        ("remember", "POST", "/v1/memory/remember", {"json": {"invocation": invocation, "arguments": memory}}, 200),
        (
            "forget",
            "POST",
            "/v1/memory/forget",
            {"json": {"invocation": invocation, "arguments": {"memory_id": str(uuid4())}}},
            404,
        ),
        ("switch status", "GET", "/v1/knowledge/switch", {"params": {"organization_id": o}}, 200),
        ("organization show", "GET", f"/v1/organizations/{o}", {}, 200),
    ]


async def counts(service: Service) -> tuple[int, int, int]:
    async with service.db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM agent.knowledge_sources) AS sources,"
            " (SELECT count(*) FROM agent.memories) AS memories,"
            " (SELECT count(*) FROM agent.knowledge_sources WHERE status = 'pending') AS pending"
        )
    assert row is not None
    return row["sources"], row["memories"], row["pending"]


async def test_an_organization_key_cannot_name_another_organization_on_any_route_family(
    service: Service, world: World
) -> None:
    before = await counts(service)
    unknown = UUID("00000000-0000-4000-8000-00000000dead")
    for target in (world.other, unknown):
        for family, method, path, kwargs, _ in family_requests(world, target):
            refused = await service.http.request(method, path, headers=world.auth, **kwargs)
            assert refused.status_code == 403 and code(refused) == "organization_forbidden", (family, refused.text)
            assert str(target) not in refused.text, "the refusal never echoes the request"
    assert await counts(service) == before and service.inngest.sent == [], "nothing was read into or written"

    for family, method, path, kwargs, status in family_requests(world, world.own):
        allowed = await service.http.request(method, path, headers=world.auth, **kwargs)
        assert allowed.status_code == status, (family, allowed.text)


@pytest.mark.parametrize(
    "shape",
    ["query and body", "repeated key, other last", "repeated key, other first", "repeated query", "repeated form",
     "vendor json", "no content type", "braced uuid", "upper-case uuid"],
)  # fmt: skip
async def test_an_organization_key_cannot_smuggle_another_organization_past_the_check(
    service: Service, world: World, shape: str
) -> None:
    own, other = str(world.own), str(world.other)
    headers = dict(world.auth)
    if shape == "query and body":
        request: dict[str, Any] = {"params": {"organization_id": own}, "json": {"organization_id": other}}
        path, method = "/v1/context/briefs", "POST"
    elif shape.startswith("repeated key"):
        first, last = (own, other) if shape.endswith("other last") else (other, own)
        body = f'{{"organization_id": "{first}", "query": "pilot", "organization_id": "{last}"}}'
        request = {"content": body.encode(), "headers": {**headers, "Content-Type": "application/json"}}
        path, method = "/v1/knowledge/search", "POST"
    elif shape == "repeated query":
        request = {"params": [("organization_id", own), ("organization_id", other)]}
        path, method = "/v1/knowledge/sources", "GET"
    elif shape == "repeated form":
        request = {"files": {"file": ("s.md", b"# S")}, "data": {"organization_id": [own, other]}}
        path, method = "/v1/knowledge/sources", "POST"
    elif shape in ("vendor json", "no content type"):
        content_type = {"Content-Type": "application/vnd.ac+json"} if shape == "vendor json" else {}
        request = {"content": f'{{"organization_id": "{other}"}}'.encode(), "headers": {**headers, **content_type}}
        path, method = "/v1/context/briefs", "POST"
    else:
        text = "{" + other + "}" if shape == "braced uuid" else other.upper()
        request = {"json": {"organization_id": text}}
        path, method = "/v1/context/briefs", "POST"
    request.setdefault("headers", headers)
    before = await counts(service)
    refused = await service.http.request(method, path, **request)
    if shape in ("vendor json", "no content type"):  # a body the route does not read (functions.api._body)
        assert refused.status_code == 415 and code(refused) == "unsupported_media_type", refused.text
    else:
        assert refused.status_code == 403 and code(refused) == "organization_forbidden", refused.text
    assert await counts(service) == before and service.inngest.sent == []


async def test_an_organization_key_cannot_reach_an_operator_route(service: Service, world: World) -> None:
    key_id = world.key.split("_")[1]
    operator_routes = [
        ("GET", "/v1/organizations", {}),
        ("POST", "/v1/organizations", {"json": {"name": "Mine"}}),
        ("DELETE", "/v1/knowledge/switch", {"params": {"organization_id": str(world.own)}}),
        ("POST", "/v1/keys", {"json": {"scope": "organization", "organization_id": str(world.own)}}),
        ("GET", "/v1/keys", {"params": {"organization_id": str(world.own)}}),
        ("DELETE", f"/v1/keys/{key_id}", {}),
    ]
    async with service.db.connection() as conn:
        organizations = await conn.fetchval("SELECT count(*) FROM public.organizations")
    for method, path, kwargs in operator_routes:
        refused = await service.http.request(method, path, headers=world.auth, **kwargs)
        assert refused.status_code == 403 and code(refused) == "operator_scope_required", (path, refused.text)
        assert "organizations" not in refused.json(), "no organization list leaks with the refusal"
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM public.organizations") == organizations
        assert await conn.fetchval("SELECT count(*) FROM agent.api_keys") == 2
        assert await conn.fetchval("SELECT count(*) FROM agent.api_keys WHERE revoked_at IS NOT NULL") == 0
    for key in (TOKEN, world.operator_key):
        listed = await service.http.get("/v1/organizations", headers=bearer(key))
        assert listed.status_code == 200 and len(listed.json()["organizations"]) == organizations


def platform_requests() -> list[tuple[str, str, str, dict[str, Any]]]:
    item = {"filename": "p.md", "content": "# Stuffed platform page"}
    upload = {"files": {"file": ("p.md", b"# P")}, "data": {"platform": "true"}}
    uri = {"json": {"platform": True, "uri": "https://p.test/a", "content": "# P"}}
    batch_files = {"files": {"file": ("p.md", b"# P")}, "data": {"platform": "1"}}
    return [
        ("multipart upload", "POST", "/v1/knowledge/sources", upload),
        ("json uri", "POST", "/v1/knowledge/sources", uri),
        ("batch json", "POST", "/v1/knowledge/sources:batch", {"json": {"platform": True, "items": [item]}}),
        ("batch string flag", "POST", "/v1/knowledge/sources:batch", {"json": {"platform": "true", "items": [item]}}),
        ("batch multipart", "POST", "/v1/knowledge/sources:batch", batch_files),
        ("sources list", "GET", "/v1/knowledge/sources", {"params": {"platform": "true"}}),
        ("repeated flag", "GET", "/v1/knowledge/sources", {"params": [("platform", "false"), ("platform", "true")]}),
        ("switch status", "GET", "/v1/knowledge/switch", {"params": {"platform": "true"}}),
    ]


async def test_an_organization_key_cannot_write_or_read_the_platform_scope(service: Service, world: World) -> None:
    for shape, method, path, kwargs in platform_requests():
        for extra in ({}, {"organization_id": str(world.own)}):
            request = dict(kwargs)
            if extra and "json" in request:
                request["json"] = {**request["json"], **extra}
            elif extra and "data" in request:
                request["data"] = {**request["data"], **extra}
            elif extra and isinstance(request.get("params"), dict):
                request["params"] = {**request["params"], **extra}
            refused = await service.http.request(method, path, headers=world.auth, **request)
            assert refused.status_code == 403 and code(refused) == "platform_forbidden", (shape, extra, refused.text)
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE organization_id IS NULL") == 0
    assert service.inngest.sent == [], "no platform document reached ingestion"

    for shape, method, path, kwargs in platform_requests()[:3]:
        written = await service.http.request(method, path, headers=bearer(world.operator_key), **kwargs)
        assert written.status_code == 202, (shape, written.text)


class SpyBuilder:
    def __init__(self, inner: ContextBuilder) -> None:
        self.inner = inner
        self.policies: list[ContextPolicy] = []

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        self.policies.append(policy)
        return await self.inner.build(request, policy)


async def test_an_organization_key_cannot_build_under_a_policy_of_its_own_choosing(
    service: Service, world: World
) -> None:
    spy = SpyBuilder(service.services.builder)
    service.services.builder = spy
    own = str(world.own)
    wide = {"sources": [{"name": "dossier", "token_budget": 300}], "total_token_budget": 500}
    refused = await service.http.post(
        "/v1/context/briefs", json={"organization_id": own, "policy": wide}, headers=world.auth
    )
    assert refused.status_code == 403 and code(refused) == "policy_forbidden", refused.text
    same = {"organization_id": own, "policy": FRONT_DOOR.model_dump(mode="json")}
    front = await service.http.post("/v1/context/briefs", json=same, headers=world.auth)
    assert front.status_code == 403 and code(front) == "policy_forbidden", "any policy in the body is refused"
    assert spy.policies == [], "a refused policy reads nothing"

    fixed = await service.http.post("/v1/context/briefs", json={"organization_id": own}, headers=world.auth)
    assert fixed.status_code == 200 and fixed.json()["policy"] == "front_door"
    assert spy.policies == [FRONT_DOOR]
    chosen = await service.http.post(
        "/v1/context/briefs", json={"organization_id": own, "policy": wide}, headers=bearer(world.operator_key)
    )
    assert chosen.status_code == 200 and chosen.json()["policy"] == "caller", "an operator may choose a policy"


async def test_revoked_and_unknown_keys_are_refused_from_the_next_request(service: Service, world: World) -> None:
    key_id, secret = world.key.split("_", 2)[1:]
    wrong_secret = f"ack_{key_id}_{'A' * 43}"
    unknown_id = f"ack_{'0' * 16}_{secret}"
    for value in (wrong_secret, unknown_id, "ack_short", world.key + "x", TOKEN + "x"):
        refused = await service.http.get("/v1/memory/tools", headers=bearer(value))
        assert refused.status_code == 401 and code(refused) == "auth_invalid", value
        assert refused.headers["WWW-Authenticate"] == "Bearer"

    assert (await service.http.get("/v1/memory/tools", headers=world.auth)).status_code == 200
    revoked = await service.http.delete(f"/v1/keys/{key_id}", headers=bearer(world.operator_key))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    after = await service.http.get("/v1/memory/tools", headers=world.auth)
    assert after.status_code == 401 and code(after) == "auth_revoked", "revocation holds from the next request"

    other = (await mint_key(service.db, organization_id=world.own)).secret
    assert (await service.http.get("/v1/memory/tools", headers=bearer(other))).status_code == 200
    await revoke_key(service.db, other.split("_")[1])  # as `ac-context keys revoke` does
    assert code(await service.http.get("/v1/memory/tools", headers=bearer(other))) == "auth_revoked"


async def test_the_operator_token_and_operator_keys_work_and_keys_are_managed_over_http(
    service: Service, world: World
) -> None:
    for key in (TOKEN, world.operator_key):
        assert (await service.http.get("/v1/organizations", headers=bearer(key))).status_code == 200
    minted = await service.http.post(
        "/v1/keys", json={"scope": "organization", "organization_id": str(world.other), "name": "other's"},
        headers=service.auth,
    )  # fmt: skip
    assert minted.status_code == 201, minted.text
    body = minted.json()
    assert body["scope"] == "organization" and body["secret"].startswith(f"ack_{body['id']}_")
    query = {"organization_id": str(world.other), "query": "pilot"}
    searched = await service.http.post("/v1/knowledge/search", json=query, headers=bearer(body["secret"]))
    assert searched.status_code == 200
    listed = (await service.http.get("/v1/keys", headers=service.auth)).json()["keys"]
    assert body["id"] in {k["id"] for k in listed}
    assert all("secret" not in k for k in listed), "a listing never carries a secret"
    assert body["secret"] not in str(listed)
    scoped = (
        await service.http.get("/v1/keys", params={"organization_id": str(world.other)}, headers=service.auth)
    ).json()
    assert [k["id"] for k in scoped["keys"]] == [body["id"]]

    bad = [
        ({"scope": "organization"}, 422, "invalid_request"),
        ({"scope": "operator", "organization_id": str(world.own)}, 422, "invalid_request"),
        ({"scope": "organization", "organization_id": str(uuid4())}, 404, "organization_not_found"),
    ]
    for payload, status, expected in bad:
        answer = await service.http.post("/v1/keys", json=payload, headers=service.auth)
        assert answer.status_code == status and code(answer) == expected, payload
    missing = await service.http.delete(f"/v1/keys/{'f' * 16}", headers=service.auth)
    assert missing.status_code == 404 and code(missing) == "api_key_not_found"
    malformed = await service.http.delete("/v1/keys/not-a-key-id", headers=service.auth)
    assert malformed.status_code == 422 and code(malformed) == "invalid_request"


async def test_keys_are_stored_hashed_in_a_table_closed_to_the_tenant_roles(service: Service, world: World) -> None:
    key_id, secret = world.key.split("_", 2)[1:]
    async with service.db.connection() as conn:
        row = await conn.fetchrow("SELECT * FROM agent.api_keys WHERE id = $1", key_id)
        assert row is not None and bytes(row["secret_sha256"]) == hashlib.sha256(secret.encode()).digest()
        assert secret not in str(dict(row)), "the secret itself is never stored"
    for role in ("ac_tenant", "authenticated"):
        async with service.db.connection() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL ROLE {role}")
            await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(world.own))
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.fetch("SELECT id FROM agent.api_keys")


async def test_a_key_cannot_be_checked_while_the_database_is_down_but_the_operator_token_can(
    service: Service, world: World
) -> None:
    opened = service.services
    service.slot.set(None)
    service.slot.unavailable("the database is down")
    try:
        refused = await service.http.get("/v1/memory/tools", headers=world.auth)
        assert refused.status_code == 503 and code(refused) == "database_unavailable"
        assert refused.headers["Retry-After"] == "2"
        assert (await service.http.get("/v1/memory/tools", headers=service.auth)).status_code == 200
    finally:
        service.slot.set(opened)


async def test_organization_creation_is_rate_limited(service: Service) -> None:
    limit = 3
    service.services.settings = service.services.settings.model_copy(update={"organizations_per_minute": limit})
    answers = await asyncio.gather(
        *(service.http.post("/v1/organizations", json={"name": f"Org {i}"}, headers=service.auth) for i in range(8))
    )
    assert sorted(a.status_code for a in answers) == [201] * limit + [429] * (8 - limit)
    limited = next(a for a in answers if a.status_code == 429)
    assert code(limited) == "rate_limited" and set(limited.json()["error"]) == {"code", "message", "details"}
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM public.organizations") == limit


async def test_every_v1_route_declares_exactly_one_scope(service: Service) -> None:
    scopes = route_scopes(service.app.routes)
    assert undeclared_routes(service.app.routes) == []
    assert scopes == EXPECTED_SCOPES, "a new /v1/ route declares its scope and is added here"


def test_a_route_that_declares_no_scope_is_found_and_the_app_refuses_to_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import functions.app as app_module
    from state.settings import load_settings

    bare = APIRouter(prefix="/v1/extra")

    @bare.get("/leak")
    async def leak() -> dict[str, str]:
        return {}

    plain = FastAPI()
    plain.include_router(bare)
    assert undeclared_routes(plain.routes) == ["GET /v1/extra/leak"]
    monkeypatch.setattr(app_module, "ROUTERS", (*app_module.ROUTERS, bare))
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    with pytest.raises(RuntimeError, match=r"GET /v1/extra/leak"):
        app_module.create_app(load_settings(api_token=TOKEN, data_dir=tmp_path), inngest_client=client)


async def test_an_organization_key_spelling_its_own_organization_other_than_canonically_is_refused(
    service: Service, world: World
) -> None:
    for spelled in (str(world.own).upper(), "{" + str(world.own) + "}", world.own.hex, f"urn:uuid:{world.own}"):
        listed = await service.http.get(
            "/v1/knowledge/sources", params={"organization_id": spelled}, headers=world.auth
        )
        assert listed.status_code == 422 and code(listed) == "invalid_request", (spelled, listed.text)
        assert listed.json()["error"]["details"][0]["loc"] == ["query", "organization_id"]
    listed = await service.http.get(
        "/v1/knowledge/sources", params={"organization_id": str(world.own)}, headers=world.auth
    )
    assert listed.status_code == 200, listed.text
