"""A retry answers what its schema says, and a source's attempts show on the API and the console, scoped.

The retry route's 202 answer is validated against the route's own OpenAPI schema (which says `reset: true`
and `status: pending`) and checked for those values; the console's Retry redirects to the source page, which
reads the source again and shows it pending with the retry as a running attempt. `GET …/attempts` and the
source page answer another organization's source as 404, as an unknown one.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from jsonschema import Draft202012Validator

from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key
from state.db import Database
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.test_console import code_of, sign_in

RETRY = "/v1/knowledge/sources/{source_id}/retry"


async def _failed_source(db: Database, store: Any, org: UUID) -> UUID:
    """An uploaded source whose ingestion failed (as a run would leave it)."""
    registered = await register_upload(db, store, organization_id=org, data=b"# Failed\n\ntext", filename="f.md")
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'pdf_encrypted: locked',"
            " pending_since = NULL WHERE id = $1", registered.source_id,
        )  # fmt: skip
    return registered.source_id


def _answer_schema(openapi: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    """The JSON schema the route's OpenAPI description gives its answer, with the components it refers to."""
    content = openapi["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]
    return {**content, "components": openapi["components"]}


async def test_the_retry_answer_matches_its_openapi_schema_reset_true_and_pending(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    source_id = await _failed_source(service.db, service.services.object_store, org)
    schema = _answer_schema(service.app.openapi(), RETRY, "post", "202")
    Draft202012Validator.check_schema(schema)
    answer = await service.http.post(
        RETRY.format(source_id=source_id), params={"organization_id": str(org)}, headers=service.auth
    )
    assert answer.status_code == 202, answer.text
    body = answer.json()
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(body)]
    assert not errors, f"the retry answer breaks its own schema: {errors}"
    assert (body["reset"], body["status"]) == (True, "pending"), body
    resolved = schema["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]["properties"]
    assert resolved["reset"].get("const") is True and resolved["status"].get("const") == "pending", (
        "the schema promises reset true and pending"
    )


async def test_the_api_lists_a_sources_attempts_to_its_organization_only(service: Service, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    source_id = await _failed_source(service.db, service.services.object_store, org)
    await service.http.post(RETRY.format(source_id=source_id), params={"organization_id": str(org)},
                            headers=service.auth)  # fmt: skip
    own = {"Authorization": f"Bearer {(await mint_key(service.db, organization_id=org, name='own')).secret}"}
    theirs = {"Authorization": f"Bearer {(await mint_key(service.db, organization_id=other, name='x')).secret}"}
    path = f"/v1/knowledge/sources/{source_id}/attempts"
    listed = await service.http.get(path, params={"organization_id": str(org)}, headers=own)
    assert listed.status_code == 200, listed.text
    attempts = listed.json()["attempts"]
    assert [(a["cause"], a["outcome"]) for a in attempts] == [("retry", None), ("upload", "failed")]
    assert attempts[1]["reason"].startswith("pdf_encrypted:") and attempts[1]["ended_by"] == "ingestion"
    for headers, scope in ((theirs, other), (service.auth, other)):
        refused = await service.http.get(path, params={"organization_id": str(scope)}, headers=headers)
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "knowledge_source_not_found"


async def test_after_retry_the_console_shows_the_new_state_and_the_attempts_at_once(
    service: Service, factory: Factory
) -> None:
    org, other = await factory.organization(), await factory.organization()
    source_id = await _failed_source(service.db, service.services.object_store, org)
    _, console = await sign_in(service.http, (await mint_key(service.db, organization_id=org, name="c")).secret)
    assert console is not None
    page = f"/console/orgs/{org}/sources/{source_id}"
    before = await console.get(page)
    assert '<span class="badge failed">failed</span>' in before.text
    retried = await console.post(f"{page}/retry")
    assert retried.status_code == 303 and retried.headers["location"].startswith(page), "POST, then redirect, then GET"
    after = await console.get(retried.headers["location"].split("?")[0], retried="1")
    assert after.status_code == 200
    status = re.search(r"<dt>Status</dt><dd>(.*?)</dd>", after.text)
    assert status is not None and "pending" in status.group(1), "the page shows the reset at once"
    table = after.text.split('<table id="attempts">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<td class="cause">([^<]*)</td>', table)
    assert rows == ["retry", "upload"], rows
    assert "pdf_encrypted: locked" in table and "running" in table
    _, stranger = await sign_in(service.http, (await mint_key(service.db, organization_id=other, name="s")).secret)
    assert stranger is not None
    foreign = await stranger.get(f"/console/orgs/{other}/sources/{source_id}")
    assert foreign.status_code == 404 and code_of(foreign) == "knowledge_source_not_found"
