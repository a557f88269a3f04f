"""Erasing a person over HTTP (issue 22): `POST /v1/erasures/users` erases and answers the receipt, the same
receipt when repeated; `GET /v1/receipts/{id}` and `GET /v1/receipts` show receipts to the organization they
belong to and answer another organization's id as unknown; refusals are envelope errors with nothing changed."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code
from tests.integration.memory.helpers import raw_memory


async def seed(service: Service, factory: Factory) -> dict[str, Any]:
    org = await factory.organization()
    user, other_user = await factory.user(org), await factory.user(org)
    definition = await factory.definition(org)
    person = await factory.person(org)
    refs = [{"kind": "crm.person", "id": str(person), "label": "Ada"}]
    root = await raw_memory(service.db, org=org, definition=definition, scope="user", user=user, text="one")
    await raw_memory(service.db, org=org, definition=definition, scope="user", user=user, text="two", supersedes=root)
    await raw_memory(service.db, org=org, definition=definition, refs=refs, text="about Ada")
    kept = await raw_memory(service.db, org=org, definition=definition, scope="user", user=other_user, text="mine")
    key = (await mint_key(service.db, organization_id=org, name="platform")).secret
    return {"org": org, "user": user, "person": person, "kept": kept, "key": {"Authorization": f"Bearer {key}"}}


async def memory_ids(service: Service, org: UUID) -> set[UUID]:
    async with service.db.connection() as conn:
        return {r["id"] for r in await conn.fetch("SELECT id FROM agent.memories WHERE organization_id = $1", org)}


async def test_an_organization_key_erases_a_person_and_reads_the_receipt(service: Service, factory: Factory) -> None:
    w = await seed(service, factory)
    body = {"organization_id": str(w["org"]), "user_id": str(w["user"]), "subject": f"crm.person:{w['person']}"}
    answer = await service.http.post("/v1/erasures/users", json=body, headers=w["key"])
    assert answer.status_code == 200, answer.text
    receipt = answer.json()
    assert receipt["kind"] == "user" and receipt["status"] == "complete"
    assert receipt["target_id"] == str(w["user"]) and receipt["subject"] == f"crm.person:{w['person']}"
    assert receipt["counts"] == {"agent.memories": 3, "agent.memory_postings": 3}
    assert receipt["requested_by"].startswith("key:")
    assert await memory_ids(service, w["org"]) == {w["kept"]}

    again = await service.http.post("/v1/erasures/users", json=body, headers=w["key"])
    assert again.status_code == 200 and again.json() == receipt, "a repeat answers the same receipt"

    params = {"organization_id": str(w["org"])}
    shown = await service.http.get(f"/v1/receipts/{receipt['id']}", params=params, headers=w["key"])
    assert shown.status_code == 200 and shown.json() == receipt
    listed = await service.http.get("/v1/receipts", params=params, headers=w["key"])
    assert listed.status_code == 200 and [r["id"] for r in listed.json()["receipts"]] == [receipt["id"]]
    by_operator = await service.http.get(f"/v1/receipts/{receipt['id']}", headers=service.auth)
    assert by_operator.status_code == 200 and by_operator.json() == receipt


async def test_another_organizations_receipt_is_unknown_to_a_key(service: Service, factory: Factory) -> None:
    mine, theirs = await seed(service, factory), await seed(service, factory)
    body = {"organization_id": str(theirs["org"]), "user_id": str(theirs["user"])}
    answer = await service.http.post("/v1/erasures/users", json=body, headers=service.auth)
    assert answer.status_code == 200, answer.text
    receipt_id = answer.json()["id"]
    assert answer.json()["requested_by"] == "operator_token"

    params = {"organization_id": str(mine["org"])}
    for path in (f"/v1/receipts/{receipt_id}", f"/v1/receipts/{uuid.uuid4()}"):
        hidden = await service.http.get(path, params=params, headers=mine["key"])
        assert hidden.status_code == 404 and error_code(hidden) == "receipt_not_found"
    listed = await service.http.get("/v1/receipts", params=params, headers=mine["key"])
    assert listed.json() == {"items": [], "receipts": [], "total": 0, "next_cursor": None, "prev_cursor": None}
    named = await service.http.get(
        f"/v1/receipts/{receipt_id}", params={"organization_id": str(theirs["org"])}, headers=mine["key"]
    )
    assert named.status_code == 403 and error_code(named) == "organization_forbidden"
    erase_theirs = await service.http.post("/v1/erasures/users", json=body, headers=mine["key"])
    assert erase_theirs.status_code == 403 and error_code(erase_theirs) == "organization_forbidden"
    everyone = await service.http.get("/v1/receipts", headers=service.auth)
    assert [r["id"] for r in everyone.json()["receipts"]] == [receipt_id]


async def test_refusals_are_envelope_errors_and_change_nothing(service: Service, factory: Factory) -> None:
    w = await seed(service, factory)
    other = await factory.tenant()
    before = await memory_ids(service, w["org"])
    cases = [
        (
            {"organization_id": str(uuid.uuid4()), "user_id": str(w["user"])},
            service.auth,
            404,
            "organization_not_found",
        ),
        ({"organization_id": str(w["org"]), "user_id": str(other.user)}, w["key"], 404, "user_not_found"),
        ({"organization_id": str(w["org"]), "user_id": str(uuid.uuid4())}, w["key"], 404, "user_not_found"),
        (
            {"organization_id": str(w["org"]), "user_id": str(w["user"]), "subject": "crm.company:" + str(w["person"])},
            w["key"],
            422,
            "erasure_subject_invalid",
        ),
        (
            {"organization_id": str(w["org"]), "user_id": str(w["user"]), "subject": "crm.person:nope"},
            w["key"],
            422,
            "erasure_subject_invalid",
        ),
        ({"organization_id": str(w["org"]), "user_id": str(w["user"]).upper()}, w["key"], 422, "invalid_request"),
        ({"organization_id": str(w["org"]), "user_id": str(w["user"]), "text": "x"}, w["key"], 422, "invalid_request"),
        ({"user_id": str(w["user"])}, w["key"], 422, "organization_required"),
    ]
    for body, headers, status, code in cases:
        answer = await service.http.post("/v1/erasures/users", json=body, headers=headers)
        assert (answer.status_code, error_code(answer)) == (status, code), (body, answer.text)
        if code == "erasure_subject_invalid":
            assert answer.json()["error"]["details"][0]["loc"] == ["body", "subject"]
    assert await memory_ids(service, w["org"]) == before
    missing = await service.http.get(f"/v1/receipts/{uuid.uuid4()}", headers=service.auth)
    assert missing.status_code == 404 and error_code(missing) == "receipt_not_found"
    async with service.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.removal_receipts") == 0


async def test_a_repeated_organization_erasure_answers_its_receipt_and_its_receipts_stay_listed(
    service: Service,
) -> None:
    """The organization row is gone after the first erasure; the repeat and the receipts still answer."""
    created = await service.http.post("/v1/organizations", json={"name": "Gone GmbH"}, headers=service.auth)
    assert created.status_code == 201, created.text
    org = created.json()["id"]
    body = {"organization_id": org}
    first = await service.http.post("/v1/erasures/organizations", json=body, headers=service.auth)
    assert first.status_code == 200, first.text
    receipt = first.json()
    assert receipt["kind"] == "organization" and receipt["status"] == "complete"
    gone = await service.http.get(f"/v1/organizations/{org}", headers=service.auth)
    assert gone.status_code == 404 and error_code(gone) == "organization_not_found", "the row was erased"

    again = await service.http.post("/v1/erasures/organizations", json=body, headers=service.auth)
    assert again.status_code == 200, again.text
    assert again.json() == receipt, "a repeat answers the completed receipt"
    params = {"organization_id": org}
    listed = await service.http.get("/v1/receipts", params=params, headers=service.auth)
    assert listed.status_code == 200, listed.text
    assert [r["id"] for r in listed.json()["receipts"]] == [receipt["id"]]
    shown = await service.http.get(f"/v1/receipts/{receipt['id']}", params=params, headers=service.auth)
    assert shown.status_code == 200 and shown.json() == receipt

    # Only an erased organization is let through: its neighbours on other routes still answer 404.
    sources = await service.http.get("/v1/knowledge/sources", params=params, headers=service.auth)
    assert sources.status_code == 404 and error_code(sources) == "organization_not_found"
