"""The console's views over real HTTP (httpx ASGI) on the test database: an empty failure reason is not shown
as a failure, an organization's pages open with its counts strip (read by one act, scoped like the rest),
a memory chain shows what each revision changed, escaped; an error page says what happened and what to do, and
the sign-in page says why a session ended."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from uuid import uuid4

import httpx
import pytest

from functions.actions.orgs import counts
from functions.actions.scope import Caller
from functions.errors import ApiError
from state.api_keys import mint_key, revoke_key
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service
from tests.integration.functions.console_seed import World, seed
from tests.integration.functions.test_console import sign_in
from tests.integration.memory.helpers import raw_memory


@pytest.fixture
async def world(service: Service, factory: Factory) -> World:
    operator = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.app), base_url="http://test", headers=service.auth
    )
    async with operator:
        return await seed(service.db, service.services.object_store, factory, operator)


async def test_an_empty_failure_reason_is_not_shown_as_a_failure(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    ready = (await console.get(f"/console/orgs/{world.a}/sources/{world.ready}")).text
    assert '<dd class="muted" id="no-failure">none</dd>' in ready and '<dd class="reason">' not in ready
    failed = (await console.get(f"/console/orgs/{world.a}/sources/{world.failed}")).text
    assert '<dd class="reason">extraction_failed: &lt;script&gt;' in failed


def _strip(html: str) -> list[str]:
    found = re.search(r'<ul class="counts" id="counts"[^>]*>(.*?)</ul>', html, re.S)
    assert found is not None, "no counts strip"
    return re.sub(r"<[^>]+>", "", found.group(1)).split()


async def test_an_organizations_pages_open_with_its_counts_strip_read_by_one_scoped_act(
    service: Service, world: World
) -> None:
    async with service.db.connection() as conn:
        await conn.execute(
            "INSERT INTO agent.event_outbox (name, data, organization_id) VALUES ('test/x', '{}', $1)", world.a
        )
        chunks = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", world.ready)
    seen = await counts(service.db, Caller(organization_id=world.a), world.a)
    assert (seen.sources_by_status, seen.memories, seen.receipts, seen.outbox_pending) == (
        {"ready": 1, "failed": 1}, 2, 1, 1,
    )  # fmt: skip
    assert seen.chunks == chunks > 0
    with pytest.raises(ApiError) as refused:  # another organization's key reads nothing of it
        await counts(service.db, Caller(organization_id=world.b), world.a)
    assert refused.value.code == "organization_forbidden"

    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    for page in ("sources", "search", "brief", "memories", "people", "receipts"):
        words = _strip((await console.get(f"/console/orgs/{world.a}/{page}")).text)
        assert words == [
            "Sources", "2:", "1", "ready,", "0", "pending,", "1", "failed", "Chunks", str(chunks),
            "Memories", "2", "Receipts", "1", "Outbox", "pending", "1",
        ], (page, words)  # fmt: skip
    _, operator = await sign_in(service.http, TOKEN)
    assert operator is not None
    assert 'id="counts"' not in (await operator.get("/console/orgs")).text, "not on a page of no organization"


async def test_a_memory_chain_shows_what_each_revision_changed_escaped(
    service: Service, world: World, factory: Factory
) -> None:
    definition = await factory.definition(world.a)
    first = await raw_memory(service.db, org=world.a, definition=definition, text="prefers tea in the morning")
    later = datetime(2027, 3, 1, tzinfo=UTC)
    second = await raw_memory(
        service.db, org=world.a, definition=definition, text="prefers <b>coffee</b> in the morning",
        supersedes=first, expires_at=later,
    )  # fmt: skip
    await raw_memory(service.db, org=world.a, definition=definition, text=None, supersedes=second, forgotten=True)
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    html = (await console.get(f"/console/orgs/{world.a}/memories/{first}")).text
    changes = html[html.index('<table id="changes"') :]
    assert "<del>tea</del>" in changes and "<ins>&lt;b&gt;coffee&lt;/b&gt;</ins>" in changes
    assert "<b>" not in changes, "a revision's text stays text"
    assert "expiry none → 2027-03-01" in changes
    assert changes.count("<tr>") == 1 + 2 and "tombstone</span> forgotten" in changes


async def test_an_error_page_says_what_happened_and_what_to_do(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    page = await console.get(f"/console/orgs/{uuid4()}/sources")
    assert page.status_code == 404
    assert re.search(r'<p[^>]*id="error-message">What happened: no organization [0-9a-f-]+\.</p>', page.text)
    assert '<p id="error-advice">What to do: It may have been deleted' in page.text
    assert '<code id="error-code">organization_not_found</code>' in page.text
    operator_page = await console.get("/console/orgs")
    assert "What to do: Sign in with the operator token" in operator_page.text


async def test_a_session_that_ended_says_why_on_the_sign_in_page(service: Service, world: World) -> None:
    key = await mint_key(service.db, organization_id=world.a, name="ends")
    _, console = await sign_in(service.http, key.secret)
    assert console is not None
    await revoke_key(service.db, key.key.id)
    sent = await console.get(f"/console/orgs/{world.a}/sources")
    assert sent.status_code == 303 and sent.headers["location"].endswith("&ended=revoked")
    page = await service.http.get(sent.headers["location"])
    assert "Your session ended because its key was revoked. Sign in again" in page.text
    forged = await service.http.get("/console/sign-in", params={"ended": "<b>you were hacked</b>"})
    assert "Your session ended" not in forged.text and "hacked" not in forged.text, "never echoes the address"
