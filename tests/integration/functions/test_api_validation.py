"""Strict edges over HTTP: no coercion, bounded budgets and policies, clean text before any query, the
framework's own answers in the envelope, streamed body limits, and an OpenAPI document that works."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from context.models import MAX_TOKEN_BUDGET
from context.registry import MAX_POLICY_SOURCES
from tests.factories import Factory
from tests.integration.functions.conftest import Service

# Bad input is refused whatever the organization; a real one keeps the unknown-organization 404 (issue 13)
# out of the way, so each test sees the 422 its rule gives.
ORG = "5a1d0c6e-7b4e-4d84-9a43-2f1f0f7c9e11"


@pytest.fixture(autouse=True)
async def _known_organization(factory: Factory) -> None:
    await factory.insert("public.organizations", id=ORG, name="Edge cases")


def error(response: Any) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return response.status_code, str(body["error"]["code"])


def search(**fields: Any) -> dict[str, Any]:
    return {"organization_id": ORG, "query": "pricing", **fields}


@pytest.mark.parametrize(
    "body",
    [
        search(limit="8"),
        search(limit=True),
        search(limit=8.0),
        search(include_platform="yes"),
        search(include_platform=1),
    ],
    ids=["limit-str", "limit-bool", "limit-float", "include-platform-str", "include-platform-int"],
)
async def test_search_refuses_every_coercion(service: Service, body: dict[str, Any]) -> None:
    response = await service.http.post("/v1/knowledge/search", json=body, headers=service.auth)
    assert error(response) == (422, "invalid_request")


async def test_a_synced_uri_refuses_a_string_platform_flag(service: Service) -> None:
    body = {"platform": "true", "uri": "https://x.example/a.md", "content": "# A"}
    response = await service.http.post("/v1/knowledge/sources", json=body, headers=service.auth)
    assert error(response) == (422, "invalid_request")


@pytest.mark.parametrize("field", ["total_token_budget", "token_budget"])
async def test_a_budget_above_the_maximum_is_refused_with_its_path(service: Service, field: str) -> None:
    source = {"name": "conversation", "token_budget": 100}
    policy: dict[str, Any] = {"sources": [source], "total_token_budget": 1000}
    if field == "token_budget":
        source["token_budget"] = 10**18
    else:
        policy["total_token_budget"] = 10**18
    for path, body in (
        ("/v1/context/policies/validate", {"policy": policy}),
        ("/v1/context/briefs", {"organization_id": ORG, "policy": policy}),
    ):
        response = await service.http.post(path, json=body, headers=service.auth)
        assert error(response) == (422, "policy_invalid"), response.text
        assert response.json()["error"]["details"][0]["loc"][-1] == field
    at_max = {"sources": [{"name": "conversation", "token_budget": MAX_TOKEN_BUDGET}], "total_token_budget": 1000}
    ok = await service.http.post("/v1/context/policies/validate", json={"policy": at_max}, headers=service.auth)
    assert ok.status_code == 200


async def test_a_policy_past_the_size_cap_is_refused_before_the_publish_check(service: Service) -> None:
    many = {"sources": [{"name": f"s{i}", "token_budget": 1} for i in range(MAX_POLICY_SOURCES + 1)]}
    response = await service.http.post("/v1/context/policies/validate", json={"policy": many}, headers=service.auth)
    assert error(response) == (422, "policy_invalid")
    assert response.json()["error"]["details"] == [
        {"loc": ["sources"], "msg": f"a policy lists at most {MAX_POLICY_SOURCES} sources", "type": "too_long"}
    ], "one problem, not one per unknown source: the publish check never ran"
    big_options = {"sources": [{"name": "conversation", "token_budget": 1, "options": {"x": "y" * 20_000}}]}
    response = await service.http.post(
        "/v1/context/policies/validate", json={"policy": big_options}, headers=service.auth
    )
    assert error(response) == (422, "policy_invalid")
    assert response.json()["error"]["details"][0]["loc"] == ["sources", 0, "options"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/knowledge/search", search(query="pricing\x00")),
        ("/v1/knowledge/search", search(query="pricing \ud800")),
        ("/v1/context/briefs", {"organization_id": ORG, "query": "hello\x00"}),
        ("/v1/knowledge/sources", {"platform": True, "uri": "https://x.example/a.md", "content": "# A\x00"}),
        (
            "/v1/memory/remember",
            {
                "invocation": {"organization_id": ORG, "definition_id": str(uuid4()), "run_id": str(uuid4())},
                "arguments": {"content": "likes \x00 tea"},
            },
        ),
    ],
    ids=["search-nul", "search-surrogate", "brief-nul", "uri-nul", "memory-nul"],
)
async def test_nul_bytes_and_invalid_text_are_refused_before_any_query(
    service: Service, path: str, body: dict[str, Any]
) -> None:
    raw = _json_with_surrogates(body)
    headers = {**service.auth, "content-type": "application/json"}
    response = await service.http.post(path, content=raw, headers=headers)
    assert error(response) == (422, "text_invalid"), response.text


def _json_with_surrogates(body: dict[str, Any]) -> bytes:
    import json

    return json.dumps(body).encode()  # ensure_ascii writes \u0000 and \ud800 as escapes, as a client would


async def test_the_frameworks_own_answers_use_the_envelope(service: Service) -> None:
    post, auth = service.http.post, {**service.auth, "content-type": "application/json"}
    assert error(await service.http.get("/nope")) == (404, "not_found")
    assert error(await service.http.get("/v1/nope", headers=service.auth)) == (404, "not_found")
    assert error(await service.http.delete("/v1/knowledge/search", headers=service.auth)) == (405, "method_not_allowed")
    assert error(await post("/v1/knowledge/search", content=b"{nope", headers=auth)) == (400, "json_invalid")
    assert error(await post("/v1/knowledge/search", content=b'{"query": "\xff\xfe"}', headers=auth))[0] == 400
    deep = b"[" * 100_000 + b"]" * 100_000  # refused by the edge (test_hardening_json_depth.py)
    assert error(await post("/v1/context/policies/validate", content=deep, headers=auth)) == (422, "invalid_request")


async def test_a_body_past_the_json_limit_is_refused_while_it_streams_in(service: Service) -> None:
    limit = service.services.settings.max_json_bytes
    chunks_read = 0

    async def body() -> Any:
        nonlocal chunks_read
        for _ in range(4 * limit // 65536):
            chunks_read += 1
            yield b" " * 65536

    headers = {**service.auth, "content-type": "application/json"}
    streamed = await service.http.post("/v1/knowledge/search", content=body(), headers=headers)
    assert error(streamed) == (413, "request_too_large")
    declared = await service.http.post(
        "/v1/knowledge/search", content=b"{}", headers={**headers, "content-length": str(limit + 1)}
    )
    assert error(declared) == (413, "request_too_large")
    no_token = await service.http.post("/v1/knowledge/search", content=b" " * (2 * limit))
    assert error(no_token) == (401, "auth_missing")


async def test_openapi_declares_the_bearer_scheme_the_error_envelope_and_the_upload_body(service: Service) -> None:
    spec = (await service.http.get("/openapi.json")).json()
    schemes = spec["components"]["securitySchemes"]
    assert any(s["type"] == "http" and s["scheme"] == "bearer" for s in schemes.values())
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    envelope = spec["components"]["schemas"]["ErrorEnvelope"]
    assert envelope["properties"]["error"]["$ref"].endswith("/ErrorBody")
    for path, operations in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            assert operation.get("security"), f"{method} {path} declares no security"
            for status in ("401", "422", "503"):
                schema = operation["responses"][status]["content"]["application/json"]["schema"]
                assert schema["$ref"].endswith("/ErrorEnvelope"), f"{method} {path} {status}"
    for name in ("SearchIn", "BriefIn", "ToolCallIn", "InvocationIn", "PolicyIn", "ErrorBody"):
        fields = spec["components"]["schemas"][name]["properties"]
        assert all(f.get("description") for f in fields.values()), f"{name} has a field without a description"
    upload = spec["paths"]["/v1/knowledge/sources"]["post"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"]["properties"]["file"]["format"] == "binary"
    uri_fields = upload["application/json"]["schema"]["properties"]
    assert all(f.get("description") for f in uri_fields.values())


async def test_a_batch_larger_than_the_json_limit_is_taken_while_a_json_route_refuses_it(service: Service) -> None:
    # Many documents in one request are an upload, bounded by the batch limit, not by the 1 MiB JSON limit.
    items = [{"filename": f"doc{n}.md", "content": f"# Doc {n}\n\n" + "word " * 20_000} for n in range(20)]
    batch = await service.http.post(
        "/v1/knowledge/sources:batch", json={"organization_id": ORG, "items": items}, headers=service.auth
    )
    assert batch.status_code == 202, batch.text
    big_search = await service.http.post(
        "/v1/knowledge/search", json=search(query="x" * 2_000_000), headers=service.auth
    )
    assert error(big_search) == (413, "request_too_large")
