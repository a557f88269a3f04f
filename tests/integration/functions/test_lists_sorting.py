"""Sorting, paging both ways and the memory filters (issue 47, item 1), over HTTP through the app: the API and
the console.

The rules: a list sorts by each column it names, both directions, server-side; walking next pages, then
previous pages back from the last, reads exactly the rows of one full sorted read (keyset cursors that carry
their direction); a column the list does not sort by is refused (422 `unknown_sort` in the API, a page with
that code in the console); a cursor made under another sort is refused; memories filter by a person's name or
email (any case, substring) and by a subject ref `kind:id`; the console's headers sort and its pager offers
first, previous and next.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest

from knowledge.ingestion.core import Ingestion, ingest_source
from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key
from tests.factories import Factory
from tests.integration.functions.conftest import Service, fake_embedders
from tests.integration.functions.test_console import code_of, sign_in
from tests.integration.memory.helpers import raw_memory

SUBJECTS = ["observation.kiwi", "observation.apple", "observation.mango", "observation.banana", "observation.fig",
            "observation.cherry", "observation.date"]  # fmt: skip


async def _seed(factory: Factory, service: Service) -> dict[str, Any]:
    org = await factory.organization("Sorted")
    agent = await factory.definition(org)
    ada = await factory.user(org, email="Ada.Lovelace@acme.test", display_name="Ada")
    bob = await factory.user(org, email="bob@builders.test", display_name="Robert Acme")
    about = await factory.person(org)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    made: dict[str, UUID] = {}
    for i, attribute in enumerate(SUBJECTS):  # written order differs from subject order
        made[attribute] = await raw_memory(
            service.db, org=org, definition=agent, attribute=attribute, text=f"fact {i}",
            created_at=start + timedelta(hours=(i * 5) % 7),
        )  # fmt: skip
    ada_mem = await raw_memory(service.db, org=org, definition=agent, scope="user", user=ada, attribute="preference.x")
    bob_mem = await raw_memory(service.db, org=org, definition=agent, scope="user", user=bob, attribute="preference.y")
    ref = [{"kind": "person", "id": str(about)}]
    about_mem = await raw_memory(service.db, org=org, definition=agent, refs=ref, attribute="observation.role")
    return {"org": org, "ada": ada_mem, "bob": bob_mem, "about": about, "about_mem": about_mem}


async def _api(service: Service, org: UUID, **params: str) -> httpx.Response:
    return await service.http.get(
        "/v1/memory/memories", params={"organization_id": str(org), **params}, headers=service.auth
    )


async def _walk_both_ways(service: Service, org: UUID, **params: str) -> tuple[list[str], list[str]]:
    """Every id walking next pages from the first, then every id walking previous pages back from the last."""
    forward: list[str] = []
    pages: list[dict[str, Any]] = []
    cursor = None
    for _ in range(50):
        body = (await _api(service, org, limit="3", **params, **({"cursor": cursor} if cursor else {}))).json()
        pages.append(body)
        forward += [m["id"] for m in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages[0]["prev_cursor"] is None, "the first page has no previous page"
    backward: list[str] = [m["id"] for m in pages[-1]["items"]]
    cursor = pages[-1].get("prev_cursor")
    for _ in range(50):
        if cursor is None:
            break
        body = (await _api(service, org, limit="3", **params, cursor=cursor)).json()
        assert body["next_cursor"], "a previous page always has a next one"
        backward = [m["id"] for m in body["items"]] + backward
        cursor = body.get("prev_cursor")
    return forward, backward


@pytest.mark.parametrize(
    ("sort", "direction", "key", "reverse"),
    [
        ("written", "desc", "created_at", True),
        ("written", "asc", "created_at", False),
        ("subject", "asc", "subject_key", False),
        ("subject", "desc", "subject_key", True),
    ],
)
async def test_the_api_sorts_and_pages_both_ways_exactly_as_one_full_read(
    service: Service, factory: Factory, sort: str, direction: str, key: str, reverse: bool
) -> None:
    world = await _seed(factory, service)
    full = (await _api(service, world["org"], sort=sort, dir=direction, limit="1000")).json()
    rows = full["items"]
    assert full["total"] == len(rows) == 10
    assert [(m[key], m["id"]) for m in rows] == sorted(((m[key], m["id"]) for m in rows), reverse=reverse)
    forward, backward = await _walk_both_ways(service, world["org"], sort=sort, dir=direction)
    assert forward == [m["id"] for m in rows], "next pages read the full sorted list, once each"
    assert backward == forward, "previous pages read it back exactly"


async def test_an_unknown_sort_and_a_cursor_of_another_sort_are_refused(service: Service, factory: Factory) -> None:
    world = await _seed(factory, service)
    for params in ({"sort": "text"}, {"sort": "written", "dir": "sideways"}):
        answer = await _api(service, world["org"], **params)
        assert (answer.status_code, answer.json()["error"]["code"]) == (422, "unknown_sort"), params
    by_subject = (await _api(service, world["org"], sort="subject", limit="2")).json()
    for sort, direction in (("written", "desc"), ("subject", "desc")):  # the same shape, another direction too
        other = await _api(service, world["org"], sort=sort, dir=direction, cursor=by_subject["next_cursor"])
        assert (other.status_code, other.json()["error"]["code"]) == (422, "invalid_cursor"), (sort, direction)
    old = (await _api(service, world["org"], limit="2")).json()  # the default order: no sort, as before
    assert (await _api(service, world["org"], sort="written", dir="desc", cursor=old["next_cursor"])).status_code == 200


async def test_memories_filter_by_a_persons_name_or_email_and_by_subject(service: Service, factory: Factory) -> None:
    world = await _seed(factory, service)

    async def ids(**params: str) -> set[str]:
        body = (await _api(service, world["org"], **params)).json()
        assert body["total"] == len(body["items"]), params
        return {m["id"] for m in body["items"]}

    assert await ids(person="ada") == {str(world["ada"])}, "a name, any case"
    assert await ids(person="LOVELACE@ACME") == {str(world["ada"])}, "part of an email, any case"
    assert await ids(person="acme") == {str(world["ada"]), str(world["bob"])}, "Ada's email and Robert Acme's name"
    assert await ids(person="nobody-here") == set()
    assert await ids(subject=f"person:{world['about']}") == {str(world["about_mem"])}
    bad = await _api(service, world["org"], subject="no-colon")
    assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_filter")


def _links(page: httpx.Response) -> dict[str, str]:
    return {
        rel: html.unescape(href) for rel, href in re.findall(r'<a rel="(first|prev|next)" href="([^"]+)"', page.text)
    }


def _memory_ids(page: httpx.Response) -> list[str]:
    return re.findall(r'/memories/([0-9a-f-]{36})">revisions', page.text)


async def test_the_console_sorts_by_its_headers_and_pages_first_previous_next(
    service: Service, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.console import memories as console_memories
    from functions.console._session import COOKIE

    world = await _seed(factory, service)
    _, console = await sign_in(service.http, (await mint_key(service.db, organization_id=world["org"])).secret)
    assert console is not None
    base = f"/console/orgs/{world['org']}/memories"
    full = (await _api(service, world["org"], sort="subject", dir="asc", limit="1000")).json()["items"]
    monkeypatch.setattr(console_memories, "PAGE_SIZE", 4)

    async def follow(href: str) -> httpx.Response:
        return await console.http.get(base + href, headers={"Cookie": f"{COOKIE}={console.cookie}"})

    first = await console.get(base)
    header = re.search(r'<a class="sort" href="([^"]+)">Subject', first.text)
    assert header is not None, "the Subject header is a link that sorts"
    page = await follow(html.unescape(header.group(1)))
    assert "sort=subject" in str(page.request.url) and 'aria-sort="ascending"' in page.text
    seen = _memory_ids(page)
    assert "prev" not in _links(page) and "first" not in _links(page)
    while "next" in _links(page):
        page = await follow(_links(page)["next"])
        seen += _memory_ids(page)
    assert seen == [m["id"] for m in full], "the console's next pages read the sorted list exactly"
    back = _memory_ids(page)
    while "prev" in _links(page):
        assert "first" in _links(page)
        page = await follow(_links(page)["prev"])
        back = _memory_ids(page) + back
    assert back == seen, "previous pages read it back exactly"
    last = await follow(_links(await follow(_links(await follow(header.group(1)))["next"]))["first"])
    assert _memory_ids(last) == seen[:4], "the first page link reads the first page under the same sort"
    refused = await console.get(base, sort="text")
    assert (refused.status_code, code_of(refused)) == (422, "unknown_sort")
    filtered = await console.get(base, person="ADA")
    assert _memory_ids(filtered) == [str(world["ada"])]
    assert _memory_ids(await console.get(base, subject=f"person:{world['about']}")) == [str(world["about_mem"])]


async def _walk_api(service: Service, path: str, params: dict[str, str]) -> tuple[list[str], list[str]]:
    """Ids of a list walked by next cursors, then walked back by previous cursors from the last page."""
    pages: list[dict[str, Any]] = []
    cursor = None
    for _ in range(50):
        extra = {"cursor": cursor} if cursor else {}
        answer = await service.http.get(path, params={**params, "limit": "2", **extra}, headers=service.auth)
        assert answer.status_code == 200, answer.text
        pages.append(answer.json())
        cursor = pages[-1]["next_cursor"]
        if cursor is None:
            break
    forward = [r["id"] for p in pages for r in p["items"]]
    back = [r["id"] for r in pages[-1]["items"]]
    cursor = pages[-1]["prev_cursor"]
    while cursor is not None:
        body = (
            await service.http.get(path, params={**params, "limit": "2", "cursor": cursor}, headers=service.auth)
        ).json()
        back = [r["id"] for r in body["items"]] + back
        cursor = body["prev_cursor"]
    return forward, back


async def test_sources_sort_by_title_and_created_and_chunks_page_both_ways(service: Service, factory: Factory) -> None:

    org = await factory.organization("Shelves")
    store = service.services.object_store
    for name in ("pear", "Apple", "quince", "banana", "cherry"):
        await register_upload(service.db, store, organization_id=org, data=f"# {name}\n\n{name}".encode(),
                              filename=f"{name}.md")  # fmt: skip
    long = "\n\n".join(f"## Part {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(9))
    manual = await register_upload(service.db, store, organization_id=org, data=long.encode(), filename="manual.md")
    await ingest_source(Ingestion(service.db, store, fake_embedders().get), manual.source_id)
    path = "/v1/knowledge/sources"
    orders = [("title", "asc", "title", False), ("title", "desc", "title", True),
              ("created", "asc", "created_at", False), ("created", "desc", "created_at", True)]  # fmt: skip
    for sort, direction, key, reverse in orders:
        params = {"organization_id": str(org), "sort": sort, "dir": direction}
        full = (await service.http.get(path, params={**params, "limit": "1000"}, headers=service.auth)).json()["items"]
        assert [(r[key], r["id"]) for r in full] == sorted(((r[key], r["id"]) for r in full), reverse=reverse)
        forward, back = await _walk_api(service, path, params)
        assert forward == back == [r["id"] for r in full], (sort, direction)
    refused = await service.http.get(path, params={"organization_id": str(org), "sort": "owner"}, headers=service.auth)
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "unknown_sort")
    chunks = f"/v1/knowledge/sources/{manual.source_id}/chunks"
    params = {"organization_id": str(org)}
    full = (await service.http.get(chunks, params={**params, "limit": "1000"}, headers=service.auth)).json()["items"]
    assert len(full) > 4
    forward, back = await _walk_api(service, chunks, params)
    assert forward == back == [c["id"] for c in full], "chunks page forward and back in ordinal order"


async def test_organizations_sort_by_name_and_created_and_page_both_ways(service: Service, factory: Factory) -> None:
    for name in ("Zeta lists", "alpha lists", "Mango lists", "beta lists", "Kilo lists"):
        await factory.organization(name)
    orders = [("name", "asc", "name", False), ("name", "desc", "name", True),
              ("created", "asc", "created_at", False), ("created", "desc", "created_at", True)]  # fmt: skip
    for sort, direction, key, reverse in orders:
        params = {"name": "lists", "sort": sort, "dir": direction}
        answer = await service.http.get("/v1/organizations", params={**params, "limit": "1000"}, headers=service.auth)
        full = answer.json()["items"]
        assert len(full) == 5
        assert [(o[key], o["id"]) for o in full] == sorted(((o[key], o["id"]) for o in full), reverse=reverse)
        forward, back = await _walk_api(service, "/v1/organizations", params)
        assert forward == back == [o["id"] for o in full], (sort, direction)
    refused = await service.http.get("/v1/organizations", params={"sort": "chunks"}, headers=service.auth)
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "unknown_sort")


async def test_receipts_page_both_ways_in_either_order(service: Service, factory: Factory) -> None:
    from state.receipts import begin_receipt, finish_receipt

    org = await factory.organization("Receipted")
    async with service.db.connection() as conn:
        for _ in range(5):
            receipt = await begin_receipt(conn, "user", organization_id=org, target_id=uuid4(), requested_by="test")
            await finish_receipt(conn, receipt.id)
    for direction in ("desc", "asc"):
        params = {"organization_id": str(org), "sort": "started", "dir": direction}
        answer = await service.http.get("/v1/receipts", params={**params, "limit": "1000"}, headers=service.auth)
        full = answer.json()["items"]
        assert len(full) == 5
        keys = [(r["started_at"], r["id"]) for r in full]
        assert keys == sorted(keys, reverse=direction == "desc")
        forward, back = await _walk_api(service, "/v1/receipts", params)
        assert forward == back == [r["id"] for r in full], direction
