"""A memory's subject ref is resolved against the writer's organization when it is written.

A ref naming another organization's row, a soft-deleted row, a row that does not exist, or a kind no resolver
owns is refused with `memory_subject_not_found` (the same words for each, so an id reveals nothing) and
writes nothing; the writer's own live row is accepted. The read guard stays (tests/contract/test_memory.py
writes foreign refs straight into the table to test it).
"""

from __future__ import annotations

from uuid import uuid4

import pytest

from memory.errors import MemorySubjectNotFoundError
from memory.models import MemoryCandidate
from memory.service import MemoryService
from memory.subjects import check_subject
from memory.tools import REMEMBER_TOOL, MemoryTools
from state.db import Database
from state.refs import ResourceRef
from tests.factories import Factory
from tests.integration.memory.helpers import World, chain_rows


def _about(kind: str, ident: object) -> MemoryCandidate:
    return MemoryCandidate.model_validate(
        {
            "text": "Buys through a committee",
            "attribute": "observation.buying_process",
            "scope": "organization",
            "subject_refs": [{"kind": kind, "id": str(ident)}],
        }
    )


async def test_a_subject_of_another_organization_is_refused_and_writes_nothing(
    db: Database, service: MemoryService, world: World, factory: Factory
) -> None:
    other = await factory.organization()
    foreign_company = await factory.company(other)
    foreign_person = await factory.person(other)
    for kind, ident in (("crm.company", foreign_company), ("crm.person", foreign_person)):
        with pytest.raises(MemorySubjectNotFoundError) as refused:
            await service.remember(world.inv, _about(kind, ident))
        assert refused.value.code == "memory_subject_not_found"
        assert str(ident) not in str(refused.value), "the refusal never quotes the id"
    assert await chain_rows(db, world.org) == []
    mine = await service.remember(world.inv, _about("crm.company", await factory.company(world.org)))
    assert mine.subject_refs[0]["kind"] == "crm.company"


async def test_a_deleted_or_missing_subject_is_refused_with_the_same_words(
    db: Database, service: MemoryService, world: World, factory: Factory
) -> None:
    other = await factory.organization()
    deleted = await factory.company(world.org)
    async with db.connection() as conn:
        await conn.execute("UPDATE public.crm_companies SET deleted_at = now() WHERE id = $1", deleted)
    messages = set()
    for ident in (deleted, uuid4(), await factory.company(other)):
        with pytest.raises(MemorySubjectNotFoundError) as refused:
            await service.remember(world.inv, _about("crm.company", ident))
        messages.add(str(refused.value))
    assert len(messages) == 1, "deleted, missing and foreign read the same"
    assert await chain_rows(db, world.org) == []


async def test_a_kind_no_resolver_owns_is_refused(db: Database, world: World) -> None:
    with pytest.raises(MemorySubjectNotFoundError):
        await check_subject(db, world.org, ResourceRef(kind="crm.invoice", id=str(uuid4())))


async def test_the_tool_answers_the_code_for_a_foreign_subject(
    db: Database, service: MemoryService, world: World, factory: Factory
) -> None:
    foreign = await factory.company(await factory.organization())
    args = {
        "attribute": "observation.buying_process",
        "text": "Committee",
        "scope": "organization",
        "subject_refs": [{"kind": "crm.company", "id": str(foreign)}],
    }
    with pytest.raises(MemorySubjectNotFoundError) as refused:
        await MemoryTools(service).call(REMEMBER_TOOL, world.inv, args)
    assert refused.value.code == "memory_subject_not_found"
    assert await chain_rows(db, world.org) == []
