"""Users, agent definitions and runs over HTTP (issue 46, item 3): a new organization adds a member, an agent and
a run, remembers through the memory tools with those ids, and the erasure rules hold (a user with memories is
removed only after the person's erasure, a definition with memories or runs only archived); an organization key
names its own organization only; malformed and unknown ids are refused with their codes, nothing changed."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import httpx

from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code


async def key_for(service: Service, org: UUID) -> dict[str, str]:
    secret = (await mint_key(service.db, organization_id=org, name="app")).secret
    return {"Authorization": f"Bearer {secret}"}


def ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def refused(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert error_code(answer) == code, answer.text


async def remember(service: Service, auth: dict[str, str], org: UUID, agent: str, run: str, user: str) -> Any:
    body = {
        "invocation": {"organization_id": str(org), "definition_id": agent, "run_id": run, "user_id": user},
        "arguments": {"attribute": "preference.tone", "text": "Short answers, please", "scope": "user"},
    }
    return await service.http.post("/v1/memory/remember", json=body, headers=auth)


async def memories_of(service: Service, org: UUID) -> int:
    async with service.db.connection() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM agent.memories WHERE organization_id = $1", org))


async def test_a_new_organization_remembers_through_its_own_user_agent_and_run(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    auth = await key_for(service, org)
    base = f"/v1/organizations/{org}"
    user = ok(await service.http.post(f"{base}/users", json={"email": "ada@acme.test", "display_name": "Ada"},
                                      headers=auth), 201)  # fmt: skip
    agent = ok(await service.http.post(f"{base}/agents", json={"name": "Assistant"}, headers=auth), 201)
    assert agent["kind"] == "agent" and agent["status"] == "published"
    run = ok(await service.http.post(f"{base}/runs", json={"agent_id": agent["id"], "user_id": user["id"]},
                                     headers=auth), 201)  # fmt: skip
    assert run["status"] == "running" and run["definition_id"] == agent["id"] and run["user_id"] == user["id"]

    written = ok(await remember(service, auth, org, agent["id"], run["id"], user["id"]))
    assert written["scope"] == "user" and written["text"] == "Short answers, please"

    listed = ok(await service.http.get(f"{base}/users", headers=auth))
    assert listed["total"] == 1 and listed["items"][0]["memories"] == 1 and listed["items"][0]["runs"] == 1
    agents = ok(await service.http.get(f"{base}/agents", headers=auth))
    assert [(a["id"], a["memories"], a["runs"]) for a in agents["items"]] == [(agent["id"], 1, 1)]
    runs = ok(await service.http.get(f"{base}/runs", params={"user_id": user["id"]}, headers=auth))
    assert [r["id"] for r in runs["items"]] == [run["id"]]
    finished = ok(await service.http.post(f"{base}/runs/{run['id']}/finish", json={}, headers=auth))
    assert finished["status"] == "succeeded"
    refused(await service.http.post(f"{base}/runs/{run['id']}/finish", json={}, headers=auth), 409, "run_finished")


async def test_a_user_with_memories_is_removed_only_after_the_persons_erasure(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    auth = await key_for(service, org)
    base = f"/v1/organizations/{org}"
    user = ok(await service.http.post(f"{base}/users", json={"email": "ada@acme.test"}, headers=auth), 201)
    agent = ok(await service.http.post(f"{base}/agents", json={"name": "Assistant"}, headers=auth), 201)
    run = ok(await service.http.post(f"{base}/runs", json={"agent_id": agent["id"], "user_id": user["id"]},
                                     headers=auth), 201)  # fmt: skip
    ok(await remember(service, auth, org, agent["id"], run["id"], user["id"]))

    refused(await service.http.delete(f"{base}/users/{user['id']}", headers=auth), 409, "user_has_memories")
    assert await memories_of(service, org) == 1, "a refused removal deletes no memory"

    erased = ok(await service.http.post("/v1/erasures/users", json={"organization_id": str(org),
                                                                     "user_id": user["id"]}, headers=auth))  # fmt: skip
    assert erased["status"] == "complete" and erased["counts"]["agent.memories"] == 1
    assert ok(await service.http.delete(f"{base}/users/{user['id']}", headers=auth)) == {
        "id": user["id"], "removed": True,
    }  # fmt: skip
    assert ok(await service.http.get(f"{base}/users", headers=auth))["total"] == 0
    refused(await service.http.delete(f"{base}/users/{user['id']}", headers=auth), 404, "user_not_found")
    runs = ok(await service.http.get(f"{base}/runs", headers=auth))["items"]
    assert [(r["id"], r["user_id"]) for r in runs] == [(run["id"], None)], "the run's history stays, its user gone"


async def test_a_definition_that_owns_memories_or_runs_is_archived_not_removed(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    auth = await key_for(service, org)
    base = f"/v1/organizations/{org}"
    user = ok(await service.http.post(f"{base}/users", json={"email": "ada@acme.test"}, headers=auth), 201)
    agent = ok(await service.http.post(f"{base}/agents", json={"name": "Assistant"}, headers=auth), 201)
    idle = ok(await service.http.post(f"{base}/agents", json={"name": "Idle", "status": "draft"}, headers=auth), 201)
    run = ok(await service.http.post(f"{base}/runs", json={"agent_id": agent["id"], "user_id": user["id"]},
                                     headers=auth), 201)  # fmt: skip
    refused(await service.http.delete(f"{base}/agents/{agent['id']}", headers=auth), 409, "agent_in_use")
    ok(await remember(service, auth, org, agent["id"], run["id"], user["id"]))
    refused(await service.http.delete(f"{base}/agents/{agent['id']}", headers=auth), 409, "agent_in_use")
    assert await memories_of(service, org) == 1

    archived = ok(await service.http.patch(f"{base}/agents/{agent['id']}", json={"status": "archived"}, headers=auth))
    assert archived["status"] == "archived" and archived["memories"] == 1
    again = await service.http.post(f"{base}/runs", json={"agent_id": agent["id"], "user_id": user["id"]}, headers=auth)
    refused(again, 409, "agent_archived")
    assert await memories_of(service, org) == 1, "archiving keeps its memories"

    assert ok(await service.http.delete(f"{base}/agents/{idle['id']}", headers=auth))["removed"] is True
    assert [a["id"] for a in ok(await service.http.get(f"{base}/agents", headers=auth))["items"]] == [agent["id"]]


async def test_an_organization_key_names_its_own_organization_only(service: Service, factory: Factory) -> None:
    mine, theirs = await factory.organization(), await factory.organization()
    auth = await key_for(service, mine)
    their_user = await factory.user(theirs)
    their_agent = await factory.definition(theirs)
    there = f"/v1/organizations/{theirs}"
    their_run = {"agent_id": str(their_agent), "user_id": str(their_user)}
    for answer in (
        await service.http.get(f"{there}/users", headers=auth),
        await service.http.post(f"{there}/users", json={"email": "eve@acme.test"}, headers=auth),
        await service.http.delete(f"{there}/users/{their_user}", headers=auth),
        await service.http.get(f"{there}/agents", headers=auth),
        await service.http.post(f"{there}/agents", json={"name": "Mine now"}, headers=auth),
        await service.http.delete(f"{there}/agents/{their_agent}", headers=auth),
        await service.http.post(f"{there}/runs", json=their_run, headers=auth),
        await service.http.get(f"{there}/runs", headers=auth),
    ):
        refused(answer, 403, "organization_forbidden")

    here = f"/v1/organizations/{mine}"
    my_user = ok(await service.http.post(f"{here}/users", json={"email": "ada@acme.test"}, headers=auth), 201)
    my_agent = ok(await service.http.post(f"{here}/agents", json={"name": "Assistant"}, headers=auth), 201)
    refused(await service.http.delete(f"{here}/users/{their_user}", headers=auth), 404, "user_not_found")
    refused(await service.http.delete(f"{here}/agents/{their_agent}", headers=auth), 404, "agent_not_found")
    cross_agent = {"agent_id": str(their_agent), "user_id": my_user["id"]}
    refused(await service.http.post(f"{here}/runs", json=cross_agent, headers=auth), 404, "agent_not_found")
    cross_user = {"agent_id": my_agent["id"], "user_id": str(their_user)}
    refused(await service.http.post(f"{here}/runs", json=cross_user, headers=auth), 404, "user_not_found")
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM public.users WHERE organization_id = $1", theirs) == 1
        assert await conn.fetchval("SELECT count(*) FROM agent.runs") == 0

    unknown = f"/v1/organizations/{uuid.uuid4()}/users"
    refused(await service.http.get(unknown, headers=service.auth), 404, "organization_not_found")
    assert ok(await service.http.get(f"{there}/users", headers=service.auth))["total"] == 1, "an operator sees any"


async def test_malformed_input_and_duplicates_are_refused_with_codes(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    auth = await key_for(service, org)
    base = f"/v1/organizations/{org}"
    user = ok(await service.http.post(f"{base}/users", json={"email": "ada@acme.test"}, headers=auth), 201)
    agent = ok(await service.http.post(f"{base}/agents", json={"name": "Assistant"}, headers=auth), 201)
    not_canonical = str(uuid.uuid4()).upper()
    for answer in (
        await service.http.get(f"/v1/organizations/{str(org).upper()}/users", headers=service.auth),
        await service.http.delete(f"{base}/users/{not_canonical}", headers=auth),
        await service.http.delete(f"{base}/users/not-an-id", headers=auth),
        await service.http.patch(f"{base}/agents/{not_canonical}", json={"status": "archived"}, headers=auth),
        await service.http.post(f"{base}/runs", json={"agent_id": "x", "user_id": user["id"]}, headers=auth),
        await service.http.post(f"{base}/runs/{not_canonical}/finish", json={}, headers=auth),
        await service.http.post(f"{base}/agents", json={"name": "Other", "status": "gone"}, headers=auth),
        await service.http.post(f"{base}/users", json={"email": "x@y.test", "role": "admin"}, headers=auth),
    ):
        refused(answer, 422, "invalid_request")
    for email in ("not-an-email", "a b@acme.test", "ada@localhost", "@acme.test"):
        bad = await service.http.post(f"{base}/users", json={"email": email}, headers=auth)
        refused(bad, 422, "user_email_invalid")
    dup = await service.http.post(f"{base}/users", json={"email": " ADA@Acme.test "}, headers=auth)
    refused(dup, 409, "user_email_taken")
    same_name = await service.http.post(f"{base}/agents", json={"name": "assistant"}, headers=auth)
    refused(same_name, 409, "agent_name_taken")
    refused(await service.http.post(f"{base}/agents", json={"name": "   "}, headers=auth), 422, "agent_name_invalid")
    missing = str(uuid.uuid4())
    refused(await service.http.delete(f"{base}/users/{missing}", headers=auth), 404, "user_not_found")
    refused(await service.http.delete(f"{base}/agents/{missing}", headers=auth), 404, "agent_not_found")
    refused(await service.http.post(f"{base}/runs/{missing}/finish", json={}, headers=auth), 404, "run_not_found")
    unknown_user = {"agent_id": agent["id"], "user_id": missing}
    refused(await service.http.post(f"{base}/runs", json=unknown_user, headers=auth), 404, "user_not_found")
    listed = ok(await service.http.get(f"{base}/users", headers=auth))
    assert [u["email"] for u in listed["items"]] == ["ada@acme.test"], "nothing written by a refusal"
