"""Paged reads of memory for people (memory/pages.py).

The rules: a page holds live memories only (no superseded, forgotten or expired revision), newest first,
every one once across pages while memories arrive; an organization's list holds both scopes, a person's
only that person's user-scope memories; `total` counts the same rows; a chain reads every revision with
its tombstone and expiry, and another organization's memory is not found.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest

from memory.errors import MemoryNotFoundError
from memory.pages import memory_chain, page_memories
from state.db import Database
from state.paging import InvalidCursorError
from tests.factories import Factory
from tests.integration.memory.helpers import World, world_memory


async def _walk(db: Database, world: World, *, user: UUID | None = None, arrive: bool = False) -> list[UUID]:
    seen: list[UUID] = []
    cursor: str | None = None
    for _ in range(100):  # a cursor that never advances fails here, never hangs
        page = await page_memories(db, organization_id=world.org, user_id=user, cursor=cursor, limit=2)
        seen.extend(m.id for m in page.items)
        if arrive:
            await world_memory(db, world, attribute=f"observation.late{len(seen)}", text="late")
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
    raise AssertionError("the walk never reached a last page")


async def test_a_page_holds_live_memories_only_newest_first(db: Database, world: World) -> None:
    old = await world_memory(db, world, text="old")
    new = await world_memory(db, world, text="new", supersedes=old)
    gone = await world_memory(db, world, attribute="observation.gone", text="gone")
    await world_memory(db, world, attribute="observation.gone", text=None, supersedes=gone, forgotten=True)
    await world_memory(
        db, world, attribute="observation.past", text="expired",
        created_at=datetime.now(UTC) - timedelta(days=2), expires_at=datetime.now(UTC) - timedelta(days=1),
    )  # fmt: skip
    mine = await world_memory(db, world, user=world.user, attribute="preference.tone", text="short answers")
    theirs = await world_memory(db, world, user=world.other_user, attribute="preference.tone", text="long answers")
    later = [await world_memory(db, world, attribute=f"observation.n{i}", text=f"n{i}") for i in range(3)]
    page = await page_memories(db, organization_id=world.org)
    assert {m.id for m in page.items} == {new, mine, theirs, *later}, "live only: no old, gone or expired revision"
    assert page.total == 6
    order = [(m.created_at, m.id) for m in page.items]
    assert order == sorted(order, reverse=True)
    person = await page_memories(db, organization_id=world.org, user_id=world.user)
    assert [m.id for m in person.items] == [mine] and person.total == 1, "a person's: their user scope alone"
    assert person.items[0].as_json()["attribute"] == "preference.tone"


async def test_a_walk_shows_every_memory_once_while_memories_arrive(db: Database, world: World) -> None:
    hour_ago = datetime.now(UTC) - timedelta(hours=1)  # one instant for all: ties are ordered by id
    ids = [
        await world_memory(db, world, attribute=f"observation.m{i}", text=f"m{i}", created_at=hour_ago)
        for i in range(5)
    ]
    seen = await _walk(db, world, arrive=True)
    assert len(seen) == len(set(seen)) == 5 and set(seen) == set(ids), "every memory there at the start, once"


async def test_a_cursor_of_another_person_is_refused(db: Database, world: World) -> None:
    for i in range(3):
        await world_memory(db, world, user=world.user, attribute=f"preference.p{i}", text=f"p{i}")
    cursor = (await page_memories(db, organization_id=world.org, user_id=world.user, limit=1)).next_cursor
    with pytest.raises(InvalidCursorError):
        await page_memories(db, organization_id=world.org, user_id=world.other_user, cursor=cursor)


async def test_a_chain_reads_every_revision_its_tombstone_and_expiry(
    db: Database, world: World, factory: Factory
) -> None:
    soon = datetime.now(UTC) + timedelta(days=3)
    first = await world_memory(db, world, text="first")
    second = await world_memory(db, world, text="second", supersedes=first, expires_at=soon)
    chain = await memory_chain(db, organization_id=world.org, memory_id=first)
    assert [c.revision.id for c in chain.revisions] == [first, second] and chain.live_id == second
    assert chain.revisions[1].revision.expires_at == soon
    tomb = await world_memory(db, world, text=None, supersedes=second, forgotten=True)
    forgotten = await memory_chain(db, organization_id=world.org, memory_id=second)
    assert [c.revision.id for c in forgotten.revisions] == [first, second, tomb] and forgotten.live_id is None
    body = forgotten.as_json()
    assert body["forgotten"] is True and body["revisions"][2]["tombstone"] is True
    other = await factory.organization()
    for org, memory in ((other, first), (world.org, uuid4())):
        with pytest.raises(MemoryNotFoundError):
            await memory_chain(db, organization_id=org, memory_id=memory)
