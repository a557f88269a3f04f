"""The console's keys page over real HTTP through the app, on the test database.

A minted key's secret is in the one answer to the POST that mints it (`Cache-Control: no-store`), and never
again: not on a reload of the list, not on the key's page or its revoke page, not in a log, a cookie or the
session's row; the database holds only its SHA-256. The page is an operator's only (an organization key:
403, nothing minted or revoked), every POST needs the session's CSRF token, and a revoked key is refused by
`/v1/` from its next request on.
"""

from __future__ import annotations

import hashlib
import logging
import re

import pytest

from state.api_keys import mint_key, parse_key
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service
from tests.integration.functions.test_console import code_of, sign_in

SECRET = re.compile(r'<pre class="secret" id="secret">(ack_[0-9a-f]{16}_[A-Za-z0-9_-]{43})</pre>')


async def _key_count(service: Service) -> int:
    async with service.db.connection() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM agent.api_keys"))


async def test_a_keys_secret_is_shown_once_and_never_again(
    service: Service, factory: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    org = await factory.organization()
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None

    minted = await console.post("/console/keys", {"name": "billing service", "organization": str(org)})
    assert minted.status_code == 201, minted.text
    assert minted.headers["cache-control"] == "no-store", "the one answer with the secret is never cached"
    found = SECRET.search(minted.text)
    assert found is not None, "the minting answer shows the secret"
    key = found.group(1)
    parsed = parse_key(key)
    assert parsed is not None
    key_id, secret = parsed
    works = await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)},
                                   headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert works.status_code == 200, "the secret shown is the key's"

    later = [
        await console.get("/console/keys"),
        await console.get("/console/keys", organization=str(org)),
        await console.get(f"/console/keys/{key_id}"),
        await console.get(f"/console/keys/{key_id}/revoke"),
    ]
    for page in later:
        assert page.status_code == 200, page.text
        assert key_id in page.text, "the key is listed by its id"
        assert secret not in page.text, f"the secret is shown again on {page.url}"
    assert secret not in console.cookie and all(secret not in v for v in minted.headers.values())
    async with service.db.connection() as conn:
        stored = await conn.fetchrow("SELECT secret_sha256, row_to_json(k)::text AS whole FROM agent.api_keys k"
                                     " WHERE id = $1", key_id)  # fmt: skip
        sessions = await conn.fetchval("SELECT string_agg(row_to_json(s)::text, '') FROM agent.console_sessions s")
    assert stored is not None and bytes(stored["secret_sha256"]) == hashlib.sha256(secret.encode()).digest()
    assert secret not in stored["whole"] and secret not in (sessions or ""), "the database holds only its hash"
    assert not [r for r in caplog.records if secret in r.getMessage()], "no log holds the secret"


async def test_revoking_asks_first_needs_the_csrf_token_and_the_key_is_refused_after(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    key = (await mint_key(service.db, organization_id=org, name="ci")).secret
    parsed = parse_key(key)
    assert parsed is not None
    key_id = parsed[0]
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None

    asked = await console.get(f"/console/keys/{key_id}/revoke")
    assert asked.status_code == 200 and 'id="confirm-revoke"' in asked.text
    forged = await console.post(f"/console/keys/{key_id}/revoke", csrf=False)
    assert forged.status_code == 403 and code_of(forged) == "csrf_invalid"
    auth = {"Authorization": f"Bearer {key}"}
    still = await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)}, headers=auth)
    assert still.status_code == 200, "a POST without the CSRF token revokes nothing"

    revoked = await console.post(f"/console/keys/{key_id}/revoke")
    assert revoked.status_code == 303 and revoked.headers["location"] == f"/console/keys/{key_id}?revoked=1"
    page = await console.get(f"/console/keys/{key_id}")
    assert "revoked" in page.text and 'id="revoke"' not in page.text
    refused = await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)}, headers=auth)
    assert refused.status_code == 401, "a revoked key is refused from its next request on"
    unknown = await console.get("/console/keys/0123456789abcdef")
    assert unknown.status_code == 404 and code_of(unknown) == "api_key_not_found"


async def test_an_organization_key_neither_sees_nor_mints_nor_revokes_keys(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    own = (await mint_key(service.db, organization_id=org, name="own")).secret
    other = (await mint_key(service.db, organization_id=await factory.organization(), name="other")).secret
    other_id = (parse_key(other) or ("", ""))[0]
    _, console = await sign_in(service.http, own)
    assert console is not None
    before = await _key_count(service)
    for answer in (
        await console.get("/console/keys"),
        await console.get(f"/console/keys/{other_id}"),
        await console.get(f"/console/keys/{other_id}/revoke"),
        await console.post("/console/keys", {"name": "mine", "organization": str(org)}),
        await console.post(f"/console/keys/{other_id}/revoke"),
    ):
        assert answer.status_code == 403 and code_of(answer) == "operator_scope_required", answer.url
        assert "ack_" not in answer.text
    assert await _key_count(service) == before, "nothing minted"
    works = await service.http.get("/v1/keys", headers={"Authorization": f"Bearer {TOKEN}"})
    assert all(k["revoked_at"] is None for k in works.json()["items"]), "nothing revoked"
    home = await console.get(f"/console/orgs/{org}/sources")
    assert 'href="/console/keys"' not in home.text, "no link to a page it may not open"
    _, operator = await sign_in(service.http, TOKEN)
    assert operator is not None
    assert 'href="/console/keys"' in (await operator.get("/console/orgs")).text
