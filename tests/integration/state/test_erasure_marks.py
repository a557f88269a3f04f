"""The erasure mark (issue 38): every write path refuses an organization being erased with `organization_erasing`
(and a write naming a person being erased with `person_erasing`) before it stores anything; the mark waits for
the writes in flight; a killed erasure keeps its mark and the rerun finishes under it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore
from knowledge.ingestion.registration import Document, register_many, register_upload, register_uri
from memory.erasure import erase_user
from memory.models import ToolInvocation
from memory.service import MemoryService
from memory.tools import FORGET_TOOL, REMEMBER_TOOL, MemoryTools
from state.api_keys import mint_key
from state.db import Database
from state.erasure_marks import guard_writes, mark_organization_erasing, mark_person_erasing
from state.errors import OrganizationErasingError, OrganizationNotFoundError, PersonErasingError
from state.organizations import create_organization
from state.receipts import begin_receipt
from tests.factories import Factory


async def count(db: Database, table: str, org: UUID) -> int:
    async with db.connection() as conn:
        return int(await conn.fetchval(f"SELECT count(*) FROM {table} WHERE organization_id = $1", org))


async def open_receipt(db: Database, org: UUID) -> UUID:
    async with db.connection() as conn:
        return (await begin_receipt(conn, "organization", organization_id=org, target_id=org, requested_by="test")).id


class Writer:
    """One organization's memory writer: a user, an agent definition and a run."""

    def __init__(self, db: Database, factory: Factory, org: UUID) -> None:
        self.db, self.factory, self.org = db, factory, org
        self.tools = MemoryTools(MemoryService(db))

    async def setup(self, user: UUID | None = None) -> Writer:
        self.user = user or await self.factory.user(self.org)
        self.definition = await self.factory.definition(self.org)
        self.run = await self.factory.run(self.org, definition_id=self.definition, status="running", user_id=self.user)
        return self

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        inv = ToolInvocation(
            organization_id=self.org, definition_id=self.definition, run_id=self.run, user_id=self.user
        )
        return await self.tools.call(name, inv, arguments)

    async def remember(self, attribute: str, scope: str = "organization", **more: Any) -> dict[str, Any]:
        return await self.call(REMEMBER_TOOL, {"attribute": attribute, "scope": scope, "text": attribute, **more})


async def test_every_write_path_refuses_an_organization_being_erased_and_stores_nothing(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    org, other = (await create_organization(db, "erased")).id, (await create_organization(db, "kept")).id
    writer, bystander = await Writer(db, factory, org).setup(), await Writer(db, factory, other).setup()
    remembered = await writer.remember("observation.before")
    await mark_organization_erasing(db, org, receipt_id=await open_receipt(db, org))

    writes = {
        "upload": lambda o: register_upload(db, store, organization_id=o, data=b"# a", filename="a.md"),
        "uri": lambda o: register_uri(db, store, organization_id=o, uri="https://x.test/a", data=b"# u"),
        "batch": lambda o: register_many(db, store, organization_id=o, documents=[Document(b"# b", "b.md")]),
        "key": lambda o: mint_key(db, organization_id=o, name="k"),
    }
    for name, write in writes.items():
        with pytest.raises(OrganizationErasingError) as refused:
            await write(org)
        assert refused.value.code == "organization_erasing", name
        await write(other)  # another organization writes on
    with pytest.raises(OrganizationErasingError):
        await writer.remember("observation.during")
    with pytest.raises(OrganizationErasingError):
        await writer.call(FORGET_TOOL, {"memory_id": remembered["memory_id"]})
    await bystander.remember("observation.during")

    assert not (tmp_path / "objects" / "org" / str(org)).exists(), "a refused upload put no object"
    assert (tmp_path / "objects" / "org" / str(other)).is_dir()
    assert await count(db, "agent.knowledge_sources", org) == 0
    assert await count(db, "agent.api_keys", org) == 0
    assert await count(db, "agent.memories", org) == 1, "only the memory written before the mark"


async def test_the_mark_waits_for_a_write_in_flight_and_every_later_write_sees_it(
    db: Database, factory: Factory
) -> None:
    org = (await create_organization(db, "raced")).id
    receipt = await open_receipt(db, org)
    async with db.connection() as conn:
        transaction = conn.transaction()
        await transaction.start()
        await guard_writes(conn, org)  # a write in flight: it passed the guard and holds the lock
        marking = asyncio.create_task(mark_organization_erasing(db, org, receipt_id=receipt))
        async with db.connection() as watcher:
            for _ in range(2000):  # until the mark waits on the lock (a generous deadline, not a timing)
                waiting = await watcher.fetchval(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                )
                if waiting:
                    break
                await asyncio.sleep(0.01)
            assert waiting, "the mark waits for the write in flight"
        assert not marking.done()
        await conn.execute(
            "INSERT INTO agent.api_keys (id, scope, organization_id, name, secret_sha256)"
            " VALUES ('0123456789abcdef', 'organization', $1, 'in flight', sha256('x'::bytea))",
            org,
        )
        await transaction.commit()
    assert await marking is True
    with pytest.raises(OrganizationErasingError):
        await mint_key(db, organization_id=org, name="after the mark")
    assert await count(db, "agent.api_keys", org) == 1, "the write in flight committed; the later one did not"


async def test_a_killed_erasure_keeps_its_mark_and_the_rerun_finishes_and_ends_it(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    org = await factory.organization()  # the platform's row: it stays after the erasure
    await register_upload(db, store, organization_id=org, data=b"# before", filename="before.md")
    await mark_organization_erasing(db, org, receipt_id=await open_receipt(db, org))  # what a killed run leaves
    stray = tmp_path / "objects" / "org" / str(org) / "stray.bin"
    stray.write_bytes(b"an object no row names")
    with pytest.raises(OrganizationErasingError):
        await register_upload(db, store, organization_id=org, data=b"# during", filename="during.md")

    receipt = await erase_organization(db, store, org, requested_by="rerun")

    assert receipt.status == "complete" and receipt.resumed == 1
    assert receipt.counts["agent.knowledge_sources"] == 1 and receipt.counts["objects_swept"] == 1
    assert not (tmp_path / "objects" / "org" / str(org)).exists()
    await register_upload(db, store, organization_id=org, data=b"# after", filename="after.md")  # the mark ended
    assert await count(db, "agent.knowledge_sources", org) == 1


async def test_writes_after_an_erasure_that_deleted_the_organization_are_organization_not_found(
    db: Database, tmp_path: Path
) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    org = (await create_organization(db, "gone")).id
    await erase_organization(db, store, org, requested_by="test")
    with pytest.raises(OrganizationNotFoundError):
        await register_upload(db, store, organization_id=org, data=b"# late", filename="late.md")
    with pytest.raises(OrganizationNotFoundError):
        await mint_key(db, organization_id=org, name="late")
    assert not (tmp_path / "objects" / "org" / str(org)).exists(), "no object is put for an organization that is gone"


async def test_a_person_being_erased_refuses_the_writes_that_name_them_until_the_erasure_ends(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    person, other_person = await factory.person(org), await factory.person(org)
    writer, colleague = await Writer(db, factory, org).setup(), await Writer(db, factory, org).setup()
    about = [{"kind": "crm.person", "id": str(person)}]
    noted = await colleague.remember("observation.role", subject_refs=about)
    async with db.connection() as conn:
        await mark_person_erasing(conn, org, writer.user, subject=f"crm.person:{person}", receipt_id=org)

    with pytest.raises(PersonErasingError) as refused:
        await writer.remember("preference.tone", scope="user")
    assert refused.value.code == "person_erasing"
    with pytest.raises(PersonErasingError):
        await colleague.remember("observation.budget", subject_refs=about)
    with pytest.raises(PersonErasingError):
        await colleague.call(FORGET_TOOL, {"memory_id": noted["memory_id"]})
    await colleague.remember("preference.tone", scope="user")  # another person's own memory
    await colleague.remember("observation.budget", subject_refs=[{"kind": "crm.person", "id": str(other_person)}])
    await writer.remember("observation.office")  # an organization memory about no one

    async with db.connection() as conn:
        await conn.execute("DELETE FROM agent.erasing_people")
    await erase_user(db, org, writer.user, subject=f"crm.person:{person}", requested_by="test")
    await writer.remember("preference.tone", scope="user")  # the completed erasure ended its mark
    await colleague.remember("observation.budget", subject_refs=about)


async def test_a_write_checking_while_the_erasure_deletes_the_organization_is_refused_not_let_through(
    db: Database,
) -> None:
    """The guard reads the organization and its mark in one snapshot (migration 0112).

    The race `make test` once lost (`test_api_erasure_race`: a batch answered 503 on a foreign key): a write's
    guard saw the organization's row, then the erasure's last transaction deleted the row and (cascading) its
    mark and committed, then the guard looked for the mark in a later snapshot, found none, and let the write
    through to an insert the foreign key refused. Here the erasure's side holds the marks table locked so the
    guard waits inside its check, at exactly that point, until the deletion commits.
    """
    org = (await create_organization(db, "raced at the end")).id
    await mark_organization_erasing(db, org, receipt_id=await open_receipt(db, org))
    async with db.connection() as eraser:
        ending = eraser.transaction()
        await ending.start()
        await eraser.execute("LOCK TABLE agent.erasing_organizations IN ACCESS EXCLUSIVE MODE")

        async def guarded_write() -> None:
            async with db.connection() as conn, conn.transaction():
                await guard_writes(conn, org)

        writing = asyncio.create_task(guarded_write())
        async with db.connection() as watcher:
            for _ in range(2000):  # until the guard waits on the marks table (a generous deadline, not a timing)
                waiting = await watcher.fetchval(
                    "SELECT count(*) FROM pg_locks WHERE relation = 'agent.erasing_organizations'::regclass"
                    " AND NOT granted"
                )
                if waiting:
                    break
                await asyncio.sleep(0.01)
            assert waiting, "the guard waits on the marks table"
        await eraser.execute("DELETE FROM public.organizations WHERE id = $1", org)  # the mark goes with it
        await ending.commit()
    with pytest.raises((OrganizationErasingError, OrganizationNotFoundError)):
        await writing
