"""`DELETE /v1/knowledge/sources/{id}`: an organization key deletes its own sources only, an operator key any
(a platform source included); the answer is the receipt; refusals are the envelope's 404/403/410/422."""

from __future__ import annotations

from uuid import UUID, uuid4

from knowledge.ingestion.registration import register_upload, register_uri
from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code as code


async def _source(service: Service, org: UUID | None, text: str) -> UUID:
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=text.encode(), filename="note.md"
    )
    return registered.source_id


async def test_an_organization_key_deletes_its_own_source_and_gets_its_receipt_and_a_repeat_answers_410(
    service: Service, factory: Factory
) -> None:
    own, other = await factory.organization(), await factory.organization()
    scope = {"organization_id": str(own)}  # an organization key names its organization, as on every route
    key = {"Authorization": f"Bearer {(await mint_key(service.db, organization_id=own, name='k')).secret}"}
    mine, theirs = await _source(service, own, "# Mine\n\nours"), await _source(service, other, "# Theirs\n\nx")
    platform = await _source(service, None, "# Platform\n\nshared")

    answer = await service.http.delete(f"/v1/knowledge/sources/{mine}", headers=key, params=scope)
    assert answer.status_code == 200, answer.text
    receipt = answer.json()
    assert receipt["kind"] == "source" and receipt["target_id"] == str(mine) and receipt["status"] == "complete"
    assert receipt["counts"]["agent.knowledge_sources"] == 1 and receipt["organization_id"] == str(own)

    again = await service.http.delete(f"/v1/knowledge/sources/{mine}", headers=key, params=scope)
    assert (again.status_code, code(again)) == (410, "source_deleted") and receipt["id"] in again.text
    foreign = await service.http.delete(f"/v1/knowledge/sources/{theirs}", headers=key, params=scope)
    assert (foreign.status_code, code(foreign)) == (404, "source_not_found")
    shared = await service.http.delete(f"/v1/knowledge/sources/{platform}", headers=key, params=scope)
    assert (shared.status_code, code(shared)) == (404, "source_not_found")
    unknown = await service.http.delete(f"/v1/knowledge/sources/{uuid4()}", headers=key, params=scope)
    assert (unknown.status_code, code(unknown)) == (404, "source_not_found")
    malformed = await service.http.delete("/v1/knowledge/sources/not-a-uuid", headers=key, params=scope)
    assert malformed.status_code == 422
    async with service.db.connection() as conn:
        left = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_sources WHERE id = ANY($1)", [theirs, platform]
        )
    assert left == 2


async def test_an_operator_key_deletes_any_source_a_platform_one_included(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    theirs, platform = await _source(service, org, "# Theirs\n\nx"), await _source(service, None, "# Platform\n\ny")
    for source_id in (theirs, platform):
        answer = await service.http.delete(f"/v1/knowledge/sources/{source_id}", headers=service.auth)
        assert answer.status_code == 200, answer.text
        assert answer.json()["requested_by"] == "operator"


async def test_deleting_a_re_synced_uri_by_its_old_id_deletes_every_version_and_a_repeat_by_either_is_410(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    scope = {"organization_id": str(org)}
    key = {"Authorization": f"Bearer {(await mint_key(service.db, organization_id=org, name='k')).secret}"}
    store, uri = service.services.object_store, "https://help.example/refunds"
    old = await register_uri(service.db, store, organization_id=org, uri=uri, data=b"# Refunds\n\n30 days")
    new = await register_uri(service.db, store, organization_id=org, uri=uri, data=b"# Refunds\n\n14 days")
    assert new.replaces == old.source_id

    answer = await service.http.delete(f"/v1/knowledge/sources/{new.source_id}", headers=key, params=scope)
    assert answer.status_code == 200, answer.text
    receipt = answer.json()
    assert sorted(receipt["versions"]) == sorted([str(old.source_id), str(new.source_id)])
    assert receipt["counts"]["agent.knowledge_sources"] == 2
    for asked in (old.source_id, new.source_id):
        again = await service.http.delete(f"/v1/knowledge/sources/{asked}", headers=key, params=scope)
        assert (again.status_code, code(again)) == (410, "source_deleted") and receipt["id"] in again.text
