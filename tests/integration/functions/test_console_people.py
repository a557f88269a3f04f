"""The console's *People and agents* page (issue 46, item 3) over real HTTP through the app: an organization key
adds and removes its members and agents behind the session's CSRF token; a member with memories and an agent
that owns memories are refused with their codes, nothing removed; hostile text is escaped; another
organization's page and acts are 404, as everywhere in the console."""

from __future__ import annotations

from uuid import UUID, uuid4

from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.test_console import Console, code_of, sign_in
from tests.integration.memory.helpers import raw_memory


async def signed_in(service: Service, org: UUID) -> Console:
    key = (await mint_key(service.db, organization_id=org, name="console")).secret
    _, console = await sign_in(service.http, key)
    assert console is not None
    return console


async def count(service: Service, table: str, org: UUID) -> int:
    async with service.db.connection() as conn:
        return int(await conn.fetchval(f"SELECT count(*) FROM {table} WHERE organization_id = $1", org))


async def test_a_key_adds_and_removes_members_and_agents_and_the_rules_hold(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    console = await signed_in(service, org)
    page = f"/console/orgs/{org}/people"
    shown = await console.get(page)
    assert shown.status_code == 200 and 'href="/console/orgs/' + str(org) + '/people"' in shown.text

    added = await console.post(f"{page}/users", {"email": "ada@acme.test", "display_name": "<script>x</script>"})
    assert added.status_code == 303 and added.headers["location"] == f"{page}?done=user-added"
    listed = await console.get(page, done="user-added")
    assert "ada@acme.test" in listed.text and "member added" in listed.text
    assert "<script>x" not in listed.text and "&lt;script&gt;x&lt;/script&gt;" in listed.text
    refused = await console.post(f"{page}/users", {"email": "ADA@acme.test"})
    assert (refused.status_code, code_of(refused)) == (409, "user_email_taken")
    refused = await console.post(f"{page}/users", {"email": "not an email"})
    assert (refused.status_code, code_of(refused)) == (422, "user_email_invalid")

    assert (await console.post(f"{page}/agents", {"name": "Assistant"})).status_code == 303
    async with service.db.connection() as conn:
        user = await conn.fetchval("SELECT id FROM public.users WHERE organization_id = $1", org)
        agent = await conn.fetchval("SELECT id FROM agent.definitions WHERE organization_id = $1", org)
    await raw_memory(service.db, org=org, definition=agent, scope="user", user=user, text="keep me")

    refused = await console.post(f"{page}/users/{user}/remove")
    assert (refused.status_code, code_of(refused)) == (409, "user_has_memories")
    refused = await console.post(f"{page}/agents/{agent}/remove")
    assert (refused.status_code, code_of(refused)) == (409, "agent_in_use")
    assert await count(service, "agent.memories", org) == 1 and await count(service, "public.users", org) == 1
    archived = await console.post(f"{page}/agents/{agent}/status", {"status": "archived"})
    assert archived.status_code == 303
    assert "archived" in (await console.get(page)).text

    other = await factory.user(org)
    assert (await console.post(f"{page}/users/{other}/remove")).status_code == 303
    assert await count(service, "public.users", org) == 1
    idle = await console.post(f"{page}/agents", {"name": "Idle"})
    assert idle.status_code == 303
    async with service.db.connection() as conn:
        sql = "SELECT id FROM agent.definitions WHERE organization_id = $1 AND name = 'Idle'"
        idle_id = await conn.fetchval(sql, org)
    assert (await console.post(f"{page}/agents/{idle_id}/remove")).status_code == 303
    assert await count(service, "agent.definitions", org) == 1


async def test_another_organizations_people_are_404_and_a_post_needs_the_csrf_token(
    service: Service, factory: Factory
) -> None:
    mine, theirs = await factory.organization(), await factory.organization()
    their_user, their_agent = await factory.user(theirs), await factory.definition(theirs)
    console = await signed_in(service, mine)
    there, here = f"/console/orgs/{theirs}/people", f"/console/orgs/{mine}/people"
    assert (await console.get(there)).status_code == 404
    assert (await console.get(f"/console/orgs/{uuid4()}/people")).status_code == 404
    for path, data in (
        (f"{there}/users", {"email": "eve@acme.test"}), (f"{there}/users/{their_user}/remove", {}),
        (f"{there}/agents", {"name": "Mine"}), (f"{there}/agents/{their_agent}/remove", {}),
        (f"{there}/agents/{their_agent}/status", {"status": "archived"}),
    ):  # fmt: skip
        answer = await console.post(path, data)
        assert answer.status_code == 404, (path, code_of(answer))
    for path in (f"{here}/users/{their_user}/remove", f"{here}/agents/{their_agent}/remove"):
        answer = await console.post(path)
        assert answer.status_code == 404 and code_of(answer) in {"user_not_found", "agent_not_found"}, path
    no_token = await console.post(f"{here}/users", {"email": "ada@acme.test"}, csrf=False)
    assert (no_token.status_code, code_of(no_token)) == (403, "csrf_invalid")
    assert await count(service, "public.users", mine) == 0
    assert await count(service, "public.users", theirs) == 1 and await count(service, "agent.definitions", theirs) == 1
