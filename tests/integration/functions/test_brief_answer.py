"""The front door brief's answer is `BriefOut`'s own JSON, and its OpenAPI description holds still (issue 45).

The answer is the model's dump (FastAPI's JSON fast path: pydantic's serializer, no `jsonable_encoder`), so
the same content and bytes as `BriefOut.model_dump_json`; a change of how the route answers (a hand-made
response, another encoder) fails here. The route's OpenAPI operation and every schema it references are
compared with `brief_route_openapi.json`; when a change of the schema is meant, write the file again with
`AC_WRITE_OPENAPI_SNAPSHOT=1 .venv/bin/pytest tests/integration/functions/test_brief_answer.py` and review
the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from functions.api.context import BriefOut
from tests.factories import Factory
from tests.integration.functions.conftest import Service

SNAPSHOT = Path(__file__).with_name("brief_route_openapi.json")
ROUTE = "/v1/context/briefs"


def _referenced(node: Any, components: dict[str, Any], into: dict[str, Any]) -> None:
    """Every component schema `node` references, transitively, into `into` (by name)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1]
            if name not in into:
                into[name] = components[name]
                _referenced(components[name], components, into)
        for value in node.values():
            _referenced(value, components, into)
    elif isinstance(node, list):
        for value in node:
            _referenced(value, components, into)


def route_openapi(openapi: dict[str, Any]) -> dict[str, Any]:
    """The brief route's OpenAPI operation and the component schemas it reaches."""
    operation = openapi["paths"][ROUTE]["post"]
    schemas: dict[str, Any] = {}
    _referenced(operation, openapi["components"]["schemas"], schemas)
    return {"operation": operation, "schemas": dict(sorted(schemas.items()))}


async def test_the_brief_answer_is_the_models_own_json(service: Service, factory: Factory) -> None:
    tenant = await factory.tenant(users=1)
    company = await factory.company(tenant.id, name="Contoso Robotics")
    body = {
        "organization_id": str(tenant.id),
        "user_id": str(tenant.users[0]),
        "query": "Where is Contoso?",
        "entities": [{"kind": "crm.company", "id": str(company)}, {"kind": "", "id": "dropped"}],
        "explain": True,
    }
    response = await service.http.post(ROUTE, json=body, headers=service.auth)

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    model = BriefOut.model_validate_json(response.content)
    assert model.brief.items and model.dropped_entities and model.explanation, "the answer exercises every field"
    own = model.model_dump_json(by_alias=True).encode()
    assert json.loads(response.content) == json.loads(own), "the answer's content is the model's own dump"
    assert response.content == own, "the answer is the model's own JSON, byte for byte"


async def test_the_brief_routes_openapi_description_is_unchanged(service: Service) -> None:
    described = route_openapi(service.app.openapi())
    if os.environ.get("AC_WRITE_OPENAPI_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(described, indent=1, sort_keys=True) + "\n")
    assert described == json.loads(SNAPSHOT.read_text()), (
        f"the OpenAPI description of POST {ROUTE} changed; if that is meant, rewrite {SNAPSHOT.name} (module docstring)"
    )
