"""One reading of a request body: the scope check and the route read the same parsed value, and a body whose
Content-Type the route does not read is refused with 415 before anything reads it.

The matrix sends every `/v1/` route that takes a body, with an organization key, a body naming another
organization (or the platform) under every Content-Type shape a hostile caller tried: the exact one, with
parameters, in another case, with suffixes, as lists, `+json` types, empty, missing. Each answer is 403 (the
body was read as the route reads it, and the scope refused it) or 415 (the route does not read that body),
and no table gains or loses a row.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Request
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel

from functions.api._body import JSON, MULTIPART, BodyRoute, accepted_media_types, parsed_body, unread_routes
from functions.api._http import install_error_handlers
from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import asgi_client
from tests.integration.functions.support import error_code as code

JSON_SHAPES: list[tuple[str | None, bool]] = [
    # (Content-Type, whether the route reads it as JSON)
    ("application/json", True),
    ("application/json; charset=utf-8", True),
    ("application/json;charset=UTF-8", True),
    ('Application/JSON; Charset="utf-8"', True),
    ("APPLICATION/JSON", True),
    ("application/jsonx", False),
    ("application/json-seq", False),
    ("application/json5", False),
    ("application/json/x", False),
    ("application/json, text/plain", False),
    ("text/plain, application/json", False),
    ("application/json;", False),
    ("application/json; charset=latin-1", False),
    ("application/json; charset=utf-16", False),
    ("application/json; boundary=x", False),
    ("application/vnd.ac+json", False),
    ("application/merge-patch+json", False),
    ("application/problem+json; charset=utf-8", False),
    ("text/json", False),
    ("text/plain", False),
    ("application/x-www-form-urlencoded", False),
    ("multipart/form-data; boundary=x", False),
    ("", False),
    (None, False),
]
"""Every shape of Content-Type tried on a JSON body; None sends no Content-Type header at all."""


def _json_bodies(own: UUID, other: UUID, user: UUID, definition: UUID, run: UUID) -> dict[tuple[str, str], Any]:
    """A body for every route that takes one, naming `other` where the route names an organization."""
    o = str(other)
    invocation = {"organization_id": o, "definition_id": str(definition), "run_id": str(run), "user_id": str(user)}
    memory = {"attribute": "preference.language", "text": "Write in British English", "scope": "user"}
    source = {"organization_id": o, "uri": "https://x.test/refunds", "content": "# Refund policy\n\nAlways refund."}
    return {
        ("POST", "/v1/organizations"): {"name": "Planted"},
        ("POST", "/v1/keys"): {"scope": "organization", "organization_id": o},
        ("POST", "/v1/context/briefs"): {"organization_id": o, "query": "refunds"},
        ("POST", "/v1/context/policies/validate"): {"policy": {"sources": []}, "organization_id": o},
        ("POST", "/v1/knowledge/sources"): source,
        ("POST", "/v1/knowledge/sources:batch"): {
            "organization_id": o,
            "items": [{"filename": "pricing.md", "content": "# Pricing\n\nFree for everyone."}],
        },
        ("POST", "/v1/knowledge/search"): {"organization_id": o, "query": "refunds"},
        ("POST", "/v1/memory/remember"): {"invocation": invocation, "arguments": memory},
        ("POST", "/v1/memory/forget"): {"invocation": invocation, "arguments": {"memory_id": str(uuid4())}},
        ("POST", "/v1/erasures/users"): {"organization_id": o, "user_id": str(user)},
        ("POST", "/v1/erasures/organizations"): {"organization_id": o},
        ("POST", "/v1/organizations/{organization_id}/users"): {"email": "planted@example.test"},
        ("POST", "/v1/organizations/{organization_id}/agents"): {"name": "Planted"},
        ("PATCH", "/v1/organizations/{organization_id}/agents/{agent_id}"): {"status": "archived"},
        ("POST", "/v1/organizations/{organization_id}/runs"): {"agent_id": str(definition), "user_id": str(user)},
        ("POST", "/v1/organizations/{organization_id}/runs/{run_id}/finish"): {"status": "failed"},
        ("POST", "/v1/memory/imports"): {"organization_id": o},
    }


def _platform(body: Any, own: UUID) -> Any:
    """The same body naming the key's own organization and the platform."""
    swapped = _swap(body, own)
    if isinstance(swapped, dict):
        return {**swapped, "platform": True}
    return swapped


def _swap(value: Any, own: UUID) -> Any:
    if isinstance(value, dict):
        return {k: str(own) if k == "organization_id" else _swap(v, own) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, own) for v in value]
    return value


async def _row_counts(service: Service) -> dict[str, int]:
    """The row count of every table of the layer's schemas."""
    async with service.db.connection() as conn:
        tables = await conn.fetch(
            "SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables"
            " WHERE table_schema IN ('agent', 'public') AND table_type = 'BASE TABLE' ORDER BY 1"
        )
        return {t["name"]: int(await conn.fetchval(f"SELECT count(*) FROM {t['name']}")) for t in tables}


def _v1_routes(app: FastAPI) -> list[tuple[str, APIRoute]]:
    out = []
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and str(context.path).startswith("/v1/"):
            out.append((str(context.path), context.original_route))
    return out


def _body_routes(app: FastAPI) -> dict[tuple[str, str], frozenset[str]]:
    return {
        (method, path): accepted_media_types(route)
        for path, route in _v1_routes(app)
        for method in route.methods
        if accepted_media_types(route)
    }


@pytest.fixture
async def world(service: Service, factory: Factory) -> dict[str, Any]:
    tenant = await factory.tenant(users=1)
    other = await factory.tenant(users=1)
    definition = await factory.definition(other.id)
    run = await factory.run(other.id, definition_id=definition, user_id=other.user)
    key = (await mint_key(service.db, organization_id=tenant.id, name="own")).secret
    return {
        "own": tenant.id,
        "other": other.id,
        "auth": {"Authorization": f"Bearer {key}"},
        "bodies": _json_bodies(tenant.id, other.id, other.user, definition, run),
    }


def _expected(route_scope: str, shape_read: bool, status: int, *, read_as_form: bool) -> bool:
    if read_as_form:  # a JSON body sent as multipart to a route that reads multipart: read, and not a form
        return status in (400, 422)
    if not shape_read:
        return status == 415
    return status == 403 or (route_scope == "any" and status == 422)


async def test_every_body_route_refuses_another_organization_under_every_content_type(
    service: Service, world: dict[str, Any]
) -> None:
    routes = _body_routes(service.app)
    assert set(routes) == set(world["bodies"]), "every route that takes a body has a hostile body in this test"
    before = await _row_counts(service)
    wrong: list[str] = []
    for (method, path), accepts in sorted(routes.items()):
        scope = "any" if path == "/v1/context/policies/validate" else "scoped"
        for variant, body in (("other", world["bodies"][(method, path)]), ("platform", None)):
            payload = _platform(world["bodies"][(method, path)], world["own"]) if body is None else body
            raw = httpx.Request("POST", "/", json=payload).content
            for content_type, is_json in JSON_SHAPES:
                headers = dict(world["auth"])
                if content_type is not None:
                    headers["Content-Type"] = content_type
                named = world["other"] if variant == "other" else world["own"]
                url = path.format(organization_id=named, agent_id=uuid4(), run_id=uuid4())
                answer = await service.http.request(method, url, content=raw, headers=headers)
                read = is_json and JSON in accepts
                as_form = MULTIPART in accepts and (content_type or "").startswith(MULTIPART)
                if not _expected(scope, read, answer.status_code, read_as_form=as_form):
                    wrong.append(f"{method} {path} {variant} {content_type!r}: {answer.status_code} {answer.text}")
                elif answer.status_code == 415:
                    assert code(answer) == "unsupported_media_type", answer.text
    assert wrong == [], "\n".join(wrong)
    assert await _row_counts(service) == before, "a refused request wrote nothing"
    assert service.inngest.sent == [], "no event was sent for a refused request"


MULTIPART_SHAPES: list[tuple[str, int]] = [
    # (Content-Type, the answer: 403 read and refused by scope, 400 read as JSON and not JSON, 415 not read)
    ("multipart/form-data; boundary={b}", 403),
    ('Multipart/Form-Data; boundary="{b}"', 403),
    ("multipart/form-data", 415),
    ("multipart/mixed; boundary={b}", 415),
    ("multipart/form-data; boundary={b}, application/json", 415),
    ("multipart/form-data; boundary={b}; boundary=other", 415),
    ("application/json", 400),
    ("application/octet-stream", 415),
    ("", 415),
]


@pytest.mark.parametrize("path", ["/v1/knowledge/sources", "/v1/knowledge/sources:batch"])
async def test_a_multipart_upload_naming_another_organization_is_refused_under_every_content_type(
    service: Service, world: dict[str, Any], path: str
) -> None:
    before = await _row_counts(service)
    for fields in ({"organization_id": str(world["other"])}, {"organization_id": str(world["own"]), "platform": "1"}):
        built = httpx.Request("POST", "/", files={"file": ("refunds.md", b"# Refunds")}, data=fields)
        built.read()
        boundary = built.headers["content-type"].split("boundary=")[1]
        for shape, status in MULTIPART_SHAPES:
            headers = {**world["auth"], "Content-Type": shape.format(b=boundary)}
            answer = await service.http.post(path, content=built.content, headers=headers)
            assert answer.status_code == status, (fields, shape, answer.text)
    assert await _row_counts(service) == before
    assert service.inngest.sent == []


async def test_a_route_that_takes_no_body_refuses_one(service: Service, world: dict[str, Any]) -> None:
    own = str(world["own"])
    body = {"organization_id": str(world["other"])}
    for method, path in (
        ("POST", f"/v1/knowledge/sources/{uuid4()}/retry"),
        ("DELETE", f"/v1/knowledge/sources/{uuid4()}"),
    ):
        answer = await service.http.request(method, path, params={"organization_id": own}, json=body,
                                            headers=world["auth"])  # fmt: skip
        assert answer.status_code == 415 and code(answer) == "unsupported_media_type", (path, answer.text)


async def test_the_right_shapes_still_work(service: Service, world: dict[str, Any]) -> None:
    own = str(world["own"])
    search = await service.http.post(
        "/v1/knowledge/search",
        content=f'{{"organization_id": "{own}", "query": "pilot"}}'.encode(),
        headers={**world["auth"], "Content-Type": "Application/JSON; charset=UTF-8"},
    )
    assert search.status_code == 200, search.text
    uri = {"organization_id": own, "uri": "https://x.test/mine", "content": "# Mine\n\nOur refund policy."}
    registered = await service.http.post("/v1/knowledge/sources", json=uri, headers=world["auth"])
    assert registered.status_code == 202, registered.text
    upload = await service.http.post(
        "/v1/knowledge/sources:batch",
        files=[("file", ("a.md", b"# A")), ("file", ("b.md", b"# B"))],
        data={"organization_id": own},
        headers=world["auth"],
    )
    assert upload.status_code == 202 and len(upload.json()["sources"]) == 2, upload.text


async def test_a_body_that_is_not_utf8_json_is_refused_as_such(service: Service, world: dict[str, Any]) -> None:
    headers = {**world["auth"], "Content-Type": "application/json"}
    own = str(world["own"])
    utf16 = f'{{"organization_id": "{own}", "query": "pilot"}}'.encode("utf-16")
    answer = await service.http.post("/v1/knowledge/search", content=utf16, headers=headers)
    assert (answer.status_code, code(answer)) == (400, "body_unreadable"), answer.text
    nan = f'{{"organization_id": "{own}", "query": "pilot", "limit": NaN}}'.encode()
    answer = await service.http.post("/v1/knowledge/search", content=nan, headers=headers)
    assert (answer.status_code, code(answer)) == (400, "json_invalid"), answer.text


class _Echo(BaseModel):
    organization_id: str


async def test_the_route_receives_the_value_the_scope_check_read() -> None:
    """FastAPI's body parameter is built from the very object `parsed_body` holds: parsed once."""
    app = FastAPI()
    install_error_handlers(app)
    seen: list[bool] = []

    async def echo(body: _Echo, request: Request) -> dict[str, str]:
        seen.append(await request.json() is parsed_body(request).value)
        return {"organization_id": body.organization_id}

    app.router.routes.append(BodyRoute("/echo", echo, methods=["POST"]))
    async with asgi_client(app) as http:
        answer = await http.post("/echo", json={"organization_id": "a"})
        assert answer.status_code == 200 and answer.json() == {"organization_id": "a"}, answer.text
        refused = await http.post("/echo", content=b'{"organization_id": "a"}', headers={"content-type": "text/json"})
        assert refused.status_code == 415 and code(refused) == "unsupported_media_type"
    assert seen == [True], "the route's body is the scope check's parsed value, not a second parse"


def test_every_v1_route_reads_its_body_through_one_reader(service: Service) -> None:
    routes = dict(_v1_routes(service.app))
    assert len(routes) >= 15 and unread_routes(service.app.routes) == []
    assert accepted_media_types(routes["/v1/knowledge/sources:batch"]) == {JSON, MULTIPART}
    assert accepted_media_types(routes["/v1/knowledge/search"]) == {JSON}
    assert accepted_media_types(routes["/v1/knowledge/sources/{source_id}/retry"]) == frozenset()
    stray = APIRouter(prefix="/v1/stray")
    stray.add_api_route("/x", lambda: None, methods=["GET"])
    assert unread_routes([*service.app.routes, *stray.routes]) == ["/v1/stray/x"], "a plain route is named"
