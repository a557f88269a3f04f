"""The paged lists over HTTP (functions/api/_pages.py and the routes that use it), through the real app.

The rules: every list answers `items`, `total` and `next_cursor`, and walking by `cursor` shows every row
once while rows arrive between pages; `total` follows the filters (status, overdue, title; an
organization's name); a malformed or foreign cursor is 422 `invalid_cursor` in the error envelope; a
caller that sends only `limit` reads the first page under the key it always read; an organization key
cannot read another organization's rows (naming it is 403 as before; another organization's source or
memory is 404, as an unknown one); a source's chunks, its progress, an organization's or a person's
memories and a chain's history are read over HTTP.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import httpx

from functions.inngest.knowledge_ingest import EVENT_UPLOADED
from functions.inngest.knowledge_ingest import FUNCTION_ID as INGEST
from functions.inngest.knowledge_ingest import RETRIES as INGEST_RETRIES
from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code as code
from tests.integration.memory.helpers import make_world, world_memory

LONG = "\n\n".join(f"## Part {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(120)) for i in range(10))


async def _register(service: Service, org: UUID, text: str, title: str | None = None) -> UUID:
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=text.encode(), filename="doc.md",
        title=title,
    )  # fmt: skip
    return registered.source_id


async def _ingest(service: Service, org: UUID, text: str, title: str | None = None) -> UUID:
    source_id = await _register(service, org, text, title)
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(source_id), "organization_id": str(org)}}
    await service.executor.run(INGEST, event, retries=INGEST_RETRIES)
    return source_id


async def _get(service: Service, path: str, headers: dict[str, str] | None = None, **params: Any) -> httpx.Response:
    return await service.http.get(path, params=params, headers=headers or service.auth)


async def _walk(service: Service, path: str, *, between: Any = None, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):  # a cursor that never advances fails here, never hangs
        answer = await _get(service, path, **params, **({"cursor": cursor} if cursor else {}))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        rows.extend(body["items"])
        if between is not None:
            await between()
        if body["next_cursor"] is None:
            return rows
        cursor = body["next_cursor"]
    raise AssertionError("the walk never reached a last page")


async def test_sources_walk_once_each_with_their_total_while_sources_arrive(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    ids = {str(await _register(service, org, f"document {i}")) for i in range(7)}

    async def arrive() -> None:
        await _register(service, org, f"late {uuid4()}")

    first = (await _get(service, "/v1/knowledge/sources", organization_id=str(org), limit=3)).json()
    assert first["total"] == 7 and len(first["items"]) == 3 and first["next_cursor"]
    rows = await _walk(service, "/v1/knowledge/sources", between=arrive, organization_id=str(org), limit=3)
    assert {r["id"] for r in rows} == ids and len(rows) == 7, "every source once; late ones land before the cursor"


async def test_source_filters_narrow_the_rows_and_the_total(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    ready = await _ingest(service, org, "# Pricing\n\nTiers and seats.", title="Pricing Handbook")
    failed = await _register(service, org, "will fail", title="pricing draft")
    pending = await _register(service, org, "waiting", title="Onboarding")
    async with service.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'x', pending_since = NULL "
            "WHERE id = $1",
            failed,
        )
        await conn.execute("UPDATE agent.knowledge_sources SET review_by = '2020-01-01' WHERE id = $1", pending)
    cases: list[tuple[dict[str, Any], set[UUID]]] = [
        ({"status": "failed"}, {failed}),
        ({"status": "ready"}, {ready}),
        ({"overdue": "true"}, {pending}),
        ({"title": "PRICING"}, {ready, failed}),
        ({"title": "pricing", "status": "failed"}, {failed}),
    ]
    for filters, expected in cases:
        rows = await _walk(service, "/v1/knowledge/sources", organization_id=str(org), limit=1, **filters)
        assert {r["id"] for r in rows} == {str(e) for e in expected}, f"rows under {filters}"
        page = (await _get(service, "/v1/knowledge/sources", organization_id=str(org), limit=1, **filters)).json()
        assert page["total"] == len(expected), f"the total under {filters}"
    row = next(
        r for r in await _walk(service, "/v1/knowledge/sources", organization_id=str(org)) if r["id"] == str(ready)
    )
    assert row["status"] == "ready" and row["embedding_model"] and row["chunk_count"] == row["embedded_count"] > 0
    bad = await _get(service, "/v1/knowledge/sources", organization_id=str(org), status="lost")
    assert bad.status_code == 422 and code(bad) == "invalid_request"


async def test_a_malformed_or_foreign_cursor_is_invalid_cursor(service: Service, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    for i in range(3):
        await _register(service, org, f"doc {i}")
    cursor = (await _get(service, "/v1/knowledge/sources", organization_id=str(org), limit=1)).json()["next_cursor"]
    attempts = [
        ("/v1/knowledge/sources", {"organization_id": str(org), "cursor": "garbage!"}),
        ("/v1/knowledge/sources", {"organization_id": str(other), "cursor": cursor}),
        ("/v1/knowledge/sources", {"organization_id": str(org), "status": "failed", "cursor": cursor}),
        ("/v1/receipts", {"cursor": cursor}),
        ("/v1/keys", {"cursor": cursor}),
        ("/v1/organizations", {"cursor": cursor}),
    ]
    for path, params in attempts:
        answer = await _get(service, path, **params)
        assert answer.status_code == 422, (path, params, answer.text)
        assert code(answer) == "invalid_cursor" and answer.json()["error"]["message"], (path, params)


async def test_old_limit_callers_read_the_same_first_page_under_their_key(service: Service, factory: Factory) -> None:
    org = await factory.organization("Legacy Inc")
    for i in range(3):
        await _register(service, org, f"doc {i}")
        await mint_key(service.db, organization_id=org, name=f"k{i}")
    for path, params, key in [
        ("/v1/knowledge/sources", {"organization_id": str(org), "limit": 2}, "sources"),
        ("/v1/keys", {"organization_id": str(org), "limit": 2}, "keys"),
        ("/v1/organizations", {"limit": 1}, "organizations"),
        ("/v1/receipts", {"limit": 2}, "receipts"),
    ]:
        body = (await _get(service, path, **params)).json()
        assert body[key] == body["items"], f"{path} answers its rows under `{key}` as before"
        assert len(body[key]) <= params["limit"]
    sources = (await _get(service, "/v1/knowledge/sources", organization_id=str(org), limit=2)).json()["sources"]
    newest = (await _walk(service, "/v1/knowledge/sources", organization_id=str(org), limit=1))[:2]
    assert [s["id"] for s in sources] == [s["id"] for s in newest], "the same first page, newest first"


async def test_organizations_page_with_their_counts_and_a_name_filter(service: Service, factory: Factory) -> None:
    world = await make_world(factory)
    await factory.organization("Northwind One")
    await factory.organization("northwind two")
    await _ingest(service, world.org, LONG)
    await world_memory(service.db, world, text="a fact")
    page = (await _get(service, "/v1/organizations", name="NorthWind", limit=1)).json()
    assert page["total"] == 2 and len(page["items"]) == 1 and page["next_cursor"]
    rows = await _walk(service, "/v1/organizations", limit=2)
    mine = next(r for r in rows if r["id"] == str(world.org))
    assert mine["sources_by_status"] == {"ready": 1} and mine["chunks"] > 1 and mine["memories"] == 1
    assert mine["last_ingested_at"] is not None and mine["overdue_sources"] == 0


async def test_a_sources_chunks_and_progress_over_http(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    source = await _ingest(service, org, LONG)
    chunks = await _walk(service, f"/v1/knowledge/sources/{source}/chunks", organization_id=str(org), limit=3)
    assert [c["ordinal"] for c in chunks] == list(range(len(chunks))) and len(chunks) > 3
    assert all(c["text"].strip() for c in chunks)
    progress = (await _get(service, f"/v1/knowledge/sources/{source}/progress", organization_id=str(org))).json()
    assert (progress["stage"], progress["chunks_done"], progress["chunks_total"]) == ("ready", len(chunks), len(chunks))
    waiting = await _register(service, org, "not ingested yet")
    pending = (await _get(service, f"/v1/knowledge/sources/{waiting}/progress", organization_id=str(org))).json()
    assert (pending["status"], pending["stage"], pending["chunks_done"]) == ("pending", "extracting", 0)


async def test_an_organization_key_cannot_page_another_organizations_rows(service: Service, factory: Factory) -> None:
    mine, theirs = await make_world(factory), await make_world(factory)
    key = {"Authorization": f"Bearer {(await mint_key(service.db, organization_id=mine.org)).secret}"}
    source = await _ingest(service, theirs.org, "their document")
    memory = await world_memory(service.db, theirs, text="their fact")
    await world_memory(service.db, mine, text="my fact")
    for path in ("/v1/knowledge/sources", "/v1/memory/memories", "/v1/receipts"):
        named = await _get(service, path, key, organization_id=str(theirs.org))
        assert named.status_code == 403 and code(named) == "organization_forbidden", path
    for path, expected in [
        (f"/v1/knowledge/sources/{source}/chunks", "knowledge_source_not_found"),
        (f"/v1/knowledge/sources/{source}/progress", "knowledge_source_not_found"),
        (f"/v1/memory/memories/{memory}/chain", "memory_not_found"),
    ]:
        foreign = await _get(service, path, key, organization_id=str(mine.org))
        unknown = await _get(service, path.replace(str(source), str(uuid4())).replace(str(memory), str(uuid4())), key,
                             organization_id=str(mine.org))  # fmt: skip
        assert foreign.status_code == unknown.status_code == 404, path
        assert code(foreign) == code(unknown) == expected, "another organization's id answers as an unknown one"
    own = (await _get(service, "/v1/memory/memories", key, organization_id=str(mine.org))).json()
    assert [m["text"] for m in own["items"]] == ["my fact"] and own["total"] == 1


async def test_memories_of_an_organization_or_a_person_and_a_chains_history(service: Service, factory: Factory) -> None:
    world = await make_world(factory)
    first = await world_memory(service.db, world, text="first")
    second = await world_memory(service.db, world, text="second", supersedes=first)
    pref = await world_memory(service.db, world, user=world.user, attribute="preference.tone", text="short")
    everyone = await _walk(service, "/v1/memory/memories", organization_id=str(world.org), limit=1)
    assert {m["id"] for m in everyone} == {str(second), str(pref)}, "live memories only, both scopes"
    person = (
        await _get(service, "/v1/memory/memories", organization_id=str(world.org), user_id=str(world.user))
    ).json()
    assert [m["id"] for m in person["items"]] == [str(pref)] and person["total"] == 1
    await world_memory(service.db, world, text=None, supersedes=second, forgotten=True)
    chain = (await _get(service, f"/v1/memory/memories/{first}/chain", organization_id=str(world.org))).json()
    assert [r["text"] for r in chain["revisions"]] == ["first", "second", None]
    assert chain["forgotten"] is True and chain["live_id"] is None and chain["revisions"][2]["tombstone"] is True
