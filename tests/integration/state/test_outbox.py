"""The event outbox (state.outbox, migration 0089): dedupe while waiting, leases, backoff, erasure."""

from __future__ import annotations

from uuid import UUID

from state import outbox
from state.db import Database
from state.outbox import OutboxEvent


async def _enqueue(db: Database, *events: OutboxEvent) -> list[UUID]:
    async with db.connection() as conn, conn.transaction():
        return await outbox.enqueue(conn, events)


async def test_the_same_dedupe_key_is_one_row_while_it_waits_and_a_new_one_once_sent(db: Database) -> None:
    first = await _enqueue(db, OutboxEvent("e", {"a": 1}, dedupe_key="retry:x:1"))
    again = await _enqueue(db, OutboxEvent("e", {"a": 1}, dedupe_key="retry:x:1"))
    assert first == again
    await outbox.mark_sent(db, first, by="inngest")
    later = await _enqueue(db, OutboxEvent("e", {"a": 1}, dedupe_key="retry:x:1"))
    assert later != first


async def test_a_claimed_row_is_not_claimed_again_until_its_lease_ends(db: Database) -> None:
    (row,) = await _enqueue(db, OutboxEvent("e", {}))
    (claimed,) = await outbox.claim(db, limit=10, lease_s=60, ids=[row])
    assert claimed.id == row
    assert await outbox.claim(db, limit=10, lease_s=60, ids=[row]) == [], "a second worker skips a held row"
    (short,) = await _enqueue(db, OutboxEvent("e", {}))
    await outbox.claim(db, limit=10, lease_s=0, ids=[short])
    assert [e.id for e in await outbox.claim(db, limit=10, lease_s=60, ids=[short])] == [short], (
        "a lease that ended (a killed worker) is taken again"
    )


async def test_a_failed_send_waits_its_backoff_and_keeps_its_error(db: Database) -> None:
    (row,) = await _enqueue(db, OutboxEvent("e", {}))
    await outbox.claim(db, limit=1, lease_s=60, ids=[row])
    await outbox.mark_failed(db, [row], error="ConnectionError: refused", retry_in_s=3600)
    assert await outbox.claim(db, limit=10, lease_s=60, ids=[row]) == [], "not due before its backoff"
    (entry,) = await outbox.rows(db, [row])
    assert (entry.attempts, entry.last_error, entry.sent_at) == (1, "ConnectionError: refused", None)
    waiting = await outbox.backlog(db)
    assert waiting.waiting == 1 and waiting.last_error == "ConnectionError: refused"


async def test_the_drainer_leaves_a_fresh_row_to_the_request_that_wrote_it(db: Database) -> None:
    (row,) = await _enqueue(db, OutboxEvent("e", {}))
    assert await outbox.claim(db, limit=10, lease_s=60, min_age_s=3600) == []
    assert [e.id for e in await outbox.claim(db, limit=10, lease_s=60, min_age_s=0)] == [row]


async def test_sent_rows_are_pruned_and_waiting_ones_kept(db: Database) -> None:
    sent, waiting = await _enqueue(db, OutboxEvent("e", {}), OutboxEvent("e", {}))
    await outbox.mark_sent(db, [sent], by="inngest")
    assert await outbox.prune_sent(db, older_than_s=0) == 1
    assert {e.id for e in await outbox.rows(db, [sent, waiting])} == {waiting}


async def test_an_organization_erasure_deletes_its_outbox_rows_only(db: Database) -> None:
    from state.erasure import erase_organization_state
    from state.receipts import begin_receipt

    async with db.connection() as conn:
        org = await conn.fetchval("INSERT INTO public.organizations (name) VALUES ('gone') RETURNING id")
        other = await conn.fetchval("INSERT INTO public.organizations (name) VALUES ('kept') RETURNING id")
        receipt = await begin_receipt(conn, "organization", organization_id=org, target_id=org, requested_by="t")
    mine, theirs, platform = await _enqueue(
        db, OutboxEvent("e", {}, org), OutboxEvent("e", {}, other), OutboxEvent("e")
    )
    await erase_organization_state(db, org, receipt_id=receipt.id)
    assert {e.id for e in await outbox.rows(db, [mine, theirs, platform])} == {theirs, platform}
