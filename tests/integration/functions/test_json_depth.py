"""Deeply nested JSON is a 422 on every route, never a 400 from a parser's recursion nor a 500: 100,000
nested arrays as the body of each JSON route, in a field of a brief, or reached only in a later chunk of a
streamed body, all answer 422 `invalid_request` with detail type `json_too_deep` from the edge, while a field
nested less deep than the edge's limit still gets its own route's answer with its path."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest

from functions.api._json_depth import MAX_JSON_DEPTH
from tests.factories import Factory
from tests.integration.functions.conftest import Service

DEEP = b"[" * 100_000 + b"]" * 100_000
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def _json_routes(service: Service, *, reading: bool = True) -> list[tuple[str, str]]:
    """(method, path) of every /v1/ operation that may take a body, its path parameters filled with a UUID:
    those that may read JSON, or (`reading=False`) those whose declared body is multipart only."""
    found = []
    for template, operations in service.app.openapi()["paths"].items():
        if template.startswith("/v1/"):
            path = re.sub(r"\{[^}]+\}", str(uuid4()), template)
            for method, operation in operations.items():
                media = set(operation.get("requestBody", {}).get("content", {"application/json": {}}))
                if method.upper() in BODY_METHODS and ("application/json" in media) == reading:
                    found.append((method.upper(), path))
    return found


def _is_too_deep(response: Any) -> bool:
    body = response.json()
    return (
        response.status_code == 422
        and body["error"]["code"] == "invalid_request"
        and [d["type"] for d in body["error"]["details"]] == ["json_too_deep"]
    )


async def test_a_hundred_thousand_nested_arrays_are_a_422_on_every_json_route(service: Service) -> None:
    routes = _json_routes(service)
    assert ("POST", "/v1/context/briefs") in routes and len(routes) >= 8, routes
    headers = {**service.auth, "content-type": "application/json"}
    answers = {
        f"{method} {path}": await service.http.request(method, path, content=DEEP, headers=headers)
        for method, path in routes
    }
    wrong = {route: (a.status_code, a.text[:120]) for route, a in answers.items() if not _is_too_deep(a)}
    assert not wrong, wrong


async def test_a_route_that_reads_multipart_only_answers_415_to_a_json_body_however_deep(service: Service) -> None:
    routes = _json_routes(service, reading=False)
    assert ("POST", "/v1/memory/imports") in routes, routes
    headers = {**service.auth, "content-type": "application/json"}
    for method, path in routes:
        answer = await service.http.request(method, path, content=DEEP, headers=headers)
        assert answer.status_code == 415 and answer.json()["error"]["code"] == "unsupported_media_type", path


async def test_a_brief_with_deep_entities_or_a_depth_reached_in_a_later_chunk_is_a_422(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    headers = {**service.auth, "content-type": "application/json"}
    field = b'{"organization_id": "%s", "query": "q", "entities": ' % str(org).encode() + DEEP + b"}"
    in_a_field = await service.http.post("/v1/context/briefs", content=field, headers=headers)
    assert _is_too_deep(in_a_field), in_a_field.text

    async def streamed() -> AsyncIterator[bytes]:
        yield b'{"organization_id": "%s", "query": "[[[[ is text", "entities": ' % str(org).encode()
        for _ in range(4):
            yield b"[" * (MAX_JSON_DEPTH // 4)
        yield b"[" + b"]" * (MAX_JSON_DEPTH + 1) + b"}"

    later = await service.http.post("/v1/context/briefs", content=streamed(), headers=headers)
    assert _is_too_deep(later), later.text


async def test_a_field_nested_less_than_the_edge_limit_gets_its_routes_own_answer(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    policy: Any = {"sources": []}
    for _ in range(80):  # deeper than a free-form field may be (64), shallower than the edge's limit (128)
        policy = {"nested": policy}
    body = {"organization_id": str(org), "policy": policy}
    response = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["loc"][:2] == ["body", "policy"]


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", None])
async def test_the_depth_counts_for_every_body_a_route_may_read_as_json(
    service: Service, content_type: str | None
) -> None:
    headers = dict(service.auth)
    if content_type is not None:
        headers["content-type"] = content_type
    response = await service.http.post("/v1/knowledge/search", content=DEEP, headers=headers)
    assert _is_too_deep(response), response.text
