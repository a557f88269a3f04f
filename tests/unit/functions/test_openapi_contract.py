"""Every route's OpenAPI entry says what it answers: a 2xx model, and each error it can answer in the envelope.

The rules, checked on `app.openapi()` of the real app:

- every operation has a 2xx response whose JSON schema is a component (`$ref`), or, for another media type
  (`/metrics`), a typed schema;
- every `/v1/` operation documents 401, 403, 422, 500 and 503, plus 404 when it has a path parameter or is
  organization-scoped (an unknown organization answers 404), plus 400 when it takes a JSON body; every error
  status of a `/v1/` operation is the error envelope;
- every parameter (path, query), every property of every component schema, and of every inline request body
  schema, has a description.

`/api/inngest` is the Inngest SDK's protocol endpoint (its answers are the SDK's, for the Inngest server),
not the project's API, and is left out.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastapi import FastAPI

from functions.api._scopes import route_scopes
from functions.app import INNGEST_PATH, create_app
from state.settings import load_settings

ENVELOPE = "#/components/schemas/ErrorEnvelope"
ALWAYS = ("401", "403", "422", "500", "503")


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(load_settings(api_token="openapi-test-token-0123456789"), environ={"INNGEST_DEV": "1"})


def organization_routes(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path) of every organization-scoped route, lower-case method as OpenAPI writes it."""
    return {(m.lower(), p) for (m, p), scopes in route_scopes(app.routes).items() if "organization" in scopes}


def _schema_problem(status: str, response: dict[str, Any]) -> str | None:
    content = response.get("content") or {}
    if not content:
        return f"{status} has no content"
    for media_type, entry in content.items():
        schema = entry.get("schema") or {}
        if "json" in media_type:
            if not schema.get("$ref", "").startswith("#/components/schemas/"):
                return f"{status} {media_type} is not a model: {schema}"
        elif not schema.get("type"):
            return f"{status} {media_type} has no typed schema"
    return None


def contract_problems(spec: dict[str, Any], organization_scoped: set[tuple[str, str]]) -> list[str]:
    """Every way `spec` breaks the rules of the module docstring, one line each."""
    problems: list[str] = []
    for path, operations in spec["paths"].items():
        if path == INNGEST_PATH:
            continue
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            responses: dict[str, Any] = operation.get("responses", {})
            ok = {s: r for s, r in responses.items() if s.startswith("2")}
            if not ok:
                problems.append(f"{where}: no 2xx response")
            for status, response in ok.items():
                problem = _schema_problem(status, response)
                if problem:
                    problems.append(f"{where}: {problem}")
            problems += [
                f"{where}: {p['in']} parameter {p['name']} has no description"
                for p in operation.get("parameters", [])
                if not p.get("description")
            ]
            if not path.startswith("/v1/"):
                continue
            wanted = set(ALWAYS)
            if (
                any(p.get("in") == "path" for p in operation.get("parameters", []))
                or (
                    method,
                    path,
                )
                in organization_scoped
            ):
                wanted.add("404")
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                wanted.add("400")
            problems += [f"{where}: {s} is not documented" for s in sorted(wanted - set(responses))]
            for status, response in responses.items():
                if status[0] in "45":
                    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                    if schema.get("$ref") != ENVELOPE:
                        problems.append(f"{where}: {status} is not the error envelope")
                    if not response.get("description"):
                        problems.append(f"{where}: {status} has no description")
    for name, schema in spec["components"]["schemas"].items():
        problems += _undescribed(name, schema)
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for media_type, entry in operation.get("requestBody", {}).get("content", {}).items():
                problems += _undescribed(f"{method.upper()} {path} {media_type}", entry.get("schema", {}))
    return problems


def _undescribed(name: str, schema: dict[str, Any]) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    return [f"{name}.{field} has no description" for field, p in properties.items() if not p.get("description")]


def test_every_route_documents_its_model_and_its_errors_and_every_field_is_described(app: FastAPI) -> None:
    problems = contract_problems(app.openapi(), organization_routes(app))
    assert not problems, "\n".join(problems)


def test_the_contract_check_fails_when_one_route_loses_its_model_or_an_error(app: FastAPI) -> None:
    spec = app.openapi()
    scoped = organization_routes(app)
    untyped = copy.deepcopy(spec)
    untyped["paths"]["/v1/organizations"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] = {
        "type": "object",
        "additionalProperties": True,
    }
    assert contract_problems(untyped, scoped) == [
        "GET /v1/organizations: 200 application/json is not a model: {'type': 'object', 'additionalProperties': True}"
    ]
    no_404 = copy.deepcopy(spec)
    del no_404["paths"]["/v1/knowledge/sources/{source_id}"]["get"]["responses"]["404"]
    assert contract_problems(no_404, scoped) == ["GET /v1/knowledge/sources/{source_id}: 404 is not documented"]
    undescribed = copy.deepcopy(spec)
    del undescribed["components"]["schemas"]["SearchHitOut"]["properties"]["score"]["description"]
    assert contract_problems(undescribed, scoped) == ["SearchHitOut.score has no description"]
    bare = copy.deepcopy(spec)
    del bare["paths"]["/v1/keys"]["get"]["parameters"][0]["description"]
    assert contract_problems(bare, scoped) == ["GET /v1/keys: query parameter organization_id has no description"]


def test_organization_scoped_routes_are_found(app: FastAPI) -> None:
    # The 404 rule leans on the scope table; an empty table would let every organization route skip it.
    assert ("get", "/v1/context/dossier") in organization_routes(app)
    assert ("post", "/v1/knowledge/search") in organization_routes(app)
