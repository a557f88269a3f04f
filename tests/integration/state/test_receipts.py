"""Removal receipts (issue 22): a rerun resumes the running receipt, batches add exact counts, a finished
receipt never changes, no file name is kept, and the table stays closed to the tenant role."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from state.db import Database
from state.errors import DatabaseError, ReceiptNotFoundError
from state.receipts import (
    add_to_receipt,
    begin_receipt,
    finish_receipt,
    get_receipt,
    latest_receipt,
    page_receipts,
    receipt_object_key,
)


async def test_a_rerun_resumes_the_running_receipt_and_batches_add_up(db: Database) -> None:
    org, user = uuid.uuid4(), uuid.uuid4()
    async with db.connection() as conn:
        first = await begin_receipt(conn, "user", organization_id=org, target_id=user, requested_by="cli")
        await add_to_receipt(conn, first.id, {"agent.memories": 3}, ["org/x/abc/secret-name.pdf"])
        again = await begin_receipt(conn, "user", organization_id=org, target_id=user, requested_by="cli")
        assert (again.id, again.resumed) == (first.id, 1), "one running receipt per request; a rerun resumes it"
        await add_to_receipt(conn, first.id, {"agent.memories": 2, "objects": 0})
        done = await finish_receipt(conn, first.id)
    assert done.status == "complete" and done.finished_at is not None
    assert dict(done.counts) == {"agent.memories": 5}, "counts add up; a zero count is not recorded"
    assert done.object_keys == ("org/x/abc/",), "a receipt never keeps a file name"
    async with db.connection() as conn:
        with pytest.raises(DatabaseError):
            await add_to_receipt(conn, first.id, {"agent.memories": 1})
        assert (await latest_receipt(conn, "user", organization_id=org, target_id=user)) == done
        fresh = await begin_receipt(conn, "user", organization_id=org, target_id=user, requested_by="cli")
    assert fresh.id != done.id and fresh.resumed == 0, "after completion the same request opens a new receipt"
    assert (await get_receipt(db, done.id)) == done
    assert [r.id for r in (await page_receipts(db, organization_id=org)).items] == [fresh.id, done.id]
    with pytest.raises(ReceiptNotFoundError):
        await get_receipt(db, uuid.uuid4())


def test_an_object_key_loses_its_file_name() -> None:
    assert receipt_object_key("org/1/abcd/My Name.pdf") == "org/1/abcd/"
    assert receipt_object_key("name-only") == ""


async def test_the_receipts_are_closed_to_the_tenant_role(db: Database) -> None:
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL ROLE ac_tenant")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM agent.removal_receipts")
