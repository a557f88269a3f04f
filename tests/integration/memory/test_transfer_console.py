"""The console's memory move: an export link and an import form on the memories page, under the console's rules
(the session's scope, its CSRF token, the strict CSP), calling the acts the API calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from functions.console._session import COOKIE
from state.api_keys import mint_key
from state.db import Database
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service
from tests.integration.functions.test_console import code_of, sign_in
from tests.integration.memory.helpers import raw_memory
from tests.integration.memory.transfer_helpers import running_app


@pytest.fixture
async def app(db: Database, tmp_path: Path) -> AsyncIterator[Service]:
    """The whole service on the test database (the fake embedder is the live model)."""
    async with running_app(db, tmp_path) as running:
        yield running


async def test_the_memories_page_exports_and_imports_within_the_sessions_organization(
    app: Service, factory: Factory
) -> None:
    org, other = await factory.organization(), await factory.organization()
    agent = await factory.definition(org, name="Account agent")
    mem = {"db": app.db, "org": org, "definition": agent, "attribute": "observation.team"}
    first = await raw_memory(**mem, text="Meets <b>Monday</b>")
    await raw_memory(**mem, text="Meets Friday", supersedes=first)
    key = (await mint_key(app.db, organization_id=org, name="console")).secret
    _, console = await sign_in(app.http, key)
    assert console is not None
    cookie = {"Cookie": f"{COOKIE}={console.cookie}"}

    page = await console.get(f"/console/orgs/{org}/memories")
    assert page.status_code == 200
    assert f'href="/console/orgs/{org}/memories/export"' in page.text
    assert f'action="/console/orgs/{org}/memories/import" enctype="multipart/form-data"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]

    exported = await console.get(f"/console/orgs/{org}/memories/export")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(x)["text"] for x in exported.content.splitlines()] == ["Meets <b>Monday</b>", "Meets Friday"]
    assert "attachment" in exported.headers["content-disposition"]
    theirs = await console.get(f"/console/orgs/{other}/memories/export")
    assert theirs.status_code == 404, "another organization's memory is nothing the console names"

    target = await factory.organization()
    await factory.definition(target, name="Account agent")
    files = {"file": ("m.jsonl", exported.content, "application/x-ndjson")}
    into_other = await app.http.post(f"/console/orgs/{target}/memories/import", data={"csrf": console.csrf},
                                     files=files, headers=cookie)  # fmt: skip
    assert into_other.status_code == 404, "an organization key's session imports into its own organization only"
    no_csrf = await app.http.post(f"/console/orgs/{org}/memories/import", files=files, headers=cookie)
    assert (no_csrf.status_code, code_of(no_csrf)) == (403, "csrf_invalid")

    _, operator = await sign_in(app.http, TOKEN)
    assert operator is not None
    as_operator = {"Cookie": f"{COOKIE}={operator.cookie}"}
    bad = {"file": ("m.jsonl", exported.content + b"{}\n", "application/x-ndjson")}
    refused = await app.http.post(f"/console/orgs/{target}/memories/import", data={"csrf": operator.csrf},
                                  files=bad, headers=as_operator)  # fmt: skip
    assert (refused.status_code, code_of(refused)) == (422, "memory_import_format_unknown")
    assert "line 3:" in refused.text
    done = await app.http.post(f"/console/orgs/{target}/memories/import", data={"csrf": operator.csrf},
                               files=files, headers=as_operator)  # fmt: skip
    assert done.status_code == 303, done.text
    receipt = await operator.get(done.headers["location"])
    assert receipt.status_code == 200 and "memory_import" in receipt.text and "chains_imported" in receipt.text
    listed = await operator.get(f"/console/orgs/{target}/memories")
    assert "Meets Friday" in listed.text and "Meets <b>" not in listed.text
